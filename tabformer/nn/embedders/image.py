"""Images as tokens: normalise, cut ``P x P`` patches with a strided convolution (ViT),
optionally after a small convolutional stem trained with the model, or take the cells of a
pretrained CNN's feature map (hybrid ViT), and add learned 2-D grid positions."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..positions import GridPositions
from .augment import Augmented
from .backbone import load_backbone
from .feature_cache import CachedStemModule, FrozenFeatureCache, clear_feature_cache

__all__ = ["PatchEmbedder", "HybridEmbedder", "PixelNorm", "make_conv_stem", "shift_images"]


# ----------------------------------------------------------------------------- embedders
class PixelNorm(nn.Module):
    """Per-channel normalisation ``(pixels - mean) / std`` with fixed (buffer) statistics.

    Parameters
    ----------
    mean, std : sequence of float
        One value per channel ``C``.
    """

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.as_tensor(np.asarray(std), dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, pixels):
        """Normalise ``pixels`` of shape (B, C, H, W); returns the same shape."""
        return (pixels - self.mean) / self.std


def shift_images(pixels: torch.Tensor, max_shift: int) -> torch.Tensor:
    """Translate each image by its own random offset in ``[-max_shift, max_shift]`` (zero fill).

    Parameters
    ----------
    pixels : Tensor of shape (B, C, H, W)
    max_shift : int
        Largest shift in pixels, per axis; ``<= 0`` returns ``pixels`` unchanged.

    Returns
    -------
    shifted : Tensor of shape (B, C, H, W)
    """
    if max_shift <= 0:
        return pixels
    batch, _, height, width = pixels.shape
    padded = nn.functional.pad(pixels, (max_shift,) * 4)
    offsets = torch.randint(0, 2 * max_shift + 1, (2, batch, 1), device=pixels.device)
    rows = offsets[0] + torch.arange(height, device=pixels.device)  # (B, H)
    cols = offsets[1] + torch.arange(width, device=pixels.device)  # (B, W)
    index = torch.arange(batch, device=pixels.device)[:, None, None]
    # Advanced indexing moves the indexed dims first: (B, H, W, C) -> (B, C, H, W).
    return padded.permute(0, 2, 3, 1)[index, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def make_conv_stem(n_channels: int, widths) -> nn.Sequential:
    """3x3 convolution, BatchNorm and GELU layers at full resolution, one per width.

    The convolutional stem of Xiao et al. (2021), "Early convolutions help transformers
    see better", with one departure: their stem strides by 2 at each layer down to the
    patch grid, while this one keeps every pixel (stride 1) and leaves the down-sampling to
    the patch projection after it, because the images it is meant for are tiny (8x8
    digits: 2x2 patches; a stride-2 layer would leave a 4x4 map before any patch is cut).

    Parameters
    ----------
    n_channels : int
        Input channels ``C``.
    widths : sequence of int
        Output channels of each layer; empty gives an identity (no layer, no parameter).

    Returns
    -------
    stem : nn.Sequential
        ``(B, C, H, W)`` -> ``(B, widths[-1], H, W)``.
    """
    layers = []
    for width in widths:
        layers += [nn.Conv2d(n_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.GELU()]
        n_channels = width
    return nn.Sequential(*layers)


class PatchEmbedder(Augmented, nn.Module):
    """Normalise, optionally run a small conv stem, cut ``P x P`` patches with a strided conv, add 2-D positions.

    ``forward(pixels)`` with ``pixels`` of shape (B, C, H, W) in ``[0, 1]`` returns
    ``(tokens (B, h*w, D), None)``: images have no padding.

    Parameters
    ----------
    n_channels : int
        Image channels ``C``.
    image_size : tuple of (int, int)
        ``(H, W)`` of every image.
    patch_size : int
        Side ``P`` of the square patches; the grid is ``(H // P, W // P)``.
    d_model : int
        Token width ``D``.
    mean, std : sequence of float
        Per-channel pixel statistics (see :class:`PixelNorm`).
    random_shift : int, default=0
        Training only: shift each image by up to this many pixels (:func:`shift_images`).
    conv_stem : sequence of int, default=()
        Widths of the :func:`make_conv_stem` layers run before the patches are cut; empty: the
        plain ViT projection of the pixels.
    """

    def __init__(self, n_channels, image_size, patch_size, d_model, mean, std, random_shift=0, conv_stem=()):
        super().__init__()
        self.image_size = tuple(image_size)
        self.random_shift = random_shift
        self.patch_size = patch_size
        self.norm = PixelNorm(mean, std)
        widths = [int(width) for width in conv_stem]
        self.stem = make_conv_stem(n_channels, widths)
        self.projection = nn.Conv2d(widths[-1] if widths else n_channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.positions = GridPositions((image_size[0] // patch_size, image_size[1] // patch_size), d_model)

    def forward(self, pixels, **ignored):
        """Embed images: ``pixels`` (B, C, H, W) -> ``(tokens (B, h*w, D), None)``.

        Raises ``ValueError`` when ``(H, W)`` is not ``image_size``; other batch keys are ignored.
        """
        if tuple(pixels.shape[-2:]) != self.image_size:
            raise ValueError(f"pixels are {tuple(pixels.shape[-2:])}, the embedder expects {self.image_size}")
        if self.augmenting:
            pixels = shift_images(pixels, self.random_shift)
        return self.positions(self.projection(self.stem(self.norm(pixels)))), None

    def __setstate__(self, state):
        super().__setstate__(state)
        if "stem" not in self._modules:  # pickled before conv stems existed: the plain ViT it was
            self._modules["stem"] = nn.Sequential()


class HybridEmbedder(Augmented, CachedStemModule):
    """Hybrid ViT: a CNN stem's feature-map cells, projected by a 1x1 conv, are the tokens.

    Grey images are replicated to the three channels the stem expects; pixels get the
    normalisation of the stem's pretraining (timm's ``pretrained_cfg``).

    Parameters
    ----------
    stem : nn.Module
        Maps ``(B, 3, H, W)`` to a ``(B, C, h, w)`` feature map (see
        :func:`~tabformer.nn.embedders.backbone.load_backbone`).
    grid_shape : tuple of (int, int)
        ``(h, w)`` of the stem's feature map.
    d_model : int
        Token width ``D``.
    image_size : tuple of (int, int)
        ``(H, W)`` of every image.
    freeze : bool, default=True
        Keep the stem's weights and BatchNorm statistics fixed.
    random_shift : int, default=0
        Training only: shift each image by up to this many pixels (:func:`shift_images`).

    Notes
    -----
    During a supervised fit, a frozen stem's feature map of each CPU image is computed once
    and then read from a :class:`~tabformer.nn.embedders.feature_cache.FrozenFeatureCache`
    (``feature_cache``, on only inside the fit loop), except in training steps with
    ``random_shift > 0`` (each epoch sees other pixels), under tracing or compilation, and
    when gradients flow to the pixels (attributions).
    """

    def __init__(self, stem: nn.Module, grid_shape, d_model, image_size, freeze: bool = True, random_shift: int = 0):
        super().__init__()
        self.stem = stem
        self.random_shift = random_shift
        self.image_size = tuple(image_size)
        self.freeze = freeze
        config = getattr(stem, "pretrained_cfg", {}) or {}
        self.norm = PixelNorm(config.get("mean", (0.5,) * 3), config.get("std", (0.5,) * 3))
        with torch.no_grad():
            channels = stem.eval()(torch.zeros(1, 3, *self.image_size)).shape[1]
        self.projection = nn.Conv2d(channels, d_model, kernel_size=1)
        self.positions = GridPositions(grid_shape, d_model)
        if freeze:
            self.stem.requires_grad_(False)
        self.feature_cache = FrozenFeatureCache()
        self.train()

    @classmethod
    def from_spec(cls, spec: dict, d_model: int, build=None) -> HybridEmbedder:
        """Build from a tokenizer's embedder spec, loading the stem with :func:`load_backbone`.

        Parameters
        ----------
        spec : dict
            ``{"backbone", "blocks", "weights", "grid_shape", "image_size", "freeze", "random_shift"}``.
        d_model : int
            Token width ``D``.
        build : callable, optional
            Unused (the signature :func:`~tabformer.nn.embedders.build_embedder` calls).

        Returns
        -------
        embedder : HybridEmbedder
        """
        stem = load_backbone(spec["backbone"], spec["blocks"], weights=spec["weights"])
        return cls(
            stem, spec["grid_shape"], d_model, spec["image_size"], freeze=spec["freeze"], random_shift=spec["random_shift"]
        )

    def train(self, mode: bool = True):
        """Set training mode; a frozen stem always stays in eval mode. Returns ``self``."""
        super().train(mode)
        if self.freeze:
            self.stem.eval()  # BatchNorm statistics stay the pretrained ones
        return self

    def forward(self, pixels, **ignored):
        """Embed images: ``pixels`` (B, C, H, W), ``C`` in {1, 3} -> ``(tokens (B, h*w, D), None)``."""
        if self._can_cache(pixels):
            features = self.feature_cache(self._stem_features, pixels)
        else:
            if self.augmenting:
                pixels = shift_images(pixels, self.random_shift)
            features = self._stem_features(pixels)
        return self.positions(self.projection(features)), None

    def _stem_features(self, pixels):
        if pixels.shape[1] == 1:
            pixels = pixels.expand(-1, 3, -1, -1)
        return self.stem(self.norm(pixels))

    def _can_cache(self, pixels) -> bool:
        shifting = self.augmenting and self.random_shift > 0
        tracing = torch.jit.is_tracing() or torch.compiler.is_compiling() or torch.onnx.is_in_onnx_export()
        fixed = self.freeze and not shifting and not tracing and not pixels.requires_grad
        return self.feature_cache.enabled and fixed and pixels.device.type == "cpu"


# The name models pickled before clear_feature_cache moved to feature_cache.py refer to.
_clear_feature_cache = clear_feature_cache
