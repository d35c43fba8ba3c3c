"""Pixel checks of :class:`~tabformer.tokenizers.PatchTokenizer`: one rule, documented in
docs/reliability.md and enforced at ``fit`` and ``transform``.

- NaN or infinite pixels raise, naming the image (one would make the fitted
  normalisation NaN and every later prediction NaN).
- Negative pixels raise: tabformer scales raw pixels to [0, 1] and would clip them to 0
  (standardised images must be passed before standardisation).
- At ``fit``, every image has the same pixel kind (integer, float or bool) and integer
  images the same depth: 8 bits (uint8, or integers up to 255) or 16 bits (uint16, or
  integers up to 65535). A wider integer dtype (numpy's default int64) is read by its
  values; its scale was once the dtype's maximum, which turned every pixel into ~1e-17 and
  every prediction into a constant.
- At ``transform``, the pixel kind must be the one seen at ``fit``, float pixels may not
  exceed twice the fitted scale and integer pixels not the fitted scale: a uint8 fit fed
  floats in [0, 1] (or a [0, 1] float fit fed 0-255 values, or 16-bit images) would
  otherwise be divided by the wrong scale silently. An input (all its chunks, at predict)
  of floats that all stay under 1 while the fitted scale is above 2 warns (it may be [0, 1]
  images for a 0-255 fit, or only dark images). An explicit ``pixel_scale`` is the user's rule and skips these checks.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._warnings import user_stacklevel
from ._columns import ColumnWarnings, gathering_warnings

__all__ = ["pixel_kind", "check_pixels", "fit_pixel_scale"]


def pixel_kind(dtype) -> str:
    """``"bool"``, ``"integer"`` or ``"float"`` for a pixel dtype.

    Parameters
    ----------
    dtype : numpy dtype

    Returns
    -------
    str
    """
    dtype = np.dtype(dtype)
    return "bool" if dtype.kind == "b" else "integer" if dtype.kind in "iu" else "float"


def integer_depth(array: np.ndarray) -> float:
    """255 or 65535: an integer image's full scale, from its dtype (uint8, uint16) or, for wider
    dtypes, from its largest value; ValueError above 16 bits."""
    if array.dtype in (np.uint8, np.uint16):
        return float(np.iinfo(array.dtype).max)
    high = int(array.max()) if array.size else 0
    for depth in (255, 65535):
        if high <= depth:
            return float(depth)
    raise ValueError(
        f"integer pixels go up to {high} (dtype {array.dtype}): tabformer reads integer images as 8-bit (0-255) "
        "or 16-bit (0-65535); set tokenizer__pixel_scale to the value that means white"
    )


def fit_pixel_scale(images) -> float:
    """The value that means white for the training images; ValueError naming two images that disagree.

    Parameters
    ----------
    images : ndarray (N, H, W, C) or list of (H, W, C) arrays

    Returns
    -------
    float
    """
    arrays = [images] if isinstance(images, np.ndarray) else images
    first = {}  # kind or depth -> the first image index showing it
    for index, array in enumerate(arrays):
        kind = pixel_kind(array.dtype)
        key = f"{integer_depth(array):.0f}-level integer" if kind == "integer" else kind
        first.setdefault(key, index)
    if len(first) > 1:
        (a, i), (b, j) = list(first.items())[:2]
        raise ValueError(
            f"image {i} has {a} pixels and image {j} {b} pixels: one scale cannot read both; convert them alike "
            "(e.g. all uint8 0-255, or all floats in [0, 1]), or set tokenizer__pixel_scale"
        )
    kind = next(iter(first)) if first else "bool"
    if kind == "bool":
        return 1.0
    if kind != "float":
        scale = integer_depth(arrays[0]) if isinstance(images, np.ndarray) else float(kind.split("-")[0])
        _warn_if_few_bits(arrays, scale)
        return scale
    return max([1.0] + [float(np.nanmax(array)) for array in arrays if array.size])


def check_pixels(images, fitted_kind: str | None = None, scale: float | None = None) -> None:
    """Raise ``ValueError`` naming the first image that breaks the pixel rule (module docstring).

    Parameters
    ----------
    images : ndarray (N, H, W, C) or list of (H, W, C) arrays
    fitted_kind : str or None
        The kind seen at fit (``pixel_kind``); None at fit, or to skip the kind check.
    scale : float or None
        The fitted pixel scale; float pixels above twice it raise, integer pixels above it
        raise. None skips that check.
    """
    batch = isinstance(images, np.ndarray)
    arrays = [images] if batch else images
    offset, peak = 0, 0.0
    for array in arrays:
        n = len(array) if batch else 1
        kind = pixel_kind(array.dtype)
        if fitted_kind is not None and kind != fitted_kind:
            raise ValueError(
                f"image {offset} has {kind} pixels (dtype {array.dtype}) but the tokenizer was fitted on {fitted_kind} "
                f"pixels; convert it the way the training images were (e.g. uint8 0-255, or floats in [0, 1]), "
                "or set tokenizer__pixel_scale to say how to scale every image"
            )
        if fitted_kind == "integer" and scale == 65535 and array.dtype == np.uint8:
            # a uint8 image cannot be a 16-bit one: divided by 65535 it would read near-black, silently
            raise ValueError(
                f"image {offset} is 8-bit (uint8) but the tokenizer was fitted on 16-bit images (0-65535); convert it "
                "the way the training images were (e.g. .astype(np.uint16) * 257), or set tokenizer__pixel_scale"
            )
        if kind == "float" and array.size:
            flat = array.reshape(n, -1)
            bad = np.flatnonzero(~np.isfinite(flat).all(axis=1))
            if bad.size:
                raise ValueError(f"image {offset + int(bad[0])} holds NaN or infinite pixels; fix or drop it")
        if kind != "bool" and array.size:
            flat = array.reshape(n, -1)
            low = flat.min(axis=1)
            if (low < 0).any():
                index = int(np.flatnonzero(low < 0)[0])
                raise ValueError(
                    f"image {offset + index} has negative pixels (min {low[index]:g}); tabformer scales raw pixels "
                    "(uint8 0-255, or floats in [0, 1]) itself and would clip them to 0: pass the images before "
                    "any standardisation"
                )
            high = flat.max(axis=1)
            if kind == "float" and scale is not None and (high > 2 * scale).any():
                index = int(np.flatnonzero(high > 2 * scale)[0])
                raise ValueError(
                    f"image {offset + index} has pixels up to {high[index]:g}, but the training images' float "
                    f"pixels went up to {scale:g}; scale it the way the training images were (e.g. divide by 255)"
                )
            if kind == "integer" and scale is not None and (high > scale).any():
                index = int(np.flatnonzero(high > scale)[0])
                raise ValueError(
                    f"image {offset + index} has pixels up to {high[index]:g} (dtype {array.dtype}), but the training "
                    f"images were {scale:.0f}-level integers; convert it to their depth (e.g. 16-bit to 8-bit: // 257)"
                )
            peak = max(peak, float(high.max()))
        offset += n
    if fitted_kind == "float" and scale is not None and scale > 2:
        # judged on the whole input at predict: a chunk of dark images alone is no sign of [0, 1] pixels
        gathered = gathering_warnings()
        tally = gathered if gathered is not None else ColumnWarnings()
        tally.add_float_peak(scale, peak)
        if gathered is None:
            tally.warn()


#: 16-bit images whose brightest pixel is under this share of white warn at fit (12-bit data stays under 1/16)
FEW_BITS_SHARE = 1 / 8


def _warn_if_few_bits(arrays, scale: float) -> None:
    """Warn when 16-bit images use a small part of their range: 12-bit data (microscopes, scanners) in uint16.

    Read as 0-65535 they stay under 6% of white: the patch embedder's normalisation copes, but the frozen
    ImageNet stem sees images that are all nearly black.
    """
    if scale != 65535.0:
        return
    high = max((int(array.max()) for array in arrays if array.size), default=0)
    if 0 < high < FEW_BITS_SHARE * scale:
        bits = max(high.bit_length(), 1)
        warnings.warn(
            f"the 16-bit images go up to {high} of 65535 ({high / scale:.1%} of white): read as 0-65535 they are nearly "
            f"black. If they hold {bits}-bit data, set tokenizer__pixel_scale={2**bits - 1} (the value that means white; "
            "tokenizer__image__pixel_scale for mixed inputs)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
