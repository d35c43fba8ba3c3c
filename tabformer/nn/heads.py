"""Heads that read the encoder's output ``h`` of shape ``(B, 1+T, D)``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ClassificationHead", "RegressionHead", "TokenClassificationHead", "TokenCrossEntropy", "mean_pool", "IGNORE_INDEX"]

#: label of positions that take no part in a per-token loss (sub-word continuations,
#: padding, [SEP], unmasked tokens in masked-token pretraining); PyTorch's default
IGNORE_INDEX = -100


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean of the outputs of CLS and every real token: ``(B, 1+T, D)``, ``(B, T)`` -> ``(B, D)``."""
    if mask is None:
        return hidden.mean(dim=1)
    weights = torch.cat([torch.ones_like(mask[:, :1]), mask], dim=1).to(hidden.dtype)[..., None]
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1)


class ClassificationHead(nn.Module):
    """Logits from the CLS embedding ``h[:, 0]``: ``Linear(act(LayerNorm(h_cls)))``.

    The normalisation and activation before the output layer follow FT-Transformer's head;
    with a post-LN encoder the input is already normalised and the extra LayerNorm is
    harmless.

    Parameters
    ----------
    d_model : int
    n_outputs : int
        Number of classes (logits) or regression targets.
    hidden : int or None, default=None
        Width of an optional hidden layer before the output layer.
    dropout : float, default=0.0
    activation : {"relu", "gelu"}, default="relu"
    pooling : {"cls", "mean"}, default="cls"
        What the head reads: the CLS output, or the mean of the outputs of CLS and every
        real token (padding excluded). Sentence-embedding models such as
        all-MiniLM-L6-v2 were trained with mean pooling, so fine-tuning them reads best
        the same way.
    """

    def __init__(
        self,
        d_model: int,
        n_outputs: int,
        hidden: int | None = None,
        dropout: float = 0.0,
        activation: str = "relu",
        pooling: str = "cls",
    ):
        super().__init__()
        activations = {"relu": nn.ReLU, "gelu": nn.GELU}
        if activation not in activations:
            raise ValueError(f"head activation must be one of {sorted(activations)}, got {activation!r}")
        if pooling not in ("cls", "mean"):
            raise ValueError(f"head pooling must be 'cls' or 'mean', got {pooling!r}")
        self.pooling = pooling
        layers = [nn.LayerNorm(d_model), activations[activation]()]
        width = d_model
        if hidden:
            layers += [nn.Linear(d_model, hidden), activations[activation]()]
            width = hidden
        if dropout:
            layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(width, n_outputs))
        self.net = nn.Sequential(*layers)

    @property
    def uses_mask(self) -> bool:
        """Whether :meth:`forward` needs the token mask (mean pooling)."""
        return self.pooling == "mean"

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden`` (B, 1+T, D), ``mask`` (B, T) bool or None -> output (B, n_outputs)."""
        if self.pooling == "cls":
            return self.net(hidden[:, 0])
        return self.net(mean_pool(hidden, mask))


class RegressionHead(ClassificationHead):
    """The CLS head with one output per regression target (same layers, other loss)."""


# ------------------------------------------------------------------ modules
class TokenClassificationHead(nn.Module):
    """Logits per token from ``h[:, 1:]`` (CLS dropped): ``(B, T, n_tags)``.

    Parameters
    ----------
    d_model : int
    n_outputs : int
    dropout : float, default=0.0
    """

    def __init__(self, d_model: int, n_outputs: int, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        self.linear = nn.Linear(d_model, n_outputs)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.linear(self.dropout(hidden[:, 1:]))


class TokenCrossEntropy(nn.Module):
    """Cross-entropy over tokens whose label is not ``IGNORE_INDEX``.

    The text embedder drops all-padding columns while training, so the logits may be
    shorter than the labels; the dropped columns only hold ignored labels.
    """

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        target = target[:, : logits.shape[1]].long()
        if not bool((target != IGNORE_INDEX).any()):
            return logits.sum() * 0.0  # a batch of empty sentences: no signal, no NaN
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=IGNORE_INDEX)
