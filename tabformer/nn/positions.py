"""Position embeddings: learned or sinusoidal for sequences (text), a learned 2-D grid for
image patches. Tables get none: their columns have identities, not an order."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "LearnedPositions",
    "SinusoidalPositions",
    "GridPositions",
    "sinusoidal_table",
    "SINUSOIDAL_SCALE",
    "saved_encoder_config",
]

#: Departure from Vaswani et al.: they multiply the embeddings by sqrt(d_model) so that the raw
#: table (RMS 1/sqrt(2) per coordinate) does not drown them; here the embeddings keep their std
#: 0.02 initialisation and the table is scaled to the same RMS as LearnedPositions' (0.02). The
#: raw table cost about ten points of accuracy on a text task (0.74 against 0.84).
SINUSOIDAL_SCALE = 0.02 * math.sqrt(2)


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """The sinusoidal position table: ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``.

    Parameters
    ----------
    length : int
        Number of positions.
    d_model : int
        Embedding width ``d`` (odd widths drop the last cosine column).

    Returns
    -------
    table : float32 Tensor of shape (length, d_model)
    """
    position = torch.arange(length, dtype=torch.float64)[:, None]
    even = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / torch.pow(10000.0, even / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return table.float()


def _check_length(position_ids: torch.Tensor, max_length: int, length: int | None) -> None:
    # ``length``: the ids are 0..length-1, checked from the shape; reading the largest id
    # back from a GPU would stall its queue on every forward pass.
    largest = length - 1 if length is not None else position_ids.max()
    if largest >= max_length:
        raise ValueError(
            f"sequence needs position {int(largest)} but the encoder was built with "
            f"max_length={max_length}; raise encoder__max_length"
        )


class LearnedPositions(nn.Module):
    """A trainable embedding per position ``0 .. max_length-1``.

    Parameters
    ----------
    max_length : int
        Number of positions (CLS included).
    d_model : int
        Embedding width ``D``.
    """

    def __init__(self, max_length: int, d_model: int):
        super().__init__()
        self.max_length = max_length
        self.embedding = nn.Embedding(max_length, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, position_ids: torch.Tensor, length: int | None = None) -> torch.Tensor:
        """Look up positions: long ``(B, L)`` (or ``(1, L)``) ids -> ``(B, L, D)`` embeddings.

        ``length``: the ids are ``0 .. length-1`` (checked without reading them). Raises
        ``ValueError`` when an id is ``>= max_length``.
        """
        _check_length(position_ids, self.max_length, length)
        return self.embedding(position_ids)


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine positions (Vaswani et al., 2017); a buffer, not a parameter.

    Parameters
    ----------
    max_length : int
        Number of positions (CLS included).
    d_model : int
        Embedding width ``D``.
    scale : float, default=SINUSOIDAL_SCALE
        Factor on the table, ``0.02 * sqrt(2)``: per-coordinate RMS 0.02, that of the token
        embeddings' and :class:`LearnedPositions`' initialisation (see :data:`SINUSOIDAL_SCALE`).
        ``1.0`` is the paper's raw table.
    """

    def __init__(self, max_length: int, d_model: int, scale: float = SINUSOIDAL_SCALE):
        super().__init__()
        self.max_length = max_length
        # A float applied in forward, not folded into the buffer: the raw table times 1.0 is
        # bit-for-bit the table models saved before the scale existed were trained with.
        self.scale = float(scale)
        self.register_buffer("table", sinusoidal_table(max_length, d_model), persistent=False)

    def forward(self, position_ids: torch.Tensor, length: int | None = None) -> torch.Tensor:
        """Look up positions: long ``(B, L)`` (or ``(1, L)``) ids -> ``(B, L, D)`` embeddings.

        ``length``: the ids are ``0 .. length-1`` (checked without reading them). Raises
        ``ValueError`` when an id is ``>= max_length``.
        """
        _check_length(position_ids, self.max_length, length)
        return self.table[position_ids] * getattr(self, "scale", 1.0)  # pickled before the scale: the raw table


def saved_encoder_config(config: dict) -> dict:
    """A saved :class:`~tabformer.nn.TransformerEncoder` config, as the constructor must read it.

    The sinusoidal table is a non-persistent buffer, so its scale lives in the config only.
    A config with sinusoidal positions saved before ``positions_scale`` existed has no such
    key: that model was trained with the raw table, and gets scale 1.0 back (a missing key
    would otherwise mean today's default and change its predictions).

    Parameters
    ----------
    config : dict
        ``TransformerEncoder.config`` as read from a saved file.

    Returns
    -------
    config : dict
        ``config``, with ``positions_scale=1.0`` added where it predates the setting.
    """
    if config.get("positions") == "sinusoidal" and "positions_scale" not in config:
        return {**config, "positions_scale": 1.0}
    return config


class GridPositions(nn.Module):
    """One learned embedding per grid cell, ``(1, h*w, D)``, ViT-style (std 0.02).

    Parameters
    ----------
    grid_shape : tuple of (int, int)
        The token grid ``(h, w)``.
    d_model : int
        Embedding width ``D``.
    """

    def __init__(self, grid_shape, d_model):
        super().__init__()
        self.grid_shape = tuple(grid_shape)
        self.weight = nn.Parameter(torch.zeros(1, grid_shape[0] * grid_shape[1], d_model))
        nn.init.trunc_normal_(self.weight, std=0.02)

    def forward(self, feature_map: torch.Tensor) -> torch.Tensor:
        """Flatten a feature map into tokens and add the grid positions.

        Parameters
        ----------
        feature_map : Tensor of shape (B, D, h, w)
            ``(h, w)`` must equal ``grid_shape``.

        Returns
        -------
        tokens : Tensor of shape (B, h*w, D)
            Row-major order.

        Raises
        ------
        ValueError
            If the map's grid is not ``grid_shape``.
        """
        if tuple(feature_map.shape[-2:]) != self.grid_shape:
            raise ValueError(f"token grid is {tuple(feature_map.shape[-2:])}, the embedder was built for {self.grid_shape}")
        return feature_map.flatten(2).transpose(1, 2) + self.weight.to(feature_map.dtype)
