"""Checks and scaling of the targets ``y``: labels a classifier reads, numbers a regressor reads.

Every error names the offending row, column or dtype, as :mod:`tabformer._validation`'s do for ``X``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _target_values(y, numeric: bool) -> np.ndarray:
    """``y`` as a numpy array; a DataFrame of nullable numbers or booleans keeps a numeric dtype.

    ``DataFrame.to_numpy()`` gives an object array for nullable columns (``Int64``,
    ``boolean``, ``Float64``), which no longer reads as a 0/1 indicator matrix and which
    ``astype(float)`` refuses at its first ``pd.NA``. Regression targets get NaN there,
    which the finite check then names by row.
    """
    if not isinstance(y, (pd.Series, pd.DataFrame)):
        return np.asarray(y)
    dtypes = list(y.dtypes) if isinstance(y, pd.DataFrame) else [y.dtype]
    numpy_dtypes = [getattr(dtype, "numpy_dtype", None) for dtype in dtypes]
    nullable_numbers = (
        isinstance(y, pd.DataFrame)
        and len(dtypes) > 0
        and all(isinstance(d, pd.api.extensions.ExtensionDtype) for d in dtypes)
        and all(d is not None and d.kind in "biuf" for d in numpy_dtypes)
    )
    if nullable_numbers and numeric:
        return y.to_numpy(dtype=np.float64, na_value=np.nan)
    if nullable_numbers and not y.isna().to_numpy().any():
        return y.to_numpy(dtype=np.result_type(*numpy_dtypes))
    return np.asarray(y.to_numpy())


def check_target(y, n_samples: int, *, numeric: bool):
    """Check y's length and values; return it as a numpy array.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Targets; a Series or DataFrame is read through ``to_numpy()``.
    n_samples : int
        Rows of ``X``.
    numeric : bool
        Regression targets (cast to float64, all finite) rather than class labels.

    Returns
    -------
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        float64 when ``numeric``.

    Raises
    ------
    ValueError
        Naming the first offending row: on a missing ``y`` or a length mismatch; for
        numeric targets on non-numbers, NaN or inf; for labels on continuous floats or
        missing labels.
    """
    if n_samples == 0:
        raise ValueError("X has 0 sample(s) while a minimum of 1 is required.")
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None")
    y_array = _target_values(y, numeric)
    if y_array.ndim == 0:
        raise ValueError(f"y must be an array of targets, got the scalar {y_array!r}")
    if len(y_array) != n_samples:
        raise ValueError(f"X has {n_samples} samples but y has {len(y_array)}; they must match")
    if numeric:
        if np.iscomplexobj(y_array):
            raise ValueError(
                "Complex data not supported: regression targets must be real numbers (pass the real part, or two targets)"
            )
        _refuse_time_targets(y, y_array)
        if y_array.dtype == object:  # pd.NA (a nullable Series') would not cast: as NaN, the check below names its row
            y_array = np.where(pd.isna(y_array), np.nan, y_array)
        try:
            y_array = y_array.astype(np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"regression targets must be numbers: {error}{_first_non_number(y_array)}") from None
        bad = ~np.isfinite(y_array)
        if bad.any():
            first = np.argwhere(bad)[0]
            row, column = int(first[0]), _column(y, int(first[1])) if y_array.ndim == 2 else ""
            raise ValueError(
                f"y holds {int(bad.sum())} NaN or infinite value(s) (first at row {row}{column}: "
                f"{y_array.reshape(len(y_array), -1)[row].tolist()}); drop or impute them first"
            )
    else:
        from sklearn.utils.multiclass import type_of_target

        infinite = np.isinf(y_array) if y_array.dtype.kind == "f" else None
        if infinite is not None and infinite.any():  # sklearn's type_of_target said "Input contains infinity", no row
            first = np.argwhere(infinite)[0]
            row, value = int(first[0]), float(y_array[tuple(first)])
            column = _column(y, int(first[1])) if y_array.ndim == 2 else ""
            raise ValueError(
                f"y holds {int(infinite.sum())} infinite label(s) (first at row {row}{column}: {value!r}); "
                "a class label must be finite: drop those rows or give them a class"
            )
        if y_array.ndim == 2 and np.any(pd.isna(y_array)):  # a multi-label indicator matrix with gaps
            row, column = (int(i) for i in np.argwhere(pd.isna(y_array))[0])
            raise ValueError(f"y holds {int(np.sum(pd.isna(y_array)))} missing value(s) (first at row {row}{_column(y, column)})")
        if (
            y_array.dtype.kind == "f"
            and type_of_target(y_array[~np.isnan(y_array)] if y_array.ndim == 1 else y_array) == "continuous"
        ):
            raise ValueError(
                "Unknown label type: continuous. A classifier needs discrete class labels; "
                "use TabFormerRegressor for continuous targets."
            )
        missing = pd.isna(y_array) if y_array.ndim == 1 else np.zeros(len(y_array), bool)
        if np.any(missing):
            row = int(np.argwhere(missing)[0][0])
            raise ValueError(f"y holds {int(np.sum(missing))} missing label(s) (first at row {row})")
        if y_array.ndim == 1 or y_array.shape[1:] == (1,):
            _refuse_unreadable_labels(y_array.ravel())
    return y_array


def _refuse_unreadable_labels(labels: np.ndarray) -> None:
    """Refuse object labels that scikit-learn's ``type_of_target`` reads as ``"unknown"`` (Python ints, tz-aware
    Timestamps, Periods, dates...), as scikit-learn's classifiers refuse them in ``fit``.

    They trained, and then failed the first epoch's scoring with sklearn's "unknown is not supported".
    Labels mixing str with other types are left to the label encoder's check, which names the types.
    """
    from sklearn.utils.multiclass import type_of_target

    if labels.dtype != object or len(labels) == 0 or type_of_target(labels) != "unknown":
        return
    if any(isinstance(label, str) for label in labels.tolist()):
        return
    first = labels[0]
    raise ValueError(
        f"Unknown label type: unknown. y's labels are Python objects (dtype object; row 0 holds {first!r}, of type "
        f"{type(first).__name__}), which scikit-learn cannot read as class labels. Pass them as str (y.astype(str)), or "
        "with a dtype of their own: numbers as y.astype(int), booleans as y.astype(bool), dates as datetime64 "
        "(pd.to_datetime(y); y.dt.tz_convert(None) for time-zone aware ones, y.dt.to_timestamp() for periods)"
    )


#: how to turn each kind of time into numbers for a regressor, and its predictions back
_TIME_ADVICE = {
    "dates": "e.g. days since the earliest, (y - y.min()).dt.days, or seconds, (y - y.min()).dt.total_seconds(); "
    'and the predictions back with y.min() + pd.to_timedelta(predictions, unit="D")',
    "durations": 'e.g. y.dt.total_seconds(), and the predictions back with pd.to_timedelta(predictions, unit="s")',
    "periods": "e.g. periods since the earliest, (y - y.min()).apply(lambda offset: offset.n), and the predictions back "
    "with y.min() + np.round(predictions).astype(int)",
    "times of day": "e.g. seconds since midnight, and the predictions back",
}


def _refuse_time_targets(y, y_array: np.ndarray) -> None:
    """Refuse regression targets that are dates, durations, periods or times of day, naming the dtype and the fix.

    ``astype(float64)`` read a ``datetime64`` as its raw count of the unit: a model of 1.6e18 (ns) or
    1.6e9 (s) for the same dates, whose predictions came back as bare floats, without a word.

    Parameters
    ----------
    y : the target as given (array-like, Series or DataFrame)
    y_array : ndarray
        ``y`` as numpy reads it.
    """
    if isinstance(y, pd.DataFrame):
        dtypes = list(y.dtypes)
    else:
        dtypes = [y.dtype if isinstance(y, pd.Series) else y_array.dtype]
    for column, dtype in enumerate(dtypes):
        objects = pd.api.types.is_object_dtype(dtype)
        kind = _time_kind(dtype)
        if kind is None and objects:
            kind = _time_kind_of_values(y.iloc[:, column].to_numpy() if isinstance(y, pd.DataFrame) else y_array.ravel())
        if kind is not None:
            where = _column(y, column)[1:] if isinstance(y, pd.DataFrame) else ""  # " column 0 ('when')"
            held = f"{kind} as Python objects" if objects else str(dtype)
            raise ValueError(
                f"y{where} holds {kind} ({held}), not the numbers a regressor trains on (a datetime64 would be read "
                f"as a raw count of its unit, 1.6e18 ns or 1.6e9 s, and predicted as bare floats). Convert y to numbers "
                f"first, {_TIME_ADVICE[kind]}"
            )


def _time_kind(dtype):
    """``"dates"``, ``"durations"``, ``"periods"`` or ``"times of day"`` for a dtype of them, else None."""
    if isinstance(dtype, pd.PeriodDtype):
        return "periods"
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        arrow = dtype.pyarrow_dtype
        if pa.types.is_duration(arrow):
            return "durations"
        if pa.types.is_time(arrow):
            return "times of day"
        return "dates" if pa.types.is_temporal(arrow) else None
    kind = getattr(dtype, "kind", None)
    return "dates" if kind == "M" else "durations" if kind == "m" else None


def _time_kind_of_values(values: np.ndarray):
    """As :func:`_time_kind`, for an object array of datetimes, Timestamps, Periods..."""
    inferred = pd.api.types.infer_dtype(values, skipna=True)
    kinds = {"datetime": "dates", "datetime64": "dates", "date": "dates", "timedelta": "durations"}
    kinds.update({"timedelta64": "durations", "period": "periods", "time": "times of day"})
    return kinds.get(inferred)


def _column(y, column: int) -> str:
    """``, column j`` of a 2-D ``y``, with its name where ``y`` is a DataFrame (``, column 1 ('price')``)."""
    names = getattr(y, "columns", None)
    return f", column {column}" + (f" ({names[column]!r})" if names is not None and column < len(names) else "")


def _first_non_number(y_array: np.ndarray) -> str:
    """`` (first at row i: value)`` for the first target that is not a number, or ``""``."""
    for row, values in enumerate(y_array.reshape(len(y_array), -1)):
        for value in values:
            try:
                float(value)
            except (TypeError, ValueError):
                return f" (first at row {row}: {value!r})"
    return ""


#: below this largest |y|, a target's variance loses digits to float64 underflow (its squares fall under 1e-300)
TINY_TARGET = 1e-150


def standardization(y2d: np.ndarray, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation of regression targets, refused where they overflow.

    Finite targets from about 1e154 up overflow float64 in the variance; scaled by an
    infinite spread, every prediction would come back as inf or nan. Targets below about
    1e-154 underflow it instead (a spread of 0, every prediction on the wrong scale), so a
    column of such targets is measured in units of its largest value.

    Parameters
    ----------
    y2d : ndarray of shape (n_samples, n_targets), finite float64
    weights : ndarray of shape (n_samples,) with a positive sum, or None
        Row weights of the mean and of the spread around it.

    Returns
    -------
    mean, std : ndarray of shape (n_targets,)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = _moments(y2d, weights)
    bad = ~(np.isfinite(mean) & np.isfinite(std))
    if bad.any():
        column = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"y's mean or standard deviation overflows float64 (target {column}, largest |y| "
            f"{np.abs(y2d[:, column]).max():.3g}); rescale the target (e.g. divide it by a power of ten or take its log)"
        )
    peak = np.abs(y2d).max(axis=0) if len(y2d) else np.zeros(y2d.shape[1])
    tiny = (peak > 0) & (peak < TINY_TARGET)
    if tiny.any():
        units_mean, units_std = _moments(y2d[:, tiny] / peak[tiny], weights)
        mean, std = mean.copy(), std.copy()
        mean[tiny], std[tiny] = units_mean * peak[tiny], units_std * peak[tiny]
    return mean, std


def _moments(y2d: np.ndarray, weights) -> tuple[np.ndarray, np.ndarray]:
    """Per-column (weighted) mean and standard deviation."""
    mean = np.average(y2d, axis=0, weights=weights)
    return mean, np.sqrt(np.average(np.square(y2d - mean), axis=0, weights=weights))


def float32_target(scaled: np.ndarray, y2d: np.ndarray) -> np.ndarray:
    """Regression targets as the float32 the network trains on, refused where they leave float32's range.

    Without ``standardize_target`` a target beyond about 3.4e38 becomes inf in float32, and the fit
    would only fail later on a non-finite loss or gradient that never names the target.

    Parameters
    ----------
    scaled : ndarray of shape (n_samples, n_targets), float64
        The targets as the network will read them (standardised or not).
    y2d : ndarray of shape (n_samples, n_targets)
        The targets as given; the error quotes them.

    Returns
    -------
    ndarray of shape (n_samples, n_targets), float32

    Raises
    ------
    ValueError
        Naming the first row (and target) whose value does not fit in float32.
    """
    with np.errstate(over="ignore"):
        encoded = scaled.astype(np.float32)
    bad = ~np.isfinite(encoded)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"y holds {y2d[row, column]:.6g} at row {row}{f' (target {column})' if y2d.shape[1] > 1 else ''}, beyond float32's "
            f"range (about 3.4e38), in which the network trains; {int(bad.sum())} value(s) are that large. Use "
            "standardize_target=True (the default), or rescale the target (e.g. divide it by a power of ten or take its log)"
        )
    return encoded
