"""The cells of a :class:`~tabformer.tokenizers.MixedTokenizer`'s frame: checked, read per column, fitted on
where present (errors naming the frame's row), and what a missing text or image cell is tokenized as."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from .._validation import numbers_as_numbers
from ._texts import in_text_columns
from .base import expecting_name
from .detect import is_missing

__all__ = ["check_frame", "column_values", "fit_on_present_cells", "missing_placeholder", "with_column_context"]


def check_frame(X) -> pd.DataFrame:
    """``X`` as the frame a MixedTokenizer reads: a DataFrame with rows and unique str column names."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"{expecting_name('MixedTokenizer')} reads a pandas DataFrame (one column per input), got {type(X).__name__}"
        )
    if X.shape[0] == 0:
        raise ValueError("X has 0 rows; at least 1 is required")
    bad = [c for c in X.columns if not isinstance(c, str)]
    if bad:
        raise ValueError(f"column names must be str, got {bad[:3]}")
    duplicated = sorted(set(X.columns[X.columns.duplicated()]))
    if duplicated:
        raise ValueError(f"column name(s) {duplicated} appear more than once in X")
    return numbers_as_numbers(X)  # object columns of numbers, as a table's (``as_frame``)


def column_values(frame: pd.DataFrame, column, kind: str) -> list:
    """The column's cells, ``None`` where missing; non-text values in a text column raise."""
    values = [None if is_missing(v) else v for v in frame[column].tolist()]
    if kind == "text":
        wrong = next(((i, v) for i, v in enumerate(values) if v is not None and not isinstance(v, str)), None)
        if wrong is not None:
            raise ValueError(f"text column {column!r} holds a {type(wrong[1]).__name__} at row {wrong[0]}: {wrong[1]!r}")
    return values


def with_column_context(columns, call, name="text"):
    """``call()``, its warnings naming ``columns`` (and the setting ``name`` routes), its errors prefixed with them."""
    try:
        return in_text_columns(columns, call, name)
    except ValueError as error:
        raise ValueError(f"column(s) {columns}: {error}") from None


def fit_on_present_cells(tokenizer, frame: pd.DataFrame, columns: list, kind: str) -> dict:
    """Fit a text or image sub-tokenizer on the present cells of ``columns``, one after another.

    Its errors count the values it was given ("image 7"); they name the frame's row and column instead.
    Returns each column's count of present cells.
    """
    cells = [
        (column, row, value)
        for column in columns
        for row, value in enumerate(column_values(frame, column, kind))
        if value is not None
    ]
    values = [value for _, _, value in cells]
    if not values:
        raise ValueError(f"{kind} column(s) {columns} hold no value at fit time (all missing)")
    try:
        with_column_context(columns, lambda: tokenizer.fit(values))
    except ValueError as error:
        raise ValueError(_at_rows(str(error), [(column, row) for column, row, _ in cells])) from None
    counts = Counter(column for column, _, _ in cells)
    return {column: counts[column] for column in columns}


def _at_rows(message: str, cells: list) -> str:
    """An image tokenizer's error about ``image i`` of the values it was given, naming the frame's row and column."""

    def where(match):
        index = int(match.group(1))
        if index >= len(cells):
            return match.group(0)
        column, row = cells[index]
        return f"the image of row {row} (column {column!r})"

    return re.sub(r"\bimage (\d+)\b", where, message)


def missing_placeholder(tokenizer, kind: str):
    """What a missing cell is tokenized as before its segment is masked out.

    Parameters
    ----------
    tokenizer : BaseTokenizer
        The fitted text or image sub-tokenizer of the cell's column.
    kind : {"text", "image"}
        The column's segment kind.

    Returns
    -------
    str or ndarray
        ``""`` for text; for images, a black image the tokenizer accepts: of the training
        images' size when it resizes only that size (the estimators' upscale to the
        pretrained stem, ``accept_any_size=False``), else of its output size, with the
        fitted channels and pixel dtype.
    """
    if kind == "text":
        return ""
    dtype = {"float": np.float32, "bool": np.bool_}.get(getattr(tokenizer, "pixel_kind_", None), np.uint8)  # as fitted
    size = getattr(tokenizer, "input_size_", None) or tokenizer.image_size_
    return np.zeros((*size, tokenizer.n_channels_), dtype=dtype)
