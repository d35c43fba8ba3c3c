"""Checks on a table's columns that would otherwise read silently wrong (the TabularTokenizer's).

Each turns a value that pandas or numpy would accept, and the model would then misread,
into a clear error or warning naming the column: numbers kept as categories because they
sit in an object column, predict-time values whose type changed so that no fitted category
matches, unhashable cells, complex numbers, time zones appearing or vanishing after fit.

At predict, :class:`ColumnWarnings` gathers the warnings of every chunk of one input (these,
and the other tokenizers' predict-time warnings) into one of each, with the input's totals.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import numpy as np
import pandas as pd

from .._validation import is_numeric_dtype
from .._warnings import user_stacklevel
from ._labels import user_label

__all__ = [
    "ColumnWarnings",
    "gathering_warnings",
    "UntrainedMissingWarning",
    "category_index",
    "check_unseen_kind",
    "numeric_values",
    "unhashable_named",
    "user_label",
    "value_kind",
    "warn_if_all_unseen",
    "warn_if_numbers_as_categories",
    "warn_missing_unlike_fit",
    "warn_once",
    "warn_rows_without_input",
]

#: what ``pandas.api.types.infer_dtype`` calls columns of numbers and of dates
_NUMBERS = frozenset({"integer", "floating", "mixed-integer-float", "decimal"})
_DATES = frozenset({"date", "datetime", "datetime64"})


def value_kind(values) -> str:
    """pandas' name for the kind of the non-missing values (``"string"``, ``"integer"``, ``"boolean"``...).

    A pandas ``category`` column is read by its values (pandas alone says ``"categorical"``).
    """
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        values = np.asarray(values, dtype=object)
    return pd.api.types.infer_dtype(values, skipna=True)


def _first_unhashable(values: pd.Series):
    for row, value in values.items():
        try:
            hash(value)
        except TypeError:
            return row, value
    return None


@contextlib.contextmanager
def unhashable_named(values: pd.Series, column):
    """Within: a TypeError from hashing ``values`` becomes a ValueError naming the column's first unhashable cell."""
    try:
        yield
    except TypeError:
        found = _first_unhashable(values)
        if found is None:
            raise
        row, value = found
        raise ValueError(
            f"categorical column {column!r} holds {value!r} (row {row!r}), a {type(value).__name__}, which cannot be "
            "a category (unhashable); turn such cells into strings or tuples, or drop the column"
        ) from None


def category_index(categories: pd.Index, values: pd.Series, column) -> np.ndarray:
    """``categories.get_indexer(values)``, or a ValueError naming the column's first unhashable cell."""
    with unhashable_named(values, column):
        return categories.get_indexer(values.astype(object))


