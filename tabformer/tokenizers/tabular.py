"""Tables: one token per column (TabTransformer for categories, FT-Transformer for numbers).

Categorical column ``j`` owns a small id space: ``0`` = missing, ``1`` = a category not
seen in ``fit``, ``2..`` = the fitted categories. Both special ids are per column and
learned, so a missing ``workclass`` and a missing ``occupation`` can mean different
things, and an unseen value is never silently mapped onto a real category.

Numeric column ``j`` becomes ``x * W_j + b_j`` (FT-Transformer's per-column linear
embedding; ``b_j`` doubles as the column's identity) or, with
``numeric_embedding="periodic"``, ``ReLU(Linear_j([sin(2π c_j x), cos(2π c_j x)]))``
(Gorishniy et al., 2022, "PLR"), or with ``"piecewise"`` ``ReLU(Linear_j(PLE_j(x)) + x v_j)``,
the piecewise-linear encoding over bins a tree chose on the target (the same paper's "T-LR").
NaN is replaced by a learned per-column "missing" token, never by zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from .._validation import as_frame, is_categorical_dtype, is_numeric_dtype
from ._column_hints import warn_odd_columns
from ._columns import (
    category_index,
    check_unseen_kind,
    unhashable_named,
    user_label,
    value_kind,
    warn_if_all_unseen,
    warn_missing_unlike_fit,
    warn_once,
)
from ._datetimes import datetime_parts, expand_datetimes, is_tz_aware, part_owners
from ._labels import check_listed, check_same_columns, internal_names
from ._numbers import fit_bin_edges, fit_scaler, legacy_duration_units, numeric_block, scaled_tokens
from ._predict_checks import add_far_numbers, add_unseen_categories, fitted_range, not_a_number, one_input
from .base import BaseTokenizer, expecting_name, register_tokenizer

MISSING_ID, UNSEEN_ID, FIRST_CATEGORY_ID = 0, 1, 2

__all__ = ["TabularTokenizer"]


def _dtype_family(dtype) -> str:
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "numeric" if is_numeric_dtype(dtype) else "categorical" if is_categorical_dtype(dtype) else "other"


def _sorted_categories(values: pd.Series) -> pd.Index:
    if isinstance(values.dtype, pd.CategoricalDtype):
        # The user declared them: keep their order, and ids for those absent from these rows.
        return pd.Index(values.cat.categories)
    unique = pd.unique(values.dropna())
    try:
        return pd.Index(sorted(unique))
    except TypeError:  # mixed types (e.g. 1 and "a") cannot be ordered; order by text
        return pd.Index(sorted(unique, key=str))


@register_tokenizer("tabular", "table")
class TabularTokenizer(BaseTokenizer):
    """Turn a table into one token per column.

    Parameters
    ----------
    categorical_columns : list or None, default=None
        Columns to treat as categorical, by their labels in X (``0`` for a DataFrame's
        integer label ``0``), or by position on an array or a DataFrame with str labels: an
        int there (numpy's too; negative from the end) is a position, as in ``ColumnTransformer``
        (``x0``... also name an array's columns). ``None`` detects them: object, string,
        category and bool dtypes. A pandas ``category`` column keeps its declared
        categories, in their order (a category absent from the training rows still
        gets its own id).
    numeric_columns : list or None, default=None
        Columns to treat as numeric, named as in ``categorical_columns``. ``None`` detects them: numeric dtypes (not bool).
        Any column in neither list nor detected raises an error naming it.
        Datetime columns (``datetime64``, time zones included) become several number
        tokens, each named ``<column>.<part>``: ``elapsed`` (years since 1970), and the
        periodic calendar parts as sine/cosine pairs: ``month_sin``/``month_cos`` (the
        position in the year), ``weekday_sin``/``weekday_cos`` and, when the training
        values have a time of day, ``hour_sin``/``hour_cos`` (in a time zone's local time). ``NaT`` is missing.
    numeric_transform : {"quantile", "standard", None}, default="quantile"
        Scaling fitted on the training rows (NaN ignored). ``"quantile"`` maps each
        column to a standard normal through its empirical quantiles (as rtdl does),
        which tames heavy tails such as capital gains.
    numeric_embedding : {"linear", "periodic", "piecewise"}, default="periodic"
        How a number becomes a token (see the module docstring). ``"piecewise"`` needs
        ``fit(X, y)`` for target-aware bins; ``fit(X)`` bins at the column's quantiles.
        The estimators' table recipe resolves to ``"piecewise"``.
    n_frequencies : int, default=16
        Periodic embedding: frequencies per column.
    frequency_scale : float, default=0.1
        Periodic embedding: std of the initial frequencies; the most sensitive knob
        of that embedding (rtdl tunes it in [0.01, 100]).
    n_bins : int, default=32
        Piecewise embedding: at most this many bins per column (a tree's hold >= 64 rows each).
    category_dropout : float in [0, 1), default=0.0
        Share of the training rows' categories read as "unseen" (id 1) in each training
        step, so that the unseen id learns what a category the model does not know means;
        without it no training row ever holds that id, and a new category at predict is
        read through its random initial embedding (``transform`` then warns,
        ``UnseenCategoryWarning``, naming the columns). Prediction never drops a category.

    Attributes
    ----------
    categorical_columns_ : list of str
        Columns encoded as categories, in input order.
    numeric_columns_ : list of str
        Columns encoded as numbers, in input order.
    categories_ : list of pandas.Index
        Fitted categories of each categorical column, in id order (ids start at 2).
    datetime_parts_ : dict of str to list of str
        The parts each datetime column became (see ``numeric_columns``).
    column_families_ : dict of str to {"numeric", "categorical", "datetime", "other"}
        dtype family of every column at fit; ``transform`` refuses a column that changed.
    had_missing_ : dict of str to bool
        Whether each column missed a value at fit. ``transform`` warns
        (``UntrainedMissingWarning``) for a column that had none and misses values now:
        its missing token was never trained. A continued fit that trains it sets it True.
    scaler_ : QuantileTransformer, StandardScaler or None
        Scaling fitted on the numeric block (``None`` without numeric columns or transform).
    numeric_range_ : ndarray of shape (n_numeric, 2)
        Each numeric column's smallest and largest training value. ``transform`` warns about a column
        whose values lie far outside it (by more than its width), as after a change of units.
    bin_edges_ : ndarray of shape (n_numeric, n_bins + 1)
        Piecewise embedding only: each column's bin edges, scaled (see ``tokenizers._numbers``).
    n_tokens_ : int
        Tokens per row: ``n_numeric + n_categorical``.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit`` (DataFrame input only).
    n_features_in_ : int
        Number of columns seen in ``fit``.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"city": ["a", "b", None], "age": [20.0, None, 40.0]})
    >>> batch = TabularTokenizer().fit(X).transform(X)
    >>> batch["cat_ids"].ravel().tolist(), batch["num_missing"].ravel().tolist()
    ([2, 3, 0], [False, True, False])
    """

    default_positions = None

    def __init__(
        self,
        categorical_columns=None,
        numeric_columns=None,
        numeric_transform="quantile",
        numeric_embedding="periodic",
        n_frequencies=16,
        frequency_scale=0.1,
        category_dropout=0.0,
        n_bins=32,
    ):
        self.categorical_columns = categorical_columns
        self.numeric_columns = numeric_columns
        self.numeric_transform = numeric_transform
        self.numeric_embedding = numeric_embedding
        self.n_frequencies = n_frequencies
        self.frequency_scale = frequency_scale
        self.category_dropout = category_dropout
        self.n_bins = n_bins

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, sample_weight=None):
        """Learn column kinds, categories and numeric scaling from ``X``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Training table; NaN / None mark missing cells.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Class ids or numbers: the piecewise embedding's bins are chosen on them; otherwise unused.
        sample_weight : array-like of shape (n_samples,), default=None
            Weighs the rows where ``y`` chooses the bins; rows of weight 0 (an estimator's
            early-stopping holdout) are left out. Categories and scaling read every row.

        Returns
        -------
        self : TabularTokenizer
            The fitted tokenizer.

        Raises
        ------
        ValueError
            If a setting is invalid, a named column does not exist or is listed twice, a
            column is neither numeric nor categorical, or a numeric column holds no
            number, a non-numeric or infinite value, or (piecewise) one past float32 once scaled.
        """
        if self.numeric_transform not in ("quantile", "standard", None):
            raise ValueError(f"numeric_transform must be 'quantile', 'standard' or None, got {self.numeric_transform!r}")
        if self.numeric_embedding not in ("linear", "periodic", "piecewise"):
            raise ValueError(f"numeric_embedding must be 'linear', 'periodic' or 'piecewise', got {self.numeric_embedding!r}")
        if self.numeric_embedding == "piecewise" and not (isinstance(self.n_bins, (int, np.integer)) and self.n_bins >= 2):
            raise ValueError(f"n_bins must be an int >= 2, got {self.n_bins!r}")
        frame, had_names = as_frame(X)
        self.n_features_in_ = frame.shape[1]
        if had_names:
            self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.column_families_ = {c: _dtype_family(frame[c].dtype) for c in frame.columns}
        self.column_dtypes_, self.duration_unit_ = {c: str(frame[c].dtype) for c in frame.columns}, "s"  # durations in seconds
        # Non-str names are not feature names (sklearn's rule) but still identify columns.
        self.column_labels_ = list(X.columns) if isinstance(X, pd.DataFrame) and not had_names else None
        given = {"categorical_columns": self.categorical_columns, "numeric_columns": self.numeric_columns}
        categorical, numeric = (internal_names(p, c, self.column_labels_, list(frame.columns)) for p, c in given.items())
        dates = [c for c in frame.columns if self.column_families_[c] == "datetime" and c not in (categorical or [])]
        self.datetime_parts_ = {c: datetime_parts(frame[c]) for c in dates}
        self.datetime_aware_ = {c: is_tz_aware(frame[c]) for c in self.datetime_parts_}
        self.had_missing_ = {c: bool(frame[c].isna().any()) for c in frame.columns}
        frame = expand_datetimes(frame, self.datetime_parts_)
        self.categorical_columns_, self.numeric_columns_ = self._resolve_kinds(frame, categorical, numeric)

        kinds = {**dict.fromkeys(self.categorical_columns_, "categorical"), **dict.fromkeys(self.numeric_columns_, "numeric")}
        warn_odd_columns(frame, kinds, told=[*(categorical or ()), *(numeric or ())], named=self._named)
        self.categories_ = []
        for column in self.categorical_columns_:
            with unhashable_named(frame[column], self._named(column)):
                self.categories_.append(_sorted_categories(frame[column]))
        for column, categories in zip(self.categorical_columns_, self.categories_):
            if not len(categories):  # as for numbers: a column with nothing to learn from is a mistake
                raise ValueError(f"categorical column {self._named(column)!r} holds no values at fit time (all missing)")
        self.category_kinds_ = [value_kind(categories) for categories in self.categories_]
        numbers = numeric_block(frame, self.numeric_columns_, self._named)
        for j, column in enumerate(self.numeric_columns_):
            if np.isnan(numbers[:, j]).all():
                raise ValueError(f"numeric column {self._named(column)!r} holds no numbers at fit time (all missing)")
        self.scaler_, self.numeric_range_ = fit_scaler(numbers, self.numeric_transform), fitted_range(numbers)
        if self.numeric_embedding == "piecewise":
            scaled = numbers if self.scaler_ is None else self.scaler_.transform(numbers)
            # named here: the trees' own check ("Input X contains infinity ... float32") names no column
            scaled_tokens(scaled, numbers, [self._named(c) for c in self.numeric_columns_], self.numeric_transform)
            self.bin_edges_ = fit_bin_edges(scaled, y, int(self.n_bins), sample_weight)
        elif hasattr(self, "bin_edges_"):
            del self.bin_edges_
        return self

    def _resolve_kinds(self, frame: pd.DataFrame, listed_categorical, listed_numeric) -> tuple[list, list]:
        columns = list(frame.columns)
        lists = {"categorical_columns": listed_categorical, "numeric_columns": listed_numeric}
        check_listed(lists, columns, self.column_labels_)
        categorical, numeric = [], []
        for column in columns:
            dtype = frame[column].dtype
            if column in (listed_categorical or ()):
                categorical.append(column)
            elif column in (listed_numeric or ()) or is_numeric_dtype(dtype):
                numeric.append(column)
            elif is_categorical_dtype(dtype):
                categorical.append(column)
            else:
                raise ValueError(
                    f"column {self._named(column)!r} has dtype {dtype}, which is neither numeric nor categorical; "
                    "convert it, or list it in categorical_columns / numeric_columns"
                )
        return categorical, numeric

    # ------------------------------------------------------------ transform
    def transform(self, X):
        """Encode ``X`` as token ids and values.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            The same columns as in ``fit`` (any order, for a DataFrame).

        Returns
        -------
        batch : dict of ndarray
            ``cat_ids`` (n_samples, n_categorical) int64, ``num_values`` (n_samples,
            n_numeric) float32 with missing entries set to 0, ``num_missing``
            (n_samples, n_numeric) bool.

        Raises
        ------
        ValueError
            If ``X`` does not have the fitted columns, or a column changed kind since ``fit``.
        """
        check_is_fitted(self, "categories_")
        with one_input():  # one warning per input, naming every column it concerns
            return self._transform(X)

    def _transform(self, X) -> dict:
        frame = self._check_columns(X)
        warn_missing_unlike_fit(frame, getattr(self, "had_missing_", None), getattr(self, "column_labels_", None))
        frame = expand_datetimes(frame, getattr(self, "datetime_parts_", {}))
        n = frame.shape[0]
        cat_ids = np.empty((n, len(self.categorical_columns_)), dtype=np.int64)
        for j, (name, categories) in enumerate(zip(self.categorical_columns_, self.categories_)):
            values, column = frame[name], self._named(name)
            codes = category_index(categories, values, column).astype(np.int64)
            check_unseen_kind(values, codes, categories, column, getattr(self, "category_kinds_", [None] * (j + 1))[j])
            warn_if_all_unseen(values, codes, categories, column)
            if not float(self.category_dropout) and not getattr(self, "unseen_trained_", False):  # untrained: say so
                add_unseen_categories(values, codes, column)
            ids = codes + FIRST_CATEGORY_ID
            ids[codes < 0] = UNSEEN_ID
            ids[values.isna().to_numpy()] = MISSING_ID
            cat_ids[:, j] = ids
        raw = numeric_block(frame, self.numeric_columns_, self._named, legacy_duration_units(self))
        missing, dates = np.isnan(raw), part_owners(getattr(self, "datetime_parts_", {}))  # a date's parts: not checked
        names = [None if c in dates else self._named(c) for c in self.numeric_columns_]
        add_far_numbers(raw, getattr(self, "numeric_range_", None), names, self.scaler_)
        scaled = raw if self.scaler_ is None else self.scaler_.transform(raw)
        numbers = scaled_tokens(scaled, raw, [self._named(c) for c in self.numeric_columns_], self.numeric_transform)
        return {"cat_ids": cat_ids, "num_values": numbers, "num_missing": missing}

    def add_categories(self, X) -> dict:
        """Append the categories of ``X`` that ``fit`` never saw to their columns (for a continued fit).

        Old categories keep their ids; each column's new values (sorted as ``fit``
        sorts) get the ids after its last one. The embedder built for the old
        tokenizer must grow to match (:meth:`TabularEmbedder.grow_categories
        <tabformer.nn.embedders.tabular.TabularEmbedder.grow_categories>`).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            The same columns as in ``fit``.

        Returns
        -------
        added : dict of column to list
            The new values of each column that got any, in id order, keyed as the user labels the columns
            (a DataFrame's non-str label ``0``, not ``x0``).
        """
        check_is_fitted(self, "categories_")
        frame = expand_datetimes(self._check_columns(X), getattr(self, "datetime_parts_", {}))
        added = {}
        for j, column in enumerate(self.categorical_columns_):
            values = frame[column].astype(object)
            unseen = values[values.notna().to_numpy() & (self.categories_[j].get_indexer(values) < 0)]
            if len(unseen):
                new = _sorted_categories(unseen)
                self.categories_[j] = self.categories_[j].append(new)
                added[self._named(column)] = list(new)
        return added

    def _check_columns(self, X) -> pd.DataFrame:
        labels = getattr(self, "column_labels_", None)
        if labels is not None and isinstance(X, pd.DataFrame) and list(X.columns) != labels:
            check_same_columns(list(X.columns), labels)
            X = X[labels]  # the fitted order, by label
        frame, had_names = as_frame(X)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None:
            if not had_names:
                raise ValueError(
                    f"X was fitted as a DataFrame with columns {list(fitted_names)}; pass a DataFrame "
                    f"with those columns, not an array of shape {frame.shape}"
                )
            check_same_columns(list(frame.columns), list(fitted_names))
            frame = frame[list(fitted_names)]
        elif frame.shape[1] != self.n_features_in_:
            who = expecting_name(type(self).__name__)  # the estimator the user called, if one is tokenizing
            raise ValueError(f"X has {frame.shape[1]} features, but {who} is expecting {self.n_features_in_} features as input")
        elif had_names:
            who = expecting_name(type(self).__name__)
            message = f"X has feature names {list(frame.columns)}, but {who} was fitted without feature names"
            warn_once(message + ": its columns are matched by position")  # once per input, not per chunk
            frame = frame.set_axis([f"x{i}" for i in range(frame.shape[1])], axis=1)
        for column in frame.columns:
            before, now = self.column_families_[column], _dtype_family(frame[column].dtype)
            if before == "datetime" and frame[column].isna().all():
                # A record with no date (None, NaN, NaT in any time zone, a null Parquet column) is a missing fitted date.
                missing = pd.Series(pd.NaT, index=frame.index, dtype=getattr(self, "column_dtypes_", {}).get(column))
                frame, now = frame.assign(**{column: missing}), "datetime"
            if before != now and not frame[column].isna().all():
                fitted = getattr(self, "column_dtypes_", {}).get(column, before)
                which = not_a_number(frame[column], self._named(column)) if (before, now) == ("numeric", "categorical") else ""
                raise ValueError(
                    f"column {self._named(column)!r} changed kind between fit and predict: it was {before} (dtype {fitted}) "
                    f"at fit, it is {now} (dtype {frame[column].dtype}) now{which}"
                )
            aware = getattr(self, "datetime_aware_", {}).get(column)
            if aware is not None and now == "datetime" and is_tz_aware(frame[column]) != aware:
                # Converting one to the other would shift elapsed time, weekday and hour by the offset.
                raise ValueError(
                    f"datetime column {self._named(column)!r} was {'time-zone aware' if aware else 'without a time zone'} at fit "
                    f"and is {'time-zone aware' if not aware else 'without a time zone'} now ({frame[column].dtype}); "
                    "pass it as in fit (tz_localize / tz_convert)"
                )
        return frame

    # --------------------------------------------------------------- device
    @property
    def n_tokens_(self) -> int:
        """Tokens per row: one per numeric and categorical column."""
        return len(self.categorical_columns_) + len(self.numeric_columns_)

    def embedder_spec(self) -> dict:
        """Describe the :class:`~tabformer.nn.embedders.tabular.TabularEmbedder` these tokens need.

        Returns
        -------
        spec : dict
            ``{"kind": "tabular", "cardinalities", "n_numeric", "numeric_embedding",
            "n_frequencies", "frequency_scale", "category_dropout"}``, and ``"bin_edges"`` for the
            piecewise embedding; one id space per categorical column.

        Raises
        ------
        ValueError
            If ``category_dropout`` is not in ``[0, 1)``, or ``numeric_embedding`` became
            ``"piecewise"`` after ``fit``.
        """
        check_is_fitted(self, "categories_")
        if self.numeric_embedding == "piecewise" and not hasattr(self, "bin_edges_"):
            raise ValueError("numeric_embedding was set to 'piecewise' after fit: refit the tokenizer to choose its bins")
        if not 0.0 <= float(self.category_dropout) < 1.0:
            raise ValueError(f"category_dropout must be a probability in [0, 1), got {self.category_dropout!r}")
        return {
            "kind": "tabular",
            "cardinalities": [len(c) + FIRST_CATEGORY_ID for c in self.categories_],
            "n_numeric": len(self.numeric_columns_),
            "numeric_embedding": self.numeric_embedding,
            "n_frequencies": int(self.n_frequencies),
            "frequency_scale": float(self.frequency_scale),
            "category_dropout": float(self.category_dropout),
            **({"bin_edges": self.bin_edges_.tolist()} if self.numeric_embedding == "piecewise" else {}),
        }

    def get_feature_names_out(self, input_features=None):
        """Column of each token, in token order: numeric columns, then categorical ones."""
        check_is_fitted(self, "categories_")
        return np.asarray(self.numeric_columns_ + self.categorical_columns_, dtype=object)

    def token_columns(self) -> list:
        """The input column of each token, in token order: a datetime column's parts are that column's.

        Columns are named as the user did: non-str DataFrame labels, ``x0, x1...`` inside, as their str.
        """
        return [column for column, _ in self._shown_tokens()]

    def token_names(self) -> list:
        """The name of each token, in token order, under the user's column labels (see :meth:`token_columns`)."""
        return [name for _, name in self._shown_tokens()]

    def _shown_tokens(self) -> list:
        owners = part_owners(getattr(self, "datetime_parts_", {}))
        return [(str(self._named(owners.get(name, name))), str(self._named(name))) for name in self.get_feature_names_out()]

    def _named(self, column):
        """``column`` as the user labelled it (``0``, not ``x0``), for messages and explanations."""
        return user_label(column, getattr(self, "column_labels_", None))
