"""Strict, early input checks shared by tokenizers and estimators.

Every error names the offending column, value or shape, so a user never has to read a
torch traceback to learn that a column went missing.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import scipy.sparse as sp


def as_frame(X, *, what: str = "X") -> tuple[pd.DataFrame, bool]:
    """Return ``(frame, had_names)`` for a DataFrame or a 2-D array-like.

    Arrays get columns ``x0 .. x{k-1}``; ``had_names`` is True only for DataFrames.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_samples, n_features)
        Dense input; a DataFrame whose column names are not all str gets ``x0 ..`` names.
    what : str, default="X"
        Name of the input in error messages.

    Returns
    -------
    frame : DataFrame of shape (n_samples, n_features)
    had_names : bool
        Whether ``X`` was a DataFrame with str column names (sklearn's ``feature_names_in_`` rule).

    Raises
    ------
    TypeError
        If ``X`` is sparse.
    ValueError
        If ``X`` is 0-D, 1-D or more than 2-D, complex, has no row or no column, or has
        duplicate column names.
    """
    if sp.issparse(X):
        raise TypeError(
            f"Sparse data was passed as {what}, but dense data is required: tabformer does not "
            "support sparse input. Use X.toarray() or a DataFrame."
        )
    if isinstance(X, pd.DataFrame):
        frame, had_names = numbers_as_numbers(X), True
        duplicated = pd.Index(frame.columns)[pd.Index(frame.columns).duplicated()].unique().tolist()
        if duplicated:
            raise ValueError(f"{what} has duplicate column name(s) {duplicated}; every column needs its own name")
        if not all(isinstance(c, str) for c in frame.columns):
            # sklearn's rule: feature names are only recorded when every name is a string.
            frame = frame.set_axis([f"x{i}" for i in range(frame.shape[1])], axis=1)
            had_names = False
    else:
        if isinstance(X, pd.Series) or (hasattr(X, "ndim") and X.ndim == 1) or _is_flat_list(X):
            raise ValueError(
                f"Expected 2D array, got 1D array instead: {what} must be (n_samples, n_features). "
                "Reshape your data either using X.reshape(-1, 1) if it has a single feature or "
                "X.reshape(1, -1) if it contains a single sample."
            )
        array = np.asarray(X)
        if isinstance(X, (list, tuple)) and array.ndim == 2 and array.dtype.kind in "US":
            # numpy gives rows like [1.5, "red"] one common dtype (str), so the numbers would
            # read as categories; as objects each column gets its own dtype, as in a DataFrame.
            array = np.asarray(X, dtype=object)
        if array.ndim == 0:
            raise ValueError(f"Expected 2D array, got scalar array instead: {what}={array!r}")
        if array.ndim != 2:
            raise ValueError(f"Expected 2D array, got {array.ndim}D array instead: {what} has shape {array.shape}")
        if array.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {what} holds complex numbers")
        if array.dtype == object:
            # pd.NA (a nullable column's, through np.asarray or sklearn's check_array(dtype=None), as
            # BaggingClassifier does) keeps a column of numbers object under infer_objects: read as
            # categories. As None, missing cells infer as NaN does.
            array = np.where(pd.isna(array), None, array)
        frame, had_names = pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])]), False
        if array.dtype == object:
            frame = frame.infer_objects()
    if frame.shape[0] == 0:
        raise ValueError(f"{what} has 0 sample(s) (shape={frame.shape}) while a minimum of 1 is required.")
    if frame.shape[1] == 0:
        raise ValueError(f"{what} has 0 feature(s) (shape={frame.shape}) while a minimum of 1 is required.")
    return frame, had_names


#: pandas' names (``infer_dtype``) for object columns that hold only real numbers
_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "decimal")


def numbers_as_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its object columns of real numbers (and missing cells) as float or int columns.

    An array with the same values is read as numbers (``infer_objects`` below), and so is a column of
    the same values in a float dtype. In an object dtype (sklearn's ``SimpleImputer(...).set_output(
    transform="pandas")`` returns every column so; ``Decimal`` from SQL; ``pd.DataFrame(X.to_numpy())``)
    they were read as categories, one id per value and every new value unseen: the model fell to the
    majority class. ``categorical_columns`` still makes such a column categorical.

    Parameters
    ----------
    frame : DataFrame of shape (n_samples, n_features)

    Returns
    -------
    DataFrame of shape (n_samples, n_features)
        ``frame`` itself where no column changes, else a copy.
    """
    converted = {}
    for position, (_, values) in enumerate(frame.items()):
        kind = pd.api.types.infer_dtype(values, skipna=True) if values.dtype == object else None
        if kind in _NUMBER_KINDS:
            missing = values.isna()
            whole = kind == "integer" and not missing.any()
            converted[position] = values.astype("int64") if whole else values.where(~missing, np.nan).astype("float64")
    if not converted:
        return frame
    frame = frame.copy()
    for position, values in converted.items():
        frame.isetitem(position, values)
    return frame


def _is_flat_list(X) -> bool:
    return isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(v, (numbers.Number, str)) or v is None for v in X)


def is_numeric_dtype(dtype) -> bool:
    """Numbers but not booleans: a bool column is categorical.

    Parameters
    ----------
    dtype : numpy or pandas dtype

    Returns
    -------
    bool
    """
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def is_categorical_dtype(dtype) -> bool:
    """Strings (object, ``str``, ``StringDtype``), pandas categories and booleans.

    Arrow dictionaries count as categories: a ``category`` column written to Parquet reads
    back as one with ``pd.read_parquet(..., dtype_backend="pyarrow")``.

    Parameters
    ----------
    dtype : numpy or pandas dtype

    Returns
    -------
    bool
    """
    return (
        pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or (isinstance(dtype, pd.ArrowDtype) and str(dtype.pyarrow_dtype).startswith("dictionary<"))
    )
