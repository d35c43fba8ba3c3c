"""Numbers before they become tokens: the scaler fitted on a table's numeric block, and the
bins of the piecewise-linear numeric embedding (Gorishniy et al., 2022, "PLE")."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.preprocessing import QuantileTransformer, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from ._columns import numeric_values

__all__ = [
    "MIN_ROWS_PER_BIN",
    "RangeQuantileTransformer",
    "RangeStandardScaler",
    "fit_bin_edges",
    "fit_scaler",
    "numeric_block",
    "scaled_tokens",
    "legacy_duration_units",
]

#: a bin the target chooses holds at least this many training rows (rtdl's ``compute_bins`` example)
MIN_ROWS_PER_BIN = 64
#: the trees read a seeded sample of this many rows at most: 0.15 s a column instead of 2.6 s at 1M rows
MAX_TREE_ROWS = 100_000


def legacy_duration_units(tokenizer) -> dict:
    """For a tokenizer fitted before durations were read in seconds (ea42ff5; it has no ``duration_unit_``), each
    duration column's seconds per count of its fitted dtype's unit: its scaler was fitted on those counts (of
    nanoseconds), and read in seconds a saved model's predictions moved, silently."""
    if hasattr(tokenizer, "duration_unit_"):
        return {}
    dtypes = getattr(tokenizer, "column_dtypes_", {})
    return {
        c: pd.Timedelta(1, unit=d[len("timedelta64[") : -1]).total_seconds()
        for c, d in dtypes.items()
        if d.startswith("timedelta64[")
    }


def numeric_block(frame, columns: list, named, units=None) -> np.ndarray:
    """The numeric ``columns`` of ``frame`` as one float64 block, NaN where missing.

    Parameters
    ----------
    frame : DataFrame
    columns : list of column names
    named : callable
        A column's name as the user labelled it, for messages.
    units : dict of column to float, optional
        Duration columns to read in counts of this many seconds (see :func:`legacy_duration_units`).

    Returns
    -------
    ndarray of shape (n_samples, len(columns))

    Raises
    ------
    ValueError
        If a column holds a non-numeric or an infinite value (naming the column and row).
    """
    block = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        values = numeric_values(frame[column], named(column))
        values = values / units[column] if units and column in units else values
        infinite = np.isinf(values)
        if infinite.any():
            row = int(np.argwhere(infinite)[0][0])
            raise ValueError(
                f"numeric column {named(column)!r} holds an infinite value at row {row}; "
                "replace it (NaN is accepted and gets a learned missing token)"
            )
        block[:, j] = values
    return block


def fit_scaler(numbers: np.ndarray, transform):
    """The scaler ``numeric_transform`` names, fitted on ``numbers`` (NaN ignored), or None.

    Parameters
    ----------
    numbers : ndarray of shape (n_samples, n_numeric)
    transform : {"quantile", "standard", None}

    Returns
    -------
    QuantileTransformer, StandardScaler or None
        Arrays in and out, whatever ``set_config(transform_output=...)`` says.
    """
    if not numbers.shape[1] or transform is None:
        return None
    if transform == "quantile":
        n_quantiles = int(max(2, min(1000, numbers.shape[0])))
        scaler = RangeQuantileTransformer(n_quantiles=n_quantiles, output_distribution="normal", subsample=10**9)
    else:
        scaler = RangeStandardScaler()
    return scaler.set_output(transform="default").fit(numbers)


class _OnTrainingRange:
    """A scaler fitted and applied on each column shifted by its training minimum and divided by a unit.

    The map is affine and increasing, so a quantile transform or a z-score is the same as on
    the raw column, except where sklearn's tests for ties and constants use absolute
    thresholds: ``QuantileTransformer`` sends every value within 1e-7 of a column's smallest
    (largest) training value to its lowest (highest) output, and ``StandardScaler`` reads a
    column whose variance underflows (values below about 1e-154) as constant. A column of
    ``x * 1e-8`` (a probability, a length in metres) became one token under the default
    quantile transform, and a model fitted on it predicted at chance (0.51, against 0.995 on
    ``x``), silently. ``transform`` and ``inverse_transform`` take and return the user's units.
    """

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: the tokenizer names it
            low = np.nanmin(X, axis=0)
            unit = np.array([self._unit(X[:, j]) for j in range(X.shape[1])], dtype=np.float64).reshape(low.shape)
            reach = (np.nanmax(X, axis=0) - low) / unit
        # a column past float64 once shifted or divided (values near 1.8e308), or constant, is kept as it is
        usable = np.isfinite(reach) & (unit > 0)
        self.offset_, self.span_ = np.where(usable, low, 0.0), np.where(usable, unit, 1.0)
        return super().fit((X - self.offset_) / self.span_, y)

    @staticmethod
    def _unit(column: np.ndarray) -> float:
        """The column's range: a z-score is the same in any unit, so the widest unit that stays finite."""
        return float(np.nanmax(column) - np.nanmin(column))

    def transform(self, X):
        return super().transform((np.asarray(X, dtype=np.float64) - self.offset_) / self.span_)

    def inverse_transform(self, X):
        return super().inverse_transform(X) * self.span_ + self.offset_


class RangeQuantileTransformer(_OnTrainingRange, QuantileTransformer):
    """sklearn's ``QuantileTransformer``, fitted in units of the gaps beside each column's smallest and
    largest values (see ``_OnTrainingRange``)."""

    @staticmethod
    def _unit(column: np.ndarray) -> float:
        """The smaller of the gaps between the two smallest and the two largest distinct training values.

        sklearn's absolute 1e-7 merges a value only with the training minimum or maximum, so in these
        units it never merges two training values (in units of the range it merged every value within
        1e-7 of the range of the minimum: a column of 0..300 with one 1e10 outlier became two tokens).
        Two passes over the column, not a sort: ``np.unique`` doubled the fit on 1M rows.
        """
        values = column[np.isfinite(column)]
        low, high = (values.min(), values.max()) if values.size else (0.0, 0.0)
        if low == high:
            return 0.0
        return float(min(values[values > low].min() - low, high - values[values < high].max()))


