"""Predict-time input of another kind than ``fit`` read (images to a text model, a table to an image model).

Each tokenizer refused such input on its own terms, some in words that did not point at the mix-up: a text
classifier given a (5, 8, 8) image array said ``row 0 holds a non-str word [0.86, 0.31, ...]``. The kinds are
compared first, and the message names both. Only clear mismatches are refused here: a DataFrame can hold a text
model's columns, a path can name a Parquet file, so anything else is left to the tokenizer's own checks.
"""

from __future__ import annotations

import pandas as pd

from ..tokenizers.detect import looks_like_images

__all__ = ["check_input_kind"]


def _fitted_on(tokenizer) -> str | None:
    # A tokenizer of the user's own may read anything whatever its ``kind`` says: only tabformer's are judged.
    if not type(tokenizer).__module__.startswith("tabformer."):
        return None
    return {"image": "images", "text": "texts", "mixed": "a DataFrame", "table": "a table"}.get(tokenizer.kind)


def _shown(X) -> str:
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
    if mismatch:
        raise ValueError(f"this {owner} was fitted on {fitted}, but X is {_shown(X)}: pass the same kind of input as to fit")