def warn_if_numbers_as_categories(values: pd.Series, column) -> None:
    """Warn when a column detected as categorical holds only numbers or dates in an object dtype.

    ``datetime.date`` cells read as categories: one id per distinct value, every new value "unseen" at
    predict. Numbers in an object column are converted before (``_validation.numbers_as_numbers``).
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        return
    kind = value_kind(values)
    if kind not in _NUMBERS | _DATES:
        return
    what = "numbers" if kind in _NUMBERS else "dates"
    convert = "astype(float) or pd.to_numeric" if kind in _NUMBERS else "pd.to_datetime"
    warnings.warn(
        f"column {column!r} holds only {what} ({kind}) in a {values.dtype} column, so it is read as "
        f"categories ({values.nunique()} distinct values in {len(values)} rows; a value not seen in fit is "
        f"'unseen' at predict). To read it as {what}, convert it ({convert}); to keep categories and silence "
        "this, list it in categorical_columns",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def check_unseen_kind(values: pd.Series, codes: np.ndarray, categories: pd.Index, column, fitted_kind) -> None:
    """Refuse a predict-time value that is no category because its type changed (5.0 is no other type than a fitted 5).

    ``True`` against fitted ``"True"``, or ``1`` against fitted ``"1"``, got the "unseen" id, silently. Each value
    is judged by its own type, not by its batch ("no value is a category" refused ``1`` alone and read it as
    unseen beside a fitted ``"2"``). New values of the fitted type stay fine (unseen ids)."""
    unseen = values.notna().to_numpy() & (codes < 0)
    family = lambda kind: "number" if kind in _NUMBERS else kind  # noqa: E731 (an int column missing a cell holds floats)
    if fitted_kind is None or family(fitted_kind).startswith("mixed") or fitted_kind == "empty" or not unseen.any():
        return
    new = values[unseen]
    kind, example = value_kind(new), new.iloc[0]
    if family(kind).startswith("mixed"):  # new values of the fitted type beside others: find one of another type
        kind, example = next(((k, v) for v in new if family(k := value_kind([v])) != family(fitted_kind)), (fitted_kind, 0))
    if family(kind) != family(fitted_kind) and kind != "empty":
        fitted_example = f" (e.g. {categories[0]!r})" if len(categories) else ""
        raise ValueError(
            f"categorical column {column!r} held {fitted_kind} values at fit{fitted_example} and holds {kind} "
            f"values now (e.g. {example!r}), which no fitted category can match. Convert the column back to the "
            "type it had in fit"
        )


#: a predict-time categorical column none of whose values is a fitted category is warned
#: about from this many present values on; fewer (a single row to score) are common and mean little
MIN_VALUES_ALL_UNSEEN = 10


def _normalised(value):
    return " ".join(value.split()).casefold() if isinstance(value, str) else value


def warn_if_all_unseen(values: pd.Series, codes: np.ndarray, categories: pd.Index, column) -> None:
    """Warn when no present value of a predict-time categorical column is a fitted category.

    Values of the fitted type that are all new (``"MALE"`` for fitted ``"Male"``, codes
    renumbered upstream) each read as the column's "unseen" id, so the column tells the
    model nothing, silently. Where the values match fitted categories once case and
    spaces are ignored, the warning says so. Within :meth:`ColumnWarnings.gathering`, the
    values are added to the input's totals instead.
    """
    gathered = _GATHERING.get()
    if gathered is not None:
        gathered.add_values(values, codes, categories, column)
        return
    alone = ColumnWarnings()
    alone.add_values(values, codes, categories, column)
    alone.warn()


class UntrainedMissingWarning(UserWarning):
    """Missing values at predict in a column that had none at fit: they read a token no training row trained."""


def warn_missing_unlike_fit(frame: pd.DataFrame, had_missing, labels=None) -> None:
    """Warn naming the columns that miss values now but missed none in the rows ``fit`` read.

    Each column's missing token (numeric or categorical) is learned from the training rows
    that miss it; with none, it keeps its random initial value (weight decay aside), so
    the rows that miss a value are read through noise, silently.

    Parameters
    ----------
    frame : DataFrame
        The predict-time columns, before datetime expansion.
    had_missing : dict of column to bool, or None
        Whether each column missed a value at fit (``TabularTokenizer.had_missing_``); None
        (a tokenizer saved before it existed) checks nothing.
    labels : list or None, default=None
        The frame's column labels at fit, when they were not str (see :func:`user_label`).
    """
    if not had_missing:
        return
    new = {
        user_label(column, labels): int(frame[column].isna().sum())
        for column in frame.columns
        if not had_missing.get(column, True)
    }
    gathered = _GATHERING.get()
    if gathered is not None:
        gathered.add_missing(new)
    else:
        alone = ColumnWarnings()
        alone.add_missing(new)
        alone.warn()


#: the ColumnWarnings that the column checks add to, while one gathers (per thread and context)
_GATHERING: contextvars.ContextVar = contextvars.ContextVar("tabformer_column_warnings", default=None)


def gathering_warnings():
    """The :class:`ColumnWarnings` gathering this input's warnings (see :meth:`ColumnWarnings.gathering`), or None.

    Returns
    -------
    gathered : ColumnWarnings or None
    """
    return _GATHERING.get()


class ColumnWarnings:
    """The predict-time warnings of the tokenizers, over every chunk of one input.

    Predicting on a Parquet file or a large frame tokenizes it in chunks (row groups,
    8192-row slices); warning per chunk repeated each warning with that chunk's counts
    ("10 missing" once per row group), and judged "no value is a fitted category" on a chunk alone.
    Within :meth:`gathering`, :func:`warn_missing_unlike_fit`, :func:`warn_if_all_unseen`,
    :func:`warn_rows_without_input`, :func:`warn_once` and the image tokenizer's pixel check add
    their counts here; :meth:`warn` then issues what the whole input calls for, once.
    """

    def __init__(self):
        self.missing = {}  # column -> cells missing now in a column that missed none at fit
        self.unseen = {}  # column -> {"present", "known", "example", "categories", "matches"}
        self.notices = {}  # message -> category: warnings each chunk would repeat word for word
        self.first_row, self.empty_rows, self.n_empty = 0, [], 0  # rows without input (the first 5), in the whole input
        self.float_peaks = {}  # fitted pixel scale -> the brightest float pixel read for it
        self.tallies = {}  # module -> what its checks gathered: ``tally.warn(self, stacklevel)`` (tokenizers._predict_checks)

    @contextlib.contextmanager
    def gathering(self, first_row: int = 0):
        """Within: the checks of any tokenizer add to this instead of warning.

        Parameters
        ----------
        first_row : int, default=0
            Position in the whole input of the chunk's first row, so that rows are named by it.

        Yields
        ------
        self : ColumnWarnings
        """
        self.first_row = first_row
        token = _GATHERING.set(self)
        try:
            yield self
        finally:
            _GATHERING.reset(token)

    def add_missing(self, counts: dict) -> None:
        """Add one chunk's missing cells per column.

        Parameters
        ----------
        counts : dict of column to int
            Cells missing in the chunk, for the columns that missed none at fit.
        """
        for column, count in counts.items():
            if count:
                self.missing[column] = self.missing.get(column, 0) + count

    def add_values(self, values: pd.Series, codes: np.ndarray, categories: pd.Index, column) -> None:
        """Add one chunk's values of a categorical column.

        Parameters
        ----------
        values : Series
            The chunk's cells of the column.
        codes : ndarray of shape (len(values),)
            Their index in ``categories``, -1 where not a fitted category.
        categories : Index
            The column's fitted categories.
        column : str
            The column's name.
        """
        present = values.notna().to_numpy()
        tally = self.unseen.setdefault(
            column, {"present": 0, "known": False, "example": None, "categories": categories, "matches": {}}
        )
        tally["present"] += int(present.sum())
        tally["known"] = tally["known"] or bool((codes[present] >= 0).any())
        if tally["known"] or not present.any():
            return  # a column with a fitted category is not warned about: its respellings no longer matter
        seen = values[present]
        tally["example"] = seen.iloc[0] if tally["example"] is None else tally["example"]
        fitted = {_normalised(c): c for c in categories}
        for value in seen.unique():
            if isinstance(value, str) and _normalised(value) in fitted:
                tally["matches"].setdefault(value, fitted[_normalised(value)])

    def add_empty_rows(self, rows: np.ndarray) -> None:
        """Add one chunk's rows without any input.

        Parameters
        ----------
        rows : ndarray of int
            Their positions in the chunk.
        """
        self.n_empty += len(rows)
        self.empty_rows += [self.first_row + int(row) for row in rows[: max(0, 5 - len(self.empty_rows))]]

    def add_float_peak(self, scale: float, peak: float) -> None:
        """Add the brightest pixel of one chunk's float images, for the tokenizer fitted with ``scale``.

        Parameters
        ----------
        scale : float
            The fitted pixel scale.
        peak : float
            The chunk's brightest pixel.
        """
        self.float_peaks[scale] = max(peak, self.float_peaks.get(scale, peak))

    def warn(self, stacklevel: int | None = None) -> None:
        """Issue the warnings the gathered counts call for (none is repeated).

        Parameters
        ----------
        stacklevel : int or None, default=None
            As :func:`warnings.warn`'s; None points at the user's call into tabformer.
        """
        stacklevel = user_stacklevel() if stacklevel is None else stacklevel
        for message, category in self.notices.items():
            warnings.warn(message, category, stacklevel=stacklevel)
        if self.n_empty:
            warnings.warn(
                f"{self.n_empty} row(s) hold no input: every text and image cell is missing (rows {self.empty_rows}"
                f"{', ...' if self.n_empty > 5 else ''}); the model gives each the same answer, read from no data",
                UserWarning,
                stacklevel=stacklevel,
            )
        for scale, peak in self.float_peaks.items():
            if peak <= 1:
                warnings.warn(
                    f"every image of this input has float pixels at or under 1, but the training images' went up to "
                    f"{scale:g}: if these are in [0, 1], multiply them by 255 as the training images were",
                    UserWarning,
                    stacklevel=stacklevel,
                )
        if self.missing:
            counts = ", ".join(f"{column!r} ({count} missing)" for column, count in self.missing.items())
            warnings.warn(
                f"column(s) {counts} miss values now but missed none in the rows fit read: those cells read their "
                "column's missing token, which no training row trained. Impute them (e.g. sklearn's SimpleImputer in a "
                "Pipeline) or train on rows that miss values too",
                UntrainedMissingWarning,
                stacklevel=stacklevel,
            )
        for column, tally in self.unseen.items():
            if tally["known"] or tally["present"] < MIN_VALUES_ALL_UNSEEN:
                continue
            categories, hint = tally["categories"], " Check it was not recoded."
            if tally["matches"]:
                value, category = next(iter(tally["matches"].items()))
                hint = (
                    f" {len(tally['matches'])} of its distinct values match a fitted category once case and spaces are "
                    f"ignored ({value!r} against {category!r}); map them back to the fitted spelling."
                )
            warnings.warn(
                f"categorical column {column!r}: none of its {tally['present']} values is a category fit saw (e.g. "
                f"{tally['example']!r}; fitted: {list(categories[:3])}{', ...' if len(categories) > 3 else ''}), so every "
                f"row reads the column's 'unseen' id and the column tells the model nothing.{hint}",
                UserWarning,
                stacklevel=stacklevel,
            )
        for tally in self.tallies.values():
            tally.warn(self, stacklevel + 1)  # counted from the tally's warn, one frame deeper


def numeric_values(series: pd.Series, column) -> np.ndarray:
    """A numeric column as float64, NaN where missing; a ValueError naming the column otherwise."""
    if pd.api.types.is_complex_dtype(series.dtype):
        raise ValueError(
            f"numeric column {column!r} is complex ({series.dtype}); pass real numbers (e.g. its real part and "
            "imaginary part, or its modulus, as columns of their own)"
        )
    if pd.api.types.is_timedelta64_dtype(series.dtype):  # counts of the dtype's unit ([ns] or [us]) would differ 1000x
        return series.dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        numbers = series if is_numeric_dtype(series.dtype) else pd.to_numeric(series, errors="raise")
        # to_numpy with na_value: nullable and pyarrow columns hold pd.NA, not NaN
        return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        for row, value in series.items():
            if np.ndim(value) == 0 and pd.isna(value):
                continue
            try:
                float(value)
            except (TypeError, ValueError):
                raise ValueError(f"numeric column {column!r} holds non-numeric value {value!r} (row {row!r})") from None
        raise ValueError(f"numeric column {column!r} ({series.dtype}) cannot be read as numbers") from None


def warn_rows_without_input(presence: list) -> None:
    """Warn naming the rows whose every text and image cell is missing, in a frame without table columns.

    Such a row reaches the encoder as its CLS token alone: the model gives every such row
    the same answer, read from no data, and training never saw one (segment dropout keeps
    a segment in every row).

    Parameters
    ----------
    presence : list of bool ndarray of shape (n_samples,)
        One per text or image segment, False where its cell is missing.
    """
    if not presence:
        return
    gathered = gathering_warnings()
    tally = gathered if gathered is not None else ColumnWarnings()
    tally.add_empty_rows(np.flatnonzero(~np.logical_or.reduce(presence)))
    if gathered is None:
        tally.warn()


def warn_once(message: str, category=UserWarning, stacklevel: int | None = None) -> None:
    """Warn, or, within :meth:`ColumnWarnings.gathering`, have the input's gatherer warn once after its last chunk.

    For a warning that every chunk of an input would repeat word for word.

    Parameters
    ----------
    message : str
        The warning.
    category : Warning subclass, default=UserWarning
        Its category.
    stacklevel : int or None, default=None
        As :func:`warnings.warn`'s, counted from the caller of this function (when not gathered); None points at
        the user's call into tabformer.
    """
    gathered = _GATHERING.get()
    if gathered is not None:
        gathered.notices.setdefault(message, category)
    else:
        warnings.warn(message, category, stacklevel=user_stacklevel() if stacklevel is None else stacklevel + 1)