class RangeStandardScaler(_OnTrainingRange, StandardScaler):
    """sklearn's ``StandardScaler``, fitted in units of each column's range (see ``_OnTrainingRange``)."""


def fit_bin_edges(scaled: np.ndarray, y, n_bins: int, sample_weight=None) -> np.ndarray:
    """Each numeric column's bin edges for the piecewise-linear embedding, in scaled units.

    With a target, the bins are the leaves of a decision tree grown on the column alone
    against ``y`` (the paper's target-aware "T" bins), its rows weighed by ``sample_weight``.
    On Adult's demo rows they lift validation accuracy by 0.008 over the periodic embedding,
    where quantile bins read level with it (docs/defaults.md). Without a target
    (pretraining, a tokenizer fitted alone), the bins are the column's quantiles.

    Parameters
    ----------
    scaled : ndarray of shape (n_samples, n_numeric)
        The training rows' numbers as the tokens carry them (NaN where missing; non-finite ones are left out).
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs), or None
        Integer class ids (a classification tree) or floats (a regression tree).
    n_bins : int
        At most this many bins per column.
    sample_weight : array-like of shape (n_samples,), or None
        Weighs the trees' rows; rows of weight 0 are left out of them (the quantile bins
        and each column's first and last edge read every row).

    Returns
    -------
    edges : ndarray of shape (n_numeric, n_bins + 1)
        Sorted; from the column's smallest to its largest training value. A column with
        fewer bins repeats its last edge: a bin of width 0, which the embedding reads as 0.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D or 2-D with one row per row of ``scaled``, or ``sample_weight``
        not one finite, non-negative weight per row.
    """
    if y is not None:
        y = np.asarray(y)
        if y.ndim not in (1, 2) or len(y) != len(scaled):
            raise ValueError(f"y must hold one target per row of X ({len(scaled)} rows), got shape {y.shape}")
    weights = _checked_weights(sample_weight, len(scaled))
    edges = np.empty((scaled.shape[1], n_bins + 1))
    for j in range(scaled.shape[1]):
        present = np.isfinite(scaled[:, j])  # a value past float once scaled: transform names it
        x = scaled[present, j]
        if not len(x):
            edges[j] = 0.0
            continue
        chosen = present if weights is None else present & (weights > 0)
        if y is not None and chosen.sum() >= 2 * MIN_ROWS_PER_BIN:
            inner = _tree_thresholds(scaled[chosen, j], y[chosen], None if weights is None else weights[chosen], n_bins, seed=j)
        else:
            inner = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
        column = np.unique(np.concatenate([[x.min()], inner, [x.max()]]))
        edges[j] = np.concatenate([column, np.full(n_bins + 1 - len(column), column[-1])])
    return edges


def _checked_weights(sample_weight, n_rows: int):
    """``sample_weight`` as float64, or None where there is none or every row weighs the same."""
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_rows,):
        raise ValueError(f"sample_weight must hold one weight per row of X ({n_rows} rows), got shape {weights.shape}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    return None if np.all(weights == weights[:1]) and n_rows and weights[0] > 0 else weights


def _tree_thresholds(x: np.ndarray, target: np.ndarray, weights, n_bins: int, seed: int) -> np.ndarray:
    if len(x) > MAX_TREE_ROWS:
        keep = np.random.default_rng(seed).choice(len(x), MAX_TREE_ROWS, replace=False)
        x, target, weights = x[keep], target[keep], None if weights is None else weights[keep]
    tree = DecisionTreeRegressor if np.issubdtype(target.dtype, np.floating) else DecisionTreeClassifier
    fitted = tree(max_leaf_nodes=n_bins, min_samples_leaf=MIN_ROWS_PER_BIN, random_state=0)
    fitted.fit(x[:, None], target, sample_weight=weights)
    return np.sort(fitted.tree_.threshold[fitted.tree_.feature >= 0])


def scaled_tokens(scaled: np.ndarray, raw: np.ndarray, columns: list, transform) -> np.ndarray:
    """The float32 tokens of ``scaled`` (0 where ``raw`` is missing); refuse one that is not finite, naming its column.

    One inf token makes the loss and predictions NaN. A value past float32's 3.4e38
    (``numeric_transform=None``), or a spread that overflows the standard scaler (from about
    1e154), would otherwise surface as a non-finite gradient blamed on the learning rate, or, at
    fit, as scikit-learn's "Input X contains infinity" from the piecewise embedding's trees.

    Parameters
    ----------
    scaled : ndarray of shape (n_samples, n_numeric)
        The numbers once scaled (float64).
    raw : ndarray of shape (n_samples, n_numeric)
        The same numbers as given, NaN where missing.
    columns : list
        The columns' names, for the message.
    transform : str or None
        ``numeric_transform``, for the message.

    Returns
    -------
    ndarray of shape (n_samples, n_numeric), float32
    """
    with np.errstate(over="ignore", invalid="ignore"):  # named below
        tokens = np.where(np.isnan(raw), 0.0, scaled).astype(np.float32)
    bad = ~np.isfinite(tokens)
    if bad.any():
        row, j = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"numeric column {columns[j]!r} holds {float(raw[row, j])!r} (row {row}), which is not finite once scaled to a "
            f"float32 token (numeric_transform={transform!r}); rescale the column (e.g. divide it by a power of ten or take "
            "its log), or use numeric_transform='quantile'"
        )
    return tokens
