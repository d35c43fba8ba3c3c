"""Predict-time checks of a table's values against what ``fit`` read, warned once per input.

- Categories ``fit`` never saw read their column's "unseen" id. With ``category_dropout=0`` no
  training row holds that id, so its embedding is the random initial one and such rows are
  answered through noise (a review measured P(1) of 0.07 to 0.35 by seed alone):
  :class:`UnseenCategoryWarning`, one message naming every such column.
- Numbers far outside a column's fitted range (income fitted in thousands, predicted in
  dollars): the quantile transform reads each as the nearest training extreme, so every such
  row answered as the training maximum, silently. "Far" is beyond the fitted ``[min, max]`` by
  more than its width; a column is named when at least :data:`FAR_SHARE` of its values are.

Within :meth:`ColumnWarnings.gathering <tabformer.tokenizers._columns.ColumnWarnings.gathering>`
(a chunked predict) the counts add up over the input's chunks; :func:`one_input` gathers
one ``transform`` call alone.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pandas as pd
from sklearn.preprocessing import QuantileTransformer

from ._columns import MIN_VALUES_ALL_UNSEEN, ColumnWarnings, gathering_warnings

__all__ = [
    "FAR_SHARE",
    "UnseenCategoryWarning",
    "add_far_numbers",
    "add_unseen_categories",
    "fitted_range",
    "not_a_number",
    "one_input",
]

#: a numeric column is warned about when at least this share of its present values lie far outside the fitted range
FAR_SHARE = 0.1


class UnseenCategoryWarning(UserWarning):
    """Categories at predict that ``fit`` never saw, in a column whose "unseen" id no training row trained."""


@contextlib.contextmanager
def one_input():
    """Within: the column checks add to the input's gatherer, or to one of this block's own, warned at its end."""
    if gathering_warnings() is not None:
        yield
        return
    gathered = ColumnWarnings()
    with gathered.gathering():
        yield
    gathered.warn()


class _Tally:
    """What the checks of this module gathered over one input's chunks; ``ColumnWarnings.warn`` calls :meth:`warn`."""

    def __init__(self):
        self.unseen = {}  # column -> [rows holding a category fit never saw, the first such value]
        self.far = {}  # column -> {"far", "present", "first", "low", "high", "clamped"}

    def warn(self, gathered: ColumnWarnings, stacklevel: int) -> None:
        # a column none of whose (>= MIN_VALUES_ALL_UNSEEN) values is a category gets ColumnWarnings' own warning
        alone = {c for c, t in gathered.unseen.items() if not t["known"] and t["present"] >= MIN_VALUES_ALL_UNSEEN}
        unseen = {column: tally for column, tally in self.unseen.items() if column not in alone}
        if unseen:
            listed = ", ".join(f"{column!r} ({rows} row(s), e.g. {example!r})" for column, (rows, example) in unseen.items())
            warnings.warn(
                f"categorical column(s) {listed} hold categories fit never saw: they read their column's 'unseen' id, which "
                "no training row trained (category_dropout=0), so those rows are answered through a random embedding. Set "
                "tokenizer__category_dropout=0.1 (tokenizer__table__category_dropout in a mixed model) to train the 'unseen' "
                'id; see docs/defaults.md, "Tables: categories fit never saw"',
                UnseenCategoryWarning,
                stacklevel=stacklevel,
            )
        for column, t in self.far.items():
            if not t["far"] or t["far"] < FAR_SHARE * t["present"]:
                continue
            reads = (
                "the quantile transform reads each as the nearest training extreme"
                if t["clamped"]
                else "the model reads them beyond any value it trained on"
            )
            warnings.warn(
                f"numeric column {column!r}: {t['far']} of its {t['present']} values lie far outside the range fit saw "
                f"(first: {t['first']:g}; fitted range {t['low']:g} to {t['high']:g}): {reads}. Were its units changed "
                "(thousands at fit, units now)? Pass the column in the units it had at fit",
                UserWarning,
                stacklevel=stacklevel,
            )


