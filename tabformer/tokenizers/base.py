"""What every tokenizer is: a host half (sklearn ``fit``/``transform`` to numpy) and a
device half (``build_embedder(d_model)`` returning an ``nn.Module``).

``transform`` returns a dict of numpy arrays, one row per sample, computed once per fit;
the embedder's ``forward(**batch)`` returns ``(tokens (B, T, D), mask (B, T) bool)`` with
``True`` marking real tokens.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import _safe_indexing

from ..nn.embedders import build_embedder

# Special ids shared by every discrete tokenizer (the BERT layout a vocab.txt-loaded
# WordPiece vocabulary remaps to). Tabular categorical columns use their own small layout,
# documented in tabular.py, because each column has a separate embedding table.
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL_TOKENS = {"[PAD]": PAD, "[UNK]": UNK, "[CLS]": CLS, "[SEP]": SEP, "[MASK]": MASK}

#: names accepted by the estimators' ``tokenizer`` parameter -> tokenizer class
TOKENIZERS: dict = {}


def register_tokenizer(*names):
    """Class decorator: ``tokenizer=name`` on an estimator builds this tokenizer class.

    Parameters
    ----------
    *names : str
        Every name the class answers to (e.g. ``"wordpiece"`` and ``"text"``).

    Returns
    -------
    decorate : callable
        Registers the class in :data:`TOKENIZERS` under every name and returns it unchanged.
    """

    def decorate(cls):
        for name in names:
            TOKENIZERS[name] = cls
        return cls

    return decorate


#: the class name of the estimator tokenizing its input, while it does (see :func:`transform_for`)
_CALLER: ContextVar = ContextVar("tabformer_tokenizing_for", default=None)


def transform_for(owner: str, tokenizer, X):
    """``tokenizer.transform(X)`` for the estimator ``owner``: input errors name it as what expected the input.

    A fitted model's tokenizer checks predict's input (its number of columns, its feature names); its messages
    named the tokenizer ("X has 4 features, but TabularTokenizer is expecting 3"), a class the user never called.

    Parameters
    ----------
    owner : str
        The estimator's class name, e.g. ``"TabFormerClassifier"``.
    tokenizer : fitted tokenizer
    X : its input

    Returns
    -------
    dict of ndarray
        What ``tokenizer.transform(X)`` returns.
    """
    token = _CALLER.set(owner)
    try:
        return tokenizer.transform(X)
    finally:
        _CALLER.reset(token)


def expecting_name(default: str) -> str:
    """The class an input error says expected the input: the estimator tokenizing (:func:`transform_for`), else ``default``.

    Parameters
    ----------
    default : str
        The tokenizer's own class name, for a tokenizer used on its own.

    Returns
    -------
    str
    """
    return _CALLER.get() or default


class BaseTokenizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class of tabformer tokenizers.

    Subclasses implement ``fit(X)``, ``transform(X) -> dict[str, ndarray]`` and
    ``embedder_spec() -> dict``: a JSON-able description of the embedder their tokens
    need (``{"kind": <name in tabformer.nn.embedders.EMBEDDERS>, **sizes}``), which the
    torch layer turns into an ``nn.Module`` (:meth:`build_embedder`). ``default_positions`` tells the estimator which
    positional embedding the encoder should add when the user leaves
    ``encoder__positions`` unset (``None`` for tables, whose columns have no order).

    The base class takes no parameters; see the subclasses for theirs.
    """

    def __init_subclass__(cls, **kwargs):
        # transform returns a dict of arrays, which no DataFrame holds: opt every tokenizer out
        # of set_output / set_config(transform_output="pandas") wrapping (no set_output method).
        kwargs["auto_wrap_output_keys"] = None
        super().__init_subclass__(**kwargs)

    #: default ``encoder__positions`` for this kind of input
    default_positions: str | None = None
    #: what the tokens stand for: ``"table"`` (one per column), ``"text"`` or ``"image"``;
    #: a :class:`~tabformer.tokenizers.MixedTokenizer` feeds text and image tokenizers one column at a time
    kind: str = "table"
    #: whether ``fit`` reads ``y``: ``fit(X, y=None)`` is scikit-learn's signature either way,
    #: and :func:`fit_with_target` passes targets (cutting out rows of weight 0) only where it does
    fit_reads_target: bool = True

    def __setstate__(self, state):
        # A tokenizer pickled before one of its parameters existed (WordPieceTokenizer's strip_accents...)
        # lacks it, and get_params, clone or a refit would fail: it gets its default, which is what the
        # tokenizer did before the parameter existed. A subclass whose old behaviour is another value
        # sets it first (PatchTokenizer's conv_stem).
        for name, parameter in inspect.signature(type(self).__init__).parameters.items():
            if parameter.default is not parameter.empty:
                state.setdefault(name, parameter.default)
        super().__setstate__(state)

    def describe_tokens(self, batch: dict) -> list:
        """For each row, ``[(position, column, label), ...]`` of its real tokens (``explain``).

        Sequence tokenizers define ``token_labels(batch)``; their tokens are attributed to
        their text column where it has a name (a DataFrame's; each text of a pair its own),
        else to a column named after their kind. Tokens their embedder puts before the words
        (``extra_token_names``) lead each row. Table tokens are their columns.

        Parameters
        ----------
        batch : dict of ndarray
            Output of ``transform`` for ``n`` rows.

        Returns
        -------
        tokens : list of n lists of (int, str, str)
            ``position`` indexes the token sequence (CLS excluded); ``column`` is the
            input column the token comes from; ``label`` names the token.
        """
        if hasattr(self, "token_labels"):
            names, types = getattr(self, "feature_names_in_", None), batch.get("token_type_ids")
            # Tokens the embedder puts before the words (a SentenceTokenizer's [SENTENCE]) come first: the words follow them.
            extra = list(getattr(self, "extra_token_names", ()))
            if names is None or types is None:
                return [[(i, self.kind, label) for i, label in enumerate(extra + labels)] for labels in self.token_labels(batch)]
            # Named text columns (a sentence pair's two): each token is its own text's, read from its segment id;
            # the leading tokens, which read the whole input, are the first column's.
            real = np.asarray(batch["attention_mask"], dtype=bool)
            return [
                [(i, str(names[0]), label) for i, label in enumerate(extra)]
                + [
                    (len(extra) + i, str(names[min(int(t), len(names) - 1)]), label)
                    for i, (label, t) in enumerate(zip(labels, row[keep]))
                ]
                for labels, row, keep in zip(self.token_labels(batch), np.asarray(types), real)
            ]
        names = list(self.token_names() if hasattr(self, "token_names") else self.get_feature_names_out())
        columns = self.token_columns() if hasattr(self, "token_columns") else names  # a date's parts are its column's
        n_rows = len(next(iter(batch.values())))
        return [[(i, column, name) for i, (column, name) in enumerate(zip(columns, names))] for _ in range(n_rows)]

    def embedder_spec(self) -> dict:  # pragma: no cover - interface
        """The embedder this fitted tokenizer's output needs, as a JSON-able dict.

        Returns
        -------
        spec : dict
            ``{"kind": <name in tabformer.nn.embedders.EMBEDDERS>, **arguments}``.
        """
        raise NotImplementedError

    def build_embedder(self, d_model: int):
        """A fresh embedder for this fitted tokenizer, built from :meth:`embedder_spec`.

        Parameters
        ----------
        d_model : int
            Token width ``D``.

        Returns
        -------
        embedder : nn.Module
            ``embedder(**batch)`` returns ``(tokens (B, T, D), mask (B, T) bool or None)``.
        """
        return build_embedder(self.embedder_spec(), d_model)

    def __sklearn_tags__(self):
        """sklearn tags: inputs may hold NaN, categories and strings; no dtype is preserved (the output is a dict)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


def fit_with_target(tokenizer, X, y=None, sample_weight=None):
    """``tokenizer.fit(X, y[, sample_weight])`` where its ``fit`` takes them and ``y`` is given, else ``tokenizer.fit(X)``.

    A table tokenizer picks its piecewise bins on ``y``, its rows weighed by ``sample_weight``;
    a tokenizer written as ``fit(self, X)`` (a user's, registered) is fitted as before.

    Parameters
    ----------
    tokenizer : unfitted tokenizer
    X : its training input
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), or None
        Encoded targets (class ids, or numbers).
    sample_weight : array-like of shape (n_samples,), or None
        Row weights for what ``y`` chooses; a row of weight 0 is left out of it. A
        ``fit(self, X, y)`` that takes no weights is fitted on the rows of positive weight
        only, so it never reads the targets of the estimators' early-stopping holdout
        (which weighs 0); their other weights it cannot use.

    Returns
    -------
    the fitted tokenizer
    """
    takes = inspect.signature(tokenizer.fit).parameters
    if y is None or "y" not in takes or not getattr(tokenizer, "fit_reads_target", True):
        return tokenizer.fit(X)
    if sample_weight is not None and "sample_weight" in takes:
        return tokenizer.fit(X, y, sample_weight=sample_weight)
    if sample_weight is not None:
        kept = np.flatnonzero(np.asarray(sample_weight) > 0)
        if len(kept) < len(sample_weight):
            return tokenizer.fit(_safe_indexing(X, kept), _safe_indexing(np.asarray(y), kept))
    return tokenizer.fit(X, y)
