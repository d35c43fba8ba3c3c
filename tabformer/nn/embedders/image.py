"""Images as tokens: normalise, cut ``P x P`` patches with a strided convolution (ViT) or
take the cells of a CNN feature map (hybrid ViT), and add learned 2-D grid positions."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..positions import GridPositions
from .backbone import load_backbone

__all__ = ["PatchEmbedder", "HybridEmbedder", "PixelNorm", "shift_images"]


# ----------------------------------------------------------------------------- embedders
class PixelNorm(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.as_tensor(np.asarray(std), dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, pixels):
        return (pixels - self.mean) / self.std


def shift_images(pixels: torch.Tensor, max_shift: int) -> torch.Tensor:
    """Translate each image by its own random offset in ``[-max_shift, max_shift]`` (zero fill)."""
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


class PatchEmbedder(nn.Module):
    """Normalise, cut ``P x P`` patches with a strided conv, add 2-D positions.

    ``forward(pixels)`` with ``pixels`` of shape (B, C, H, W) in ``[0, 1]`` returns
    ``(tokens (B, h*w, D), None)``: images have no padding.
    """

    def __init__(self, n_channels, image_size, patch_size, d_model, mean, std, random_shift=0):
        super().__init__()
        self.image_size = tuple(image_size)
        self.random_shift = random_shift
        self.patch_size = patch_size
        self.norm = PixelNorm(mean, std)
        self.projection = nn.Conv2d(n_channels, d_model, kernel_size=patch_size, stride=patch_size)
        self.positions = GridPositions((image_size[0] // patch_size, image_size[1] // patch_size), d_model)

    def forward(self, pixels, **ignored):
        if tuple(pixels.shape[-2:]) != self.image_size:
            raise ValueError(f"pixels are {tuple(pixels.shape[-2:])}, the embedder expects {self.image_size}")
        if self.training:
            pixels = shift_images(pixels, self.random_shift)
        return self.positions(self.projection(self.norm(pixels))), None


class HybridEmbedder(nn.Module):
    """Hybrid ViT: a CNN stem's feature-map cells, projected by a 1x1 conv, are the tokens.

    Grey images are replicated to the three channels the stem expects; pixels get the
    normalisation of the stem's pretraining (timm's ``pretrained_cfg``).
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
        self.train()

    @classmethod
    def from_spec(cls, spec: dict, d_model: int, build=None) -> HybridEmbedder:
        """Build from ``{"backbone", "blocks", "weights", "grid_shape", "image_size", "freeze", "random_shift"}``."""
        stem = load_backbone(spec["backbone"], spec["blocks"], weights=spec["weights"])
        return cls(
            stem, spec["grid_shape"], d_model, spec["image_size"], freeze=spec["freeze"], random_shift=spec["random_shift"]
        )

    def train(self, mode: bool = True):
        super().train(mode)
        if self.freeze:
            self.stem.eval()  # BatchNorm statistics stay the pretrained ones
        return self

    def forward(self, pixels, **ignored):
        if self.training:
            pixels = shift_images(pixels, self.random_shift)
        if pixels.shape[1] == 1:
            pixels = pixels.expand(-1, 3, -1, -1)
        features = self.stem(self.norm(pixels))
        return self.positions(self.projection(features)), None