def _tally():
    """The :class:`_Tally` of the input being gathered (see :func:`one_input`), or None when none gathers."""
    gathered = gathering_warnings()
    return None if gathered is None else gathered.tallies.setdefault(__name__, _Tally())


def add_unseen_categories(values: pd.Series, codes: np.ndarray, column) -> None:
    """Count the rows of ``values`` that hold a category ``fit`` never saw (``codes < 0``), for :class:`UnseenCategoryWarning`.

    Parameters
    ----------
    values : Series
        A categorical column's cells (one chunk of the input).
    codes : ndarray of shape (len(values),)
        Their index among the fitted categories, -1 where none.
    column : str
        The column's name, as the user labels it.
    """
    new = values.notna().to_numpy() & (codes < 0)
    tally = _tally()
    if tally is None or not new.any():
        return
    rows, example = tally.unseen.get(column, (0, values[new].iloc[0]))
    tally.unseen[column] = (rows + int(new.sum()), example)


def fitted_range(numbers: np.ndarray) -> np.ndarray:
    """Each column's smallest and largest training value (missing ones ignored).

    Parameters
    ----------
    numbers : ndarray of shape (n_samples, n_numeric)
        NaN where missing; every column holds a number.

    Returns
    -------
    ndarray of shape (n_numeric, 2)
    """
    if not numbers.shape[1]:
        return np.empty((0, 2))
    return np.stack([np.nanmin(numbers, axis=0), np.nanmax(numbers, axis=0)], axis=1)


def add_far_numbers(raw: np.ndarray, ranges, columns: list, scaler) -> None:
    """Count each column's values far outside its fitted range (beyond ``[min, max]`` by more than ``max - min``).

    Parameters
    ----------
    raw : ndarray of shape (n_samples, n_columns)
        The chunk's numbers, in the user's units; NaN where missing.
    ranges : ndarray of shape (n_columns, 2), or None
        Each column's fitted ``[min, max]``; None (a tokenizer saved before they were kept) checks nothing.
    columns : list
        The columns' names as the user labels them; None for a column not to check (a datetime's parts).
    scaler : the tokenizer's fitted scaler, or None
        A quantile transform reads such a value as the nearest training extreme; other scalings extrapolate.
    """
    tally = _tally()
    if tally is None or ranges is None:
        return
    clamped = isinstance(scaler, QuantileTransformer)
    for j, column in enumerate(columns):
        if column is None:
            continue
        (low, high), values = (float(bound) for bound in ranges[j]), raw[:, j]
        with np.errstate(over="ignore", invalid="ignore"):
            far = (values > high + (high - low)) | (values < low - (high - low))
        t = tally.far.setdefault(column, {"far": 0, "present": 0, "first": None, "low": low, "high": high, "clamped": clamped})
        t["far"], t["present"] = t["far"] + int(far.sum()), t["present"] + int((~np.isnan(values)).sum())
        t["first"] = float(values[far][0]) if t["first"] is None and far.any() else t["first"]


def not_a_number(values: pd.Series, column) -> str:
    """Why numbers at fit read as categories now, and the fix: one "n/a" or "$1,000" in a CSV's 10,000 rows makes the
    whole column text; floats kept in an object column (after a ``concat``, a row-wise build) are numbers all the same."""
    present = values.dropna()
    for row, value in present.items():
        try:
            float(value)
        except (TypeError, ValueError):
            return f"; row {row!r} holds {value!r}, which is not a number"
    if all(isinstance(value, str) for value in present):
        return "; its values are numbers written as text: convert them (pd.to_numeric)"
    every = ", or X = X.infer_objects() for every such column" if values.dtype == object else ""
    convert = f"X[{column!r}] = X[{column!r}].astype(float)"
    return f"; its values are numbers held as dtype {values.dtype}: convert it ({convert}{every})"
