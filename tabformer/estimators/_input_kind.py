"""Predict-time input of another kind than ``fit`` read (images to a text model, a table to an image model).

Each tokenizer refused such input on its own terms, some in words that did not point at the mix-up: a text
classifier given a (5, 8, 8) image array said ``row 0 holds a non-str word [0.86, 0.31, ...]``. The kinds are
compared first, and the message names both. Only clear mismatches are refused here: a DataFrame can hold a text
model's columns, a path can name a Parquet file, so anything else is left to the tokenizer's own checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tokenizers.detect import looks_like_images

__all__ = ["check_input_kind", "check_tokens", "refuse_a_dict"]

#: why a dict of columns is refused: every estimator reads one as tokens
_DICT_OF_COLUMNS = "tabformer reads a dict as tokens (a tokenizer's output); pass columns as a DataFrame: pd.DataFrame(X)"


def refuse_a_dict(X, owner: str, method: str = "fit") -> None:
    """Refuse a dict of columns given to ``fit``: as scikit-learn's estimators, columns come as a DataFrame.
    A dict of token arrays (numbers: a tokenizer's output, as benchmarks continue a fit on) passes.

    ``fit`` counted a dict's keys as its rows ("X has 14 samples but y has 100").
    """
    if isinstance(X, dict) and not all(_holds_numbers(value) for value in X.values()):
        raise TypeError(f"{owner}.{method}() got X as a dict (keys {list(X)[:5]}); {_DICT_OF_COLUMNS}")


def _holds_numbers(value) -> bool:
    """Whether a dict's value is a token array: numbers or booleans (numpy, torch or a nested list)."""
    if str(getattr(value, "dtype", "")).startswith("torch."):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is None:
        kind = np.asarray(value).dtype.kind if np.ndim(value) else "O"
    return kind in ("b", "i", "u", "f")


def check_tokens(X, owner: str):
    """``X`` itself (tokens: a dict of arrays, or a Dataset), after checking a dict's values are numbers.

    A dict of columns (one row's values, or lists of them) reached the model and failed in torch ("new(): invalid
    data type 'str'").
    """
    if isinstance(X, dict):
        for key, value in X.items():
            if not _holds_numbers(value):
                raise TypeError(f"{owner}: X is a dict whose {key!r} holds no token array (numbers); {_DICT_OF_COLUMNS}")
    return X


def _fitted_on(tokenizer) -> str | None:
    # A tokenizer of the user's own may read anything whatever its ``kind`` says: only tabformer's are judged.
    if not type(tokenizer).__module__.startswith("tabformer."):
        return None
    return {"image": "images", "text": "texts", "mixed": "a DataFrame", "table": "a table"}.get(tokenizer.kind)


def _shown(X, texts: bool = False) -> str:
    if texts:
        kind = "array" if isinstance(X, np.ndarray) else type(X).__name__
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} of {len(X)} texts"
    shape = getattr(X, "shape", None)
    if isinstance(X, pd.DataFrame):
        return f"a DataFrame with columns {list(X.columns)[:8]}"
    if isinstance(X, pd.Series):
        return f"a Series of {len(X)} images"
    if shape is not None:
        return f"an array of shape {tuple(shape)}"
    return f"a {type(X).__name__} of {len(X)} images"


def _all_str(X) -> bool:
    values = X.tolist() if hasattr(X, "tolist") else X  # a Series or object array, as looks_like_images reads it
    return isinstance(values, (list, tuple)) and all(isinstance(value, str) for value in values)


def check_input_kind(tokenizer, X, owner: str) -> None:
    """Raise when ``X`` is images and the model read none, or a DataFrame and the model read images alone.

    Parameters
    ----------
    tokenizer : fitted tokenizer
        The estimator's ``tokenizer_``.
    X : object
        What predict (or transform, score) was given.
    owner : str
        The estimator's class name, for the message.

    Raises
    ------
    ValueError
        Naming what the model was fitted on and what ``X`` is.
    """
    fitted = _fitted_on(tokenizer)
    if fitted is None or isinstance(X, (str, dict)):
        return
    # A 2-D array to an image model is left to the tokenizer, whose message says how to reshape flat pixel rows.
    mismatch = looks_like_images(X) if fitted != "images" else isinstance(X, pd.DataFrame)
    if mismatch and fitted == "texts" and _all_str(X):
        return  # str ending in .jpg are texts to a text model ("nice pic.jpg", file names): it reads them as at fit
    # Texts to a table or DataFrame model: scikit-learn's "Expected 2D array, got 1D array ... reshape" misled
    # Types, not np.ndim(X): an array-like of the user's may refuse numpy's functions (scikit-learn's NotAnArray does)
    one_dim = isinstance(X, (list, tuple, pd.Series)) or (isinstance(X, np.ndarray) and X.ndim == 1)
    texts = not mismatch and fitted in ("a table", "a DataFrame") and one_dim and len(X) > 0 and _all_str(X)
    if mismatch or texts:
        shown = _shown(X, texts)
        raise ValueError(f"this {owner} was fitted on {fitted}, but X is {shown}: pass the same kind of input as to fit")
