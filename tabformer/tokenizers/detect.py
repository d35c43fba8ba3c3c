"""Column-kind detection for ``tokenizer="auto"`` on a DataFrame.

Each column becomes one of ``"text"``, ``"image"``, ``"categorical"``, ``"numeric"`` or ``"datetime"``:

- numeric dtypes (not bool) are numeric; datetime dtypes (time zones, Arrow dates included) are datetime;
- bool and pandas ``category`` columns are categorical (a category dtype is the user's
  explicit choice, whatever its values look like);
- object / string columns are read by their values: numpy arrays, tensors, PIL images,
  image-file paths, encoded image bytes (PNG, JPEG... as a Parquet binary column, or
  Hugging Face datasets' ``{"bytes", "path"}`` image struct) and nested lists of pixels
  (an array written to Parquet reads back as lists of lists) are images; strings are
  text when they have many distinct values (more than ``max_categories``), or when most
  rows are distinct *and* hold several words (names, titles, sentences); other strings
  are categorical.

Anything else (periods, intervals, a column holding no value at all, a mix of strings
and numbers) raises an error naming the column, so nothing is guessed silently.

The whole-input checks behind ``tokenizer="auto"`` live here too: images
(:func:`looks_like_images`), texts (:func:`looks_like_text`), pre-split sentences
(:func:`is_word_lists`).
"""

from __future__ import annotations

import io
import numbers
import os
from collections import Counter

import numpy as np
import pandas as pd
import torch

from .._validation import is_categorical_dtype, is_numeric_dtype

__all__ = [
    "KINDS",
    "infer_column_kind",
    "infer_column_kinds",
    "looks_like_images",
    "looks_like_text",
    "is_word_lists",
    "holds_images",
    "is_image_bytes",
    "is_path",
    "is_pil",
    "nested_pixels",
    "stored_image",
]

#: every kind :func:`infer_column_kind` can return
KINDS = ("text", "image", "categorical", "numeric", "datetime")

#: a string column is text when at least this share of its non-missing values is distinct...
TEXT_DISTINCT_SHARE = 0.5
#: ...and its values hold at least this many words on average
TEXT_MEAN_WORDS = 1.5


#: raster formats Pillow reads (its registry also lists .pdf, .h5 or .mpeg, which are no image paths)
IMAGE_EXTENSIONS = (
    *(".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".bmp", ".dib", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm"),
    *(".pbm", ".pnm", ".avif", ".heic", ".heif", ".ico", ".tga", ".jp2", ".j2k", ".qoi", ".pcx", ".sgi", ".apng"),
)


# ----------------------------------------------------------------------------- input reading
def is_pil(item) -> bool:
    """Whether ``item`` is a PIL image (False when Pillow is not installed).

    Parameters
    ----------
    item : object

    Returns
    -------
    bool
    """
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow ships with torchvision
        return False
    return isinstance(item, Image.Image)


def is_path(item) -> bool:
    """Whether ``item`` is a str or path whose name ends in an image file extension.

    Parameters
    ----------
    item : object

    Returns
    -------
    bool
        True for e.g. ``"cat.PNG"`` or ``Path("a/b.jpg")``; the file need not exist.
    """
    return isinstance(item, (str, os.PathLike)) and str(item).lower().endswith(IMAGE_EXTENSIONS)


#: leading bytes of the encoded formats a bytes value is read as an image for; WebP is ``RIFF`` + size +
#: ``WEBP``, and BMP ``BM`` + size + 4 reserved zero bytes (``BM`` alone would take ``b"BMW"`` for an image)
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")


def is_image_bytes(item) -> bool:
    """Whether ``item`` is bytes starting the way an encoded PNG, JPEG, GIF, TIFF, BMP or WebP file does.

    Parameters
    ----------
    item : object

    Returns
    -------
    bool
        True for the bytes of an image file, as a Parquet binary column reads back.
    """
    if not isinstance(item, (bytes, bytearray, memoryview)):
        return False
    head = bytes(item[:12])
    webp = head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    bmp = head[:2] == b"BM" and head[6:10] == bytes(4)
    if head.startswith(IMAGE_MAGIC) or webp or bmp:
        return True
    return len(item) >= MIN_OTHER_IMAGE_BYTES and _pillow_reads_header(item)


#: bytes of another format (AVIF, JPEG 2000, ICO, TGA...) are asked of Pillow from this length on:
#: a short bytes value is a category, and Pillow's loose formats would claim some
MIN_OTHER_IMAGE_BYTES = 64


def _pillow_reads_header(item) -> bool:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(bytes(item))):  # lazy: the header only
            return True
    except Exception:  # noqa: BLE001 - Pillow's plugins raise many kinds on bytes that are no image
        return False


def stored_image(item):
    """What to read from Hugging Face datasets' image struct ``{"bytes": ..., "path": ...}``.

    Parameters
    ----------
    item : object

    Returns
    -------
    bytes, str or None
        The encoded bytes where there are any, else the path; ``None`` when ``item`` is no
        such dict.
    """
    if not (isinstance(item, dict) and "bytes" in item and "path" in item):
        return None
    return item["bytes"] if item["bytes"] is not None else item["path"]


def _stack_nested(item) -> np.ndarray:
    if isinstance(item, np.ndarray) and item.dtype == object:
        if item.size == 0:
            raise ValueError("an empty level")
        return np.stack([_stack_nested(part) for part in item])  # ragged levels raise ValueError
    return np.asarray(item)


def nested_pixels(item) -> np.ndarray | None:
    """A numeric ``(H, W)`` or ``(H, W, C)`` array from nested sequences, or ``None``.

    An array written to Parquet is stored as lists of lists; pandas and pyarrow read it
    back as object arrays of arrays, and a user may hold nested Python lists.

    Parameters
    ----------
    item : object

    Returns
    -------
    ndarray or None
        ``None`` unless ``item`` is a list, tuple or object array whose levels are regular
        and whose leaves are numbers, two or three levels deep, at least
        ``MIN_NESTED_SIDE`` a side (a column of equal-length point lists, such as
        polygons' ``[x, y]`` pairs, is no image).
    """
    if not (isinstance(item, (list, tuple)) or (isinstance(item, np.ndarray) and item.dtype == object)):
        return None
    try:
        array = _stack_nested(item)
    except (ValueError, TypeError):
        return None
    numeric = np.issubdtype(array.dtype, np.number) or array.dtype == bool
    return array if numeric and array.ndim in (2, 3) and min(array.shape[:2]) >= MIN_NESTED_SIDE else None


#: the shortest side nested lists are read as an image at (7x7 Fashion-MNIST is the smallest image task here)
MIN_NESTED_SIDE = 4


def looks_like_images(X) -> bool:
    """Whether ``tokenizer="auto"`` should treat ``X`` as images.

    Parameters
    ----------
    X : object
        Anything passed as ``X`` to an estimator.

    Returns
    -------
    bool
        True for 3-D/4-D numeric arrays or tensors, and for non-empty sequences of PIL
        images or 2-D/3-D arrays, and for sequences whose items are all images as a
        DataFrame column reads them (paths ending in an image file extension, encoded
        image bytes, Hugging Face image dicts, nested lists of pixels).
    """
    if isinstance(X, (np.ndarray, torch.Tensor)) and X.dtype != object:
        return X.ndim in (3, 4)
    if hasattr(X, "tolist") and not isinstance(X, np.ndarray) and getattr(X, "ndim", 1) == 1:
        X = X.tolist()  # pandas Series
    if isinstance(X, np.ndarray) and X.dtype == object and X.ndim == 1:
        X = list(X)
    if not isinstance(X, (list, tuple)) or not X:
        return False
    first = X[0]
    if is_pil(first):
        return True
    if isinstance(first, np.ndarray) and first.dtype != object:
        return first.ndim in (2, 3)
    # every item, as a DataFrame column is read: paths, bytes, Hugging Face dicts, nested lists, or a mix
    return all(_is_image_value(item) for item in X)


def looks_like_text(X) -> bool:
    """Whether ``tokenizer="auto"`` should treat ``X`` as texts.

    Parameters
    ----------
    X : object
        Anything passed as ``X`` to an estimator.

    Returns
    -------
    bool
        True for a list/tuple/1-D array/Series whose first non-missing item is a str, or whose non-missing
        items are mostly str (texts whose row 0 is a number: the text tokenizer names that row).
    """
    if not isinstance(X, (list, tuple, np.ndarray, pd.Series)) or getattr(X, "ndim", 1) != 1:
        return False  # a str or a DataFrame included
    values = X.tolist() if hasattr(X, "tolist") else X
    first = next((value for value in values if not is_missing(value)), None)
    if first is None or isinstance(first, str):
        return first is not None  # the usual case, decided on one item
    return bool(np.mean([isinstance(value, str) for value in values if not is_missing(value)]) > 0.5)  # a 1-D X is no table


def is_word_lists(X) -> bool:
    """Whether ``X`` is pre-split text (for tagging): a non-empty list whose first item is a list of str.

    Parameters
    ----------
    X : object
        Anything passed as ``X`` to an estimator.

    Returns
    -------
    bool
    """
    if not isinstance(X, (list, tuple)) or not X:
        return False
    return isinstance(X[0], (list, tuple)) and all(isinstance(w, str) for w in X[0])


def is_missing(value) -> bool:
    return (
        value is None or value is pd.NA or (isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isnan(value))
    )


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_image_value(value) -> bool:
    stored = stored_image(value)
    if stored is not None:
        value = stored
    if is_pil(value) or is_image_bytes(value):
        return True
    if isinstance(value, (np.ndarray, torch.Tensor)) and value.dtype != object:
        return value.ndim in (2, 3)
    return is_path(value) or nested_pixels(value) is not None


def holds_images(values: pd.Series) -> bool:
    """Whether any value of a column is an image (as :func:`infer_column_kind` reads values).

    Parameters
    ----------
    values : Series of length n_samples

    Returns
    -------
    bool
    """
    if _arrow_nested_or_binary(values.dtype):
        values = values.astype(object)
    return values.dtype == object and any(_is_image_value(v) for v in values.tolist() if not is_missing(v))


def _arrow_nested_or_binary(dtype) -> bool:
    """Arrow-backed binary, list and struct columns (``pd.read_parquet(..., dtype_backend="pyarrow")``)."""
    if not isinstance(dtype, pd.ArrowDtype):
        return False
    import pyarrow as pa

    kind = dtype.pyarrow_dtype
    return (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_list(kind)
        or pa.types.is_large_list(kind)
        or pa.types.is_fixed_size_list(kind)
        or pa.types.is_struct(kind)
    )


def infer_column_kind(values: pd.Series, max_categories: int = 100) -> str:
    """The kind of one column: ``"text"``, ``"image"``, ``"categorical"``, ``"numeric"`` or ``"datetime"``.

    Parameters
    ----------
    values : Series of length n_samples
        The column; its ``name`` appears in errors.
    max_categories : int, default=100
        A string column with more distinct values than this is text.

    Returns
    -------
    kind : {"text", "image", "categorical", "numeric", "datetime"}

    Raises
    ------
    ValueError
        Naming the column, when its kind cannot be told (see the module docstring).
    """
    name = values.name
    dtype = values.dtype
    if is_numeric_dtype(dtype):
        return "numeric"
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return "categorical"
    if pd.api.types.is_datetime64_any_dtype(dtype):  # a table column: TabularTokenizer reads its calendar parts
        return "datetime"
    if _arrow_nested_or_binary(dtype):
        values = values.astype(object)  # bytes, lists, dicts: read by their values below
    elif not is_categorical_dtype(dtype):  # periods, intervals...
        raise ValueError(
            f"column {name!r} has dtype {dtype}, which tabformer cannot tokenize; convert it to numbers, strings or a category"
        )
    present = [v for v in values.tolist() if not is_missing(v)]
    if not present:
        raise ValueError(f"column {name!r} holds only missing values: its kind cannot be detected; drop it or name its kind")
    if all(isinstance(v, str) for v in present):
        # The common case (categories, texts, image paths), decided on the distinct strings:
        # a 4,096-row table's 8 string columns took 0.14 s value by value.
        return _string_column_kind(Counter(present), len(present), max_categories, name)
    images = [_is_image_value(v) for v in present]
    if all(images):
        return "image"
    if any(images):
        row, odd = next((row, v) for row, v in enumerate(values.tolist()) if not is_missing(v) and not _is_image_value(v))
        raise ValueError(f"column {name!r} mixes images with other values such as {_short(odd)} (row {row})")
    if any(isinstance(v, str) for v in present):  # not all: the all-strings case returned above
        row, odd = next((row, v) for row, v in enumerate(values.tolist()) if not (is_missing(v) or isinstance(v, str)))
        raise ValueError(
            f"column {name!r} mixes strings with {type(odd).__name__} values such as {_short(odd)} (row {row}), so its kind "
            f"cannot be told. Fix that cell (None marks it missing) or convert the column to strings (X[{name!r}]"
            '.astype("string")); to keep it as categories as it is, list it in categorical_columns'
        )
    unhashable = next((v for v in present if not _hashable(v)), None)
    if unhashable is not None:
        raise ValueError(
            f"column {name!r} holds {type(unhashable).__name__} values such as {str(unhashable)[:40]!r}, which are "
            "neither images (2-D/3-D arrays or nested lists of numbers, PIL images, paths, image bytes) nor categories; "
            "expand or drop it"
        )
    return "categorical"  # e.g. an object column of Python bools or tuples


def _short(value, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _string_column_kind(counts: Counter, n_present: int, max_categories: int, name=None) -> str:
    """The kind of a column of strings, from each distinct string's count."""
    paths = sum(count for value, count in counts.items() if is_path(value))
    if paths == n_present:
        return "image"
    if paths * 2 > n_present:
        # Mostly image paths: one "" or a name without an extension would otherwise make the
        # whole column categories or text, its file names learnt as words.
        odd = next(value for value in counts if not is_path(value))
        raise ValueError(
            f"column {name!r} holds image paths ({paths} of {n_present} values) and other strings such as {odd!r}; "
            "fix those (a path with an image extension) or mark them missing (None)"
        )
    # Blank texts count as missing, as None does: 70 titles and 30 "" were categories, with None text
    filled = {value: count for value, count in counts.items() if value.strip()}
    n_filled = sum(filled.values())
    if len(filled) > max_categories:
        return "text"
    mean_words = sum(len(value.split()) * count for value, count in filled.items()) / max(n_filled, 1)
    if n_filled and len(filled) >= TEXT_DISTINCT_SHARE * n_filled and mean_words >= TEXT_MEAN_WORDS:
        return "text"
    return "categorical"


def infer_column_kinds(frame: pd.DataFrame, max_categories: int = 100) -> dict:
    """``{column: kind}`` for every column of ``frame``, in column order.

    Parameters
    ----------
    frame : DataFrame of shape (n_samples, n_columns)
    max_categories : int, default=100
        A string column with more distinct values than this is text.

    Returns
    -------
    kinds : dict of column to {"text", "image", "categorical", "numeric", "datetime"}

    Raises
    ------
    ValueError
        Naming the first column whose kind cannot be told.

    Examples
    --------
    >>> import pandas as pd
    >>> infer_column_kinds(pd.DataFrame({"age": [1.0, 2.0], "city": ["a", "b"]}))
    {'age': 'numeric', 'city': 'categorical'}
    """
    return {column: infer_column_kind(frame[column], max_categories) for column in frame.columns}
