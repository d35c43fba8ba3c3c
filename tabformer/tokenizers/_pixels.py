"""Pixel checks of :class:`~tabformer.tokenizers.PatchTokenizer`: one rule, documented in
docs/reliability.md and enforced at ``fit`` and ``transform``.

- NaN or infinite pixels raise, naming the image (one would make the fitted
  normalisation NaN and every later prediction NaN).
- Negative pixels raise: tabformer scales raw pixels to [0, 1] and would clip them to 0
  (standardised images must be passed before standardisation).
- At ``transform``, the pixel kind (integer, float or bool) must be the one seen at
  ``fit``, and float pixels may not exceed twice the fitted scale: a uint8 fit fed floats
  in [0, 1] (or a [0, 1] float fit fed 0-255 values) would otherwise be divided by the wrong
  scale silently. An explicit ``pixel_scale`` is the user's rule and skips the kind check.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pixel_kind", "check_pixels"]


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


def check_pixels(images, fitted_kind: str | None = None, scale: float | None = None) -> None:
    """Raise ``ValueError`` naming the first image that breaks the pixel rule (module docstring).

    Parameters
    ----------
    images : ndarray (N, H, W, C) or list of (H, W, C) arrays
    fitted_kind : str or None
        The kind seen at fit (``pixel_kind``); None at fit, or to skip the kind check.
    scale : float or None
        The fitted pixel scale; float pixels above twice it raise. None skips that check.
    """
    batch = isinstance(images, np.ndarray)
    arrays = [images] if batch else images
    offset = 0
    for array in arrays:
        n = len(array) if batch else 1
        kind = pixel_kind(array.dtype)
        if fitted_kind is not None and kind != fitted_kind:
            raise ValueError(
                f"image {offset} has {kind} pixels (dtype {array.dtype}) but the tokenizer was fitted on {fitted_kind} "
                f"pixels; convert it the way the training images were (e.g. uint8 0-255, or floats in [0, 1]), "
                "or set tokenizer__pixel_scale to say how to scale every image"
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
            if kind == "float" and scale is not None:
                high = flat.max(axis=1)
                if (high > 2 * scale).any():
                    index = int(np.flatnonzero(high > 2 * scale)[0])
                    raise ValueError(
                        f"image {offset + index} has pixels up to {high[index]:g}, but the training images' float "
                        f"pixels went up to {scale:g}; scale it the way the training images were (e.g. divide by 255)"
                    )
        offset += n
