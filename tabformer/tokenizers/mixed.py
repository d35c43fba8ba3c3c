"""Mixed inputs: one DataFrame of text, image and table columns as one token sequence.

:class:`MixedTokenizer` routes columns to the text, image and table tokenizers the way scikit-learn's
``ColumnTransformer`` routes them to transformers, and :class:`~tabformer.nn.embedders.mixed.MixedEmbedder`
concatenates their token sequences, so that in the encoder a description's words, a photo's patches and the
price cell attend to each other (early fusion).

Layout of one row (``d`` = ``d_model``)::

    [CLS] | words of text column 1 | words of text column 2 | patches of image column 1 | cells

- every text and image column is a *segment* of its own, with a learned column
  embedding added to all its tokens (table cells already carry per-column identities);
- positions restart in every text segment (learned, one table per text tokenizer), and
  image patches keep the 2-D grid positions of their embedder, so "the 3rd word of
  the title" means the same in every row whatever the other columns hold;
- several columns of one kind share one tokenizer (one vocabulary, one patch
  embedder), fitted on the values of all those columns;
- a missing text (None/NaN) or a missing image (None) masks every token of that segment in that row: the
  encoder never sees made-up content (a row with no text, image or table input at all warns). Missing
  *cells* of table columns keep the table tokenizer's learned per-column missing tokens.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import check_is_fitted

from ..nn.embedders.mixed import SEPARATOR, segment_arrays
from ._column_hints import listed_columns, warn_odd_columns
from ._columns import UntrainedMissingWarning, warn_once, warn_rows_without_input
from ._labels import column_list
from ._mixed_cells import check_frame, column_values, fit_on_present_cells, missing_placeholder, with_column_context
from ._mixed_templates import route_pairs, routes_for, template, templates_for
from .base import TOKENIZERS, BaseTokenizer, fit_with_target, register_tokenizer
from .detect import infer_column_kinds

__all__ = ["MixedTokenizer"]


@register_tokenizer("mixed")
class MixedTokenizer(_BaseComposition, BaseTokenizer):
    """Route DataFrame columns to text, image and table tokenizers; one sequence out.

    Parameters
    ----------
    transformers : list of (name, tokenizer, columns) or None, default=None
        ColumnTransformer-style routing. ``tokenizer`` is an unfitted tabformer tokenizer or a
        name such as ``"wordpiece"`` (``set_params(<name>__vocab_size=...)`` makes it that tokenizer),
        ``columns`` a list of column names. Every column of ``X`` must be routed exactly once.
        ``None`` detects each column's kind (see :mod:`tabformer.tokenizers.detect`) and routes
        text columns to ``text``, image columns to ``image`` and the rest to ``table``.
    text, image, table : tokenizer, str or None, default=None
        Templates for auto-detected columns (cloned at ``fit``), or a tokenizer's name
        such as ``"wordpiece"``; ``None`` means
        ``WordPieceTokenizer()``, ``PatchTokenizer()``, ``TabularTokenizer()``. Their
        parameters route as ``image__patch_size=8`` (``tokenizer__image__patch_size``
        on an estimator).
    max_categories : int, default=100
        Auto-detection: a string column with more distinct values is text.
    segment_dropout : float, default=0.0
        Training only: each segment (a text or image column, or the whole table) of
        each row is masked out with this probability, as if that input were missing
        (modality dropout, Neverova et al., 2015). It keeps the encoder from leaning on
        the easiest modality alone and teaches it the rows with missing inputs it will
        meet at predict time. A row always keeps at least one segment.

    Attributes
    ----------
    column_kinds_ : dict of str to str
        Kind used for each column: ``"text"``, ``"image"``, ``"categorical"``, ``"numeric"``
        or ``"datetime"`` (a table column); print it to see what ``"auto"`` chose.
    transformers_ : list of (name, fitted tokenizer, columns)
        The routing actually used, each tokenizer fitted on its columns' values.
    segments_ : list of (key, name, column or None)
        The token segments in sequence order; ``column`` is None for the table
        segment, which holds one token per table column.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit``.
    n_features_in_ : int
        Number of columns seen in ``fit``.
    had_missing_ : dict of str to bool
        Whether each text and image column missed a cell at fit. ``transform`` warns
        (``UntrainedMissingWarning``) for one that had none and misses cells now, unless
        ``segment_dropout`` trained rows without an input.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tabformer.tokenizers import WordPieceTokenizer
    >>> X = pd.DataFrame({
    ...     "title": ["red wool hat", "blue cotton shirt", None, "green silk scarf"],
    ...     "photo": [np.zeros((8, 8), np.uint8)] * 4,
    ...     "brand": ["a", "b", "a", "c"],
    ...     "price": [10.0, 25.0, 7.5, None]})
    >>> tok = MixedTokenizer(text=WordPieceTokenizer(vocab_size=40, min_frequency=1)).fit(X)
    >>> tok.column_kinds_
    {'title': 'text', 'photo': 'image', 'brand': 'categorical', 'price': 'numeric'}
    >>> tok.transform(X)["text:title/present"].tolist()
    [True, True, False, True]
    """

    default_positions = None  # text segments get their own positions in the embedder
    kind = "mixed"

    @staticmethod
    def segment_kind(tokenizer) -> str:
        """``"text"`` or ``"image"`` for tokenizers that read one column at a time, else ``"table"``.

        Parameters
        ----------
        tokenizer : BaseTokenizer
            A sub-tokenizer; its ``kind`` is read.

        Returns
        -------
        kind : {"text", "image", "table"}
        """
        return tokenizer.kind if tokenizer.kind in ("text", "image") else "table"

    def __init__(self, transformers=None, *, text=None, image=None, table=None, max_categories=100, segment_dropout=0.0):
        self.transformers = transformers
        self.text = text
        self.image = image
        self.table = table
        self.max_categories = max_categories
        self.segment_dropout = segment_dropout

    # ------------------------------------------------------------- params
    @property
    def _transformers(self):
        return route_pairs(self.transformers)

    @_transformers.setter
    def _transformers(self, value):
        self.transformers = [(name, tokenizer, columns) for (name, tokenizer), (_, _, columns) in zip(value, self.transformers)]

    def get_params(self, deep=True):
        """sklearn ``get_params``; with ``transformers``, also each sub-tokenizer's as ``<name>__<param>``."""
        if self.transformers is None:
            return BaseTokenizer.get_params(self, deep=deep)
        return self._get_params("_transformers", deep=deep)

    def _check_params(self):
        if not isinstance(self.segment_dropout, numbers.Real) or not 0 <= self.segment_dropout < 1:
            raise ValueError(f"segment_dropout must be in [0, 1), got {self.segment_dropout!r}")

    def set_params(self, **params):
        """sklearn ``set_params``; ``<name>__*`` (``text__*``... without ``transformers``) on a named tokenizer sets it."""
        if "transformers" in params:  # first, so that nested settings reach the new routing
            self.transformers = params.pop("transformers")
        if self.transformers is None:  # ``text__vocab_size=...`` on a None or named template configures that tokenizer
            return BaseTokenizer.set_params(self, **templates_for(self, params))
        self.transformers = routes_for(self.transformers, params)  # ``("words", "wordpiece", ...)``: its tokenizer now
        return self._set_params("_transformers", **params)

    # ------------------------------------------------------------- routing
    def _routing(self, frame: pd.DataFrame) -> list:
        """``[(name, unfitted tokenizer clone, columns)]`` for ``frame``."""
        if self.transformers is None:
            if not isinstance(self.max_categories, numbers.Integral) or self.max_categories < 1:
                raise ValueError(f"max_categories must be a positive int, got {self.max_categories!r}")
            forced = {}
            if getattr(self.table, "kind", None) == "table" and hasattr(self.table, "categorical_columns"):
                # Columns the table template names are table columns, whatever detection would say.
                for kind in ("categorical", "numeric"):
                    listed = column_list(f"table__{kind}_columns", getattr(self.table, f"{kind}_columns"))
                    forced.update({c: kind for c in listed if c in frame.columns})
            kinds = infer_column_kinds(frame.drop(columns=list(forced)), self.max_categories)
            kinds = {c: forced[c] if c in forced else kinds[c] for c in frame.columns}
            by_kind = {kind: [c for c, k in kinds.items() if k == kind] for kind in ("text", "image", "categorical", "numeric")}
            routing = []
            if by_kind["text"]:
                routing.append(("text", template("text", self.text), by_kind["text"]))
            if by_kind["image"]:
                routing.append(("image", template("image", self.image), by_kind["image"]))
            table_columns = [c for c in frame.columns if kinds[c] in ("categorical", "numeric", "datetime")]
            if table_columns:
                table = template("table", self.table)
                if table.kind == "table" and hasattr(table, "categorical_columns"):
                    table.set_params(
                        categorical_columns=[c for c in table_columns if kinds[c] == "categorical"],
                        numeric_columns=[c for c in table_columns if kinds[c] == "numeric"],
                    )
                routing.append(("table", table, table_columns))
            return routing

        if not isinstance(self.transformers, (list, tuple)) or not self.transformers:
            raise ValueError("transformers must be a non-empty list of (name, tokenizer, columns) or None")
        routing, seen, names = [], {}, set()
        for entry in self.transformers:
            if not (isinstance(entry, tuple) and len(entry) == 3):
                raise ValueError(f"each transformer must be a (name, tokenizer, columns) tuple, got {entry!r}")
            name, tokenizer, columns = entry
            if not isinstance(name, str) or not name or SEPARATOR in name or ":" in name or "__" in name:
                raise ValueError(f"transformer name {name!r} must be a non-empty str without '/', ':' or '__'")
            if name in names:
                raise ValueError(f"transformer name {name!r} is used twice")
            names.add(name)
            if isinstance(tokenizer, str):
                if tokenizer not in TOKENIZERS:
                    raise ValueError(f"transformer {name!r}: unknown tokenizer {tokenizer!r}; choose one of {sorted(TOKENIZERS)}")
                tokenizer = TOKENIZERS[tokenizer]()
            elif not isinstance(tokenizer, BaseTokenizer):
                raise TypeError(
                    f"transformer {name!r}: expected a tabformer tokenizer or its name, got {type(tokenizer).__name__}"
                )
            columns = [columns] if isinstance(columns, str) else list(columns)
            if not columns:
                raise ValueError(f"transformer {name!r} has no columns")
            absent = [c for c in columns if c not in frame.columns]
            if absent:
                raise ValueError(
                    f"transformer {name!r} names column(s) {absent} that X does not have; X has {list(frame.columns)}"
                )
            for column in columns:
                if column in seen:
                    raise ValueError(f"column {column!r} is routed twice: to {seen[column]!r} and to {name!r}")
                seen[column] = name
            routing.append((name, clone(tokenizer), columns))
        unrouted = [c for c in frame.columns if c not in seen]
        if unrouted:
            raise ValueError(
                f"column(s) {unrouted} are not routed to any tokenizer; add them to `transformers` or drop them from X"
            )
        return routing

    # ----------------------------------------------------------------- fit
    def fit(self, X, y=None, sample_weight=None):
        """Detect or check the routing, then fit every sub-tokenizer on its columns.

        Parameters
        ----------
        X : DataFrame of shape (n_samples, n_columns)
            Training frame with str column names; missing text/image cells are None/NaN.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Encoded targets, handed to the table tokenizer (its piecewise bins are chosen on them).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, handed to the table tokenizer with ``y``.

        Returns
        -------
        self : MixedTokenizer
            The fitted tokenizer.

        Raises
        ------
        TypeError
            If ``X`` is not a DataFrame, or ``transformers`` holds something other than a tokenizer.
        ValueError
            If a setting or the routing is invalid (a column unrouted or routed twice), a
            column's kind cannot be detected, or a sub-tokenizer rejects its columns
            (the error then names them).
        """
        self._check_params()
        frame = self._check_frame(X)
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        self.n_features_in_ = frame.shape[1]
        self.transformers_, self.segments_, self.column_kinds_, self.had_missing_ = [], [], {}, {}
        for name, tokenizer, columns in self._routing(frame):
            kind = self.segment_kind(tokenizer)
            if kind == "table":
                fit_with_target(tokenizer, frame[columns], y, sample_weight)
                self.segments_.append((name, name, None))
                categorical = set(getattr(tokenizer, "categorical_columns_", []))
                dates = set(getattr(tokenizer, "datetime_parts_", {}))  # in neither list: the table expands them into numbers
                self.column_kinds_.update(
                    {c: "datetime" if c in dates else "categorical" if c in categorical else "numeric" for c in columns}
                )
            else:
                present = fit_on_present_cells(tokenizer, frame, columns, kind)
                for column in columns:
                    self.segments_.append((f"{name}:{column}", name, column))
                    self.column_kinds_[column] = kind
                    self.had_missing_[column] = present[column] < len(frame)
            self.transformers_.append((name, tokenizer, columns))
        self.column_kinds_ = {c: self.column_kinds_[c] for c in frame.columns}
        # Detection hands the table explicit lists, silencing its own warnings (a routed table warned itself).
        told = frame.columns if self.transformers is not None else listed_columns(self.table)
        warn_odd_columns(frame, self.column_kinds_, told=told)
        return self

    _check_frame = staticmethod(check_frame)  # the estimators route a frame before fitting a tokenizer

    def transform(self, X) -> dict:
        """Tokenize every segment.

        Parameters
        ----------
        X : DataFrame of shape (n_samples, n_columns)
            The columns seen in ``fit``, in any order.

        Returns
        -------
        batch : dict of ndarray keyed ``"<segment>/<array>"``
            Each sub-tokenizer's arrays for its segment (first dimension ``n_samples``), plus
            ``"<segment>/present"`` (bool, (n_samples,)) for text and image segments, False where missing.

        Raises
        ------
        ValueError
            If ``X`` does not have the fitted columns, or a sub-tokenizer rejects a column.
        """
        check_is_fitted(self, "transformers_")
        frame = self._check_frame(X)
        missing = [c for c in self.feature_names_in_ if c not in frame.columns]
        extra = [c for c in frame.columns if c not in set(self.feature_names_in_)]
        if missing or extra:
            raise ValueError(
                f"X does not have the columns seen in fit: missing {missing}, unexpected {extra}. "
                f"Fitted columns: {list(self.feature_names_in_)}"
            )
        batch, segments, untrained = {}, iter(self.segments_), []
        for name, tokenizer, columns in self.transformers_:
            kind = self.segment_kind(tokenizer)
            if kind == "table":
                key, _, _ = next(segments)
                out = tokenizer.transform(frame[columns])
                batch.update({f"{key}{SEPARATOR}{k}": v for k, v in out.items()})
                continue
            for column in columns:
                key, _, _ = next(segments)
                values = column_values(frame, column, kind)
                present = np.array([v is not None for v in values])
                values = [v if v is not None else missing_placeholder(tokenizer, kind) for v in values]
                out = with_column_context([column], lambda t=tokenizer, v=values: t.transform(v), name)
                batch.update({f"{key}{SEPARATOR}{k}": v for k, v in out.items()})
                batch[f"{key}{SEPARATOR}present"] = present
                if not present.all() and getattr(self, "had_missing_", {}).get(column) is False:
                    untrained.append(column)
        if untrained and not float(self.segment_dropout):  # once per input, not per chunk of a chunked predict
            warn_once(
                f"text/image column(s) {untrained} miss cells now but missed none in the rows fit read: those rows are read "
                "without that input, as no training row was. Train on rows that miss it too, or set segment_dropout "
                "(tokenizer__segment_dropout=0.1 on an estimator) to train rows without an input",
                UntrainedMissingWarning,
            )
        if not any(self.segment_kind(tokenizer) == "table" for _, tokenizer, _ in self.transformers_):
            warn_rows_without_input([batch[key] for key in batch if key.endswith(f"{SEPARATOR}present")])
        return batch

    # --------------------------------------------------------------- device
    def embedder_spec(self) -> dict:
        """Describe the :class:`~tabformer.nn.embedders.mixed.MixedEmbedder` over every sub-tokenizer's embedder.

        Returns
        -------
        spec : dict
            ``{"kind": "mixed", "segments", "kinds", "embedders": {name: sub-spec}, "max_lengths",
            "segment_dropout"}``.
        """
        check_is_fitted(self, "transformers_")
        embedders, max_lengths, kinds = {}, {}, {}
        for name, tokenizer, _ in self.transformers_:
            embedders[name] = tokenizer.embedder_spec()
            kinds[name] = self.segment_kind(tokenizer)
            if kinds[name] == "text":
                max_lengths[name] = int(tokenizer.max_length) + len(getattr(tokenizer, "extra_token_names", ()))
        segments = [list(segment) for segment in self.segments_]
        return {
            "kind": "mixed",
            "segments": segments,
            "kinds": kinds,
            "embedders": embedders,
            "max_lengths": max_lengths,
            "segment_dropout": float(self.segment_dropout),
        }

    def describe_tokens(self, batch: dict) -> list:
        """For each row, ``[(position, column, label), ...]`` of its real tokens.

        Parameters
        ----------
        batch : dict of ndarray
            Output of :meth:`transform` for ``n`` rows.

        Returns
        -------
        tokens : list of n lists of (int, str, str)
            ``(position, column, label)``: ``position`` indexes the encoder's token sequence (CLS excluded), as laid
            out in eval mode; ``label`` is a sub-word, a patch ``"r{i}c{j}"`` or a table token's name. Masked segments: left out.
        """
        check_is_fitted(self, "transformers_")
        tokenizers = {name: tokenizer for name, tokenizer, _ in self.transformers_}
        rows = [[] for _ in range(len(next(iter(batch.values()))))]
        offset = 0
        for key, name, column in self.segments_:
            tokenizer = tokenizers[name]
            arrays = segment_arrays(batch, key)
            kind = self.segment_kind(tokenizer)
            if kind == "table":
                names = list(tokenizer.token_names() if hasattr(tokenizer, "token_names") else tokenizer.get_feature_names_out())
                columns = tokenizer.token_columns() if hasattr(tokenizer, "token_columns") else names  # a date part: its column
                for row in rows:
                    row.extend((offset + j, column, label) for j, (column, label) in enumerate(zip(columns, names)))
                offset += len(names)
                continue
            present = np.asarray(arrays["present"], dtype=bool)
            if kind == "text":
                ids, mask = np.asarray(arrays["input_ids"]), np.asarray(arrays["attention_mask"], dtype=bool)
                extra = list(getattr(tokenizer, "extra_token_names", ()))  # tokens its embedder puts before the words
                for i, row in enumerate(rows):
                    if present[i]:
                        positions = np.flatnonzero(mask[i])
                        labels = extra + list(tokenizer.convert_ids_to_tokens(ids[i][positions]))
                        where = [*range(len(extra)), *(len(extra) + positions)]
                        row.extend((offset + int(p), column, label) for p, label in zip(where, labels))
                offset += len(extra) + ids.shape[1]
            else:
                labels = tokenizer.get_feature_names_out()
                for i, row in enumerate(rows):
                    if present[i]:
                        row.extend((offset + j, column, str(label)) for j, label in enumerate(labels))
                offset += len(labels)
        return rows

    def get_feature_names_out(self, input_features=None):
        """The input column names seen in ``fit``."""
        check_is_fitted(self, "transformers_")
        return np.asarray(self.feature_names_in_, dtype=object)

    def __sklearn_tags__(self):
        """The base tokenizer's tags, for DataFrame (not 2-D array) input."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags
