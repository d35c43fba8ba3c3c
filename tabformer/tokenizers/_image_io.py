"""Reading images for :class:`~tabformer.tokenizers.PatchTokenizer`: numpy arrays, tensors,
PIL images, file paths, encoded bytes or nested lists of pixels become ``(H, W, C)``
arrays, and every error names the image."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import torch

from .detect import is_image_bytes, is_path, is_pil, nested_pixels, stored_image

__all__ = ["GREY_MODES", "image_header", "read_images"]

#: PIL modes read as one grey channel; any other mode is read as RGB
GREY_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F")


#: grey PIL modes deeper than 8 bits, read at their own depth (``convert("L")`` clips 16-bit
#: values to 255 and truncates floats in [0, 1] to 0)
DEEP_GREY_MODES = ("I", "I;16", "I;16B", "I;16L", "F")


def _pil_to_array(image, colour: bool | None) -> np.ndarray:
    """(H, W, C) uint8, or the native depth of a 16-bit, 32-bit or float grey image;
    ``colour=None`` keeps grey images grey and colour ones RGB."""
    if colour is None:
        colour = image.mode not in GREY_MODES
    if not colour and image.mode in DEEP_GREY_MODES:
        array = np.asarray(image).reshape(image.height, image.width, 1)
        return array.astype(array.dtype.newbyteorder("="))  # big-endian 16-bit TIFFs: torch reads native order only
    return np.asarray(image.convert("RGB" if colour else "L")).reshape(image.height, image.width, -1)


def _check_pixel_array(array: np.ndarray, what: str) -> None:
    if np.iscomplexobj(array):
        raise ValueError(f"{what} has complex pixels (dtype {array.dtype}); pass real pixel values")
    if 0 in array.shape[-3:-1]:
        raise ValueError(f"{what} is empty: its height x width is {array.shape[-3]}x{array.shape[-2]}")


def _unwrap_stored(item):
    stored = stored_image(item)
    return item if stored is None else stored


def image_header(item) -> tuple | None:
    """``(H, W, C)`` of one image, reading only the header of a file or of encoded bytes.

    ``C`` is 1 for a grey image and 3 otherwise (as :func:`read_images` reads it); ``None``
    when ``item`` is no image or its file cannot be opened (reading it raises later,
    naming the file).

    Parameters
    ----------
    item : object
        An array or tensor, a PIL image, a path, encoded bytes, a Hugging Face image dict
        or nested lists of pixels.

    Returns
    -------
    tuple of int or None
    """
    item = _unwrap_stored(item)
    if is_path(item) or is_image_bytes(item):
        from PIL import Image

        try:
            with Image.open(io.BytesIO(bytes(item)) if is_image_bytes(item) else item) as image:  # lazy: the header only
                return image.height, image.width, 1 if image.mode in GREY_MODES else 3
        except (OSError, ValueError):
            return None
    if is_pil(item):
        return item.height, item.width, 1 if item.mode in GREY_MODES else 3
    if isinstance(item, torch.Tensor):
        item = item.detach().cpu().numpy()
    array = item if isinstance(item, np.ndarray) and item.dtype != object else nested_pixels(item)
    if array is None or array.ndim not in (2, 3):
        return None
    return int(array.shape[0]), int(array.shape[1]), 1 if array.ndim == 2 or array.shape[2] == 1 else 3


def _read_item(item, index: int, colour: bool | None) -> np.ndarray:
    """One image as an (H, W, C) array of its native dtype; errors name the item."""
    item = _unwrap_stored(item)
    if is_pil(item):
        return _pil_to_array(item, colour)
    if is_image_bytes(item):
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(bytes(item))) as image:
                image.load()
                return _pil_to_array(image, colour)
        except (UnidentifiedImageError, OSError) as error:
            raise ValueError(f"image {index}: its {len(item)} bytes cannot be read as an image ({error})") from None
    pixels = nested_pixels(item)
    if pixels is not None:
        item = pixels
    if isinstance(item, (str, os.PathLike)):
        from PIL import Image, UnidentifiedImageError

        path = Path(item)
        try:
            with Image.open(path) as image:
                image.load()
                return _pil_to_array(image, colour)
        except FileNotFoundError:
            # A text given to an image model read as a path; name the likelier mix-up where the name is no image file's
            hint = "" if is_path(str(path)) else " (no image file's name: a text? this model reads images or their paths)"
            raise ValueError(f"image {index}: file {str(path)!r} does not exist{hint}") from None
        except (UnidentifiedImageError, OSError) as error:
            raise ValueError(f"image {index}: file {str(path)!r} cannot be read as an image ({error})") from None
    array = item.detach().cpu().numpy() if isinstance(item, torch.Tensor) else np.asarray(item)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise ValueError(f"image {index} is not numeric (dtype {array.dtype}); expected pixels, a PIL image or a file path")
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim == 3 and array.shape[-1] in (1, 3):
        _check_pixel_array(array, f"image {index}")
        return array
    raise ValueError(f"image {index} has shape {array.shape}; expected (H, W) grey or (H, W, C) with C = 1 or 3, channels last")


def read_images(X, colour: bool | None = None):
    """Return an (N, H, W, C) array when ``X`` is one, else a list of (H, W, C) arrays."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    if hasattr(X, "tolist") and not isinstance(X, np.ndarray):
        X = X.tolist()  # pandas Series of paths or images
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim == 3 and X.shape[-1] == 3:
            # One colour image given alone reads as H grey images 3 pixels wide; where the tokenizer
            # resizes (image_size set) nothing else catches it, and predict answered H rows.
            raise ValueError(
                f"X of shape {X.shape} reads as {X.shape[0]} grey images {X.shape[1]}x3 pixels; "
                "if X is one colour image (H, W, 3), pass [X] or X[None]"
            )
        if X.ndim == 3:
            X = X[..., None]
        if X.ndim == 4:
            if X.shape[-1] in (1, 3):
                if not len(X):  # as a list of none: an empty batch would fail deep in predict (IndexError)
                    raise ValueError(f"got 0 images (an array of shape {X.shape}); at least 1 is required")
                _check_pixel_array(X, "every image")
                return X
            hint = " It looks channels-first: pass X.transpose(0, 2, 3, 1)." if X.shape[1] in (1, 3) else ""
            raise ValueError(
                f"images must be (N, H, W) grey or (N, H, W, C) with C = 1 or 3 channels last; got shape {X.shape}.{hint}"
            )
        what = " (a table? flat pixel rows must be reshaped to (N, H, W))" if X.ndim == 2 else ""
        raise ValueError(f"images must be a 3-D (N, H, W) or 4-D (N, H, W, C) array; got shape {X.shape}{what}")
    if isinstance(X, np.ndarray):
        X = list(X)
    if not isinstance(X, (list, tuple)):
        raise TypeError(f"images must be a numpy array, a list of arrays, PIL images or file paths; got {type(X).__name__}")
    if not X:
        raise ValueError("got 0 images; at least 1 is required")
    return [_read_item(item, index, colour) for index, item in enumerate(X)]
