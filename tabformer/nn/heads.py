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
    """Mean of the outputs of CLS and every real token (padding excluded).

    Parameters
    ----------
    hidden : Tensor of shape (B, 1+T, D)
        Encoder output, CLS first.
    mask : bool Tensor of shape (B, T), or None
        ``True`` = real token (CLS column excluded); ``None``: plain mean over ``1+T``.

    Returns
    -------
    pooled : Tensor of shape (B, D)
    """
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
        Token width ``D`` of the encoder output.
    n_outputs : int
        Number of classes (logits) or regression targets.
    hidden : int or None, default=None
        Width of an optional hidden layer before the output layer.
    dropout : float, default=0.0
        Dropout before the output layer; ``0`` builds no dropout module.
    activation : {"relu", "gelu", "identity"}, default="relu"
        Activation after the LayerNorm (and after the hidden layer). ``"identity"`` applies
        none: without ``hidden`` the head is then affine in its (normalised) input, a
        linear probe in the strict sense.
    pooling : {"cls", "mean"}, default="cls"
        What the head reads: the CLS output, or the mean of the outputs of CLS and every
        real token (padding excluded). Sentence-embedding models such as
        all-MiniLM-L6-v2 were trained with mean pooling, so fine-tuning them reads best
        the same way.

    Raises
    ------
    ValueError
        If ``activation`` or ``pooling`` is not one of the values above.
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
        activations = {"relu": nn.ReLU, "gelu": nn.GELU, "identity": nn.Identity}
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

    @property
    def reads_cls_only(self) -> bool:
        """Whether :meth:`forward` reads ``hidden[:, 0]`` and nothing else, so that the
        encoder's last layer may compute the CLS output only."""
        return self.pooling == "cls" and type(self).forward is ClassificationHead.forward

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Read the pooled encoder output.

        Parameters
        ----------
        hidden : Tensor of shape (B, 1+T, D)
            Encoder output, CLS first.
        mask : bool Tensor of shape (B, T), or None, default=None
            Token mask (CLS excluded); read only with ``pooling="mean"``.

        Returns
        -------
        output : Tensor of shape (B, n_outputs)
            Logits or regression outputs.
        """
        if self.pooling == "cls":
            return self.net(hidden[:, 0])
        return self.net(mean_pool(hidden, mask))


class RegressionHead(ClassificationHead):
    """The CLS head with one output per regression target (same layers, other loss).

    Parameters
    ----------
    d_model : int
        Token width ``D`` of the encoder output.
    n_outputs : int
        Number of regression targets.
    hidden : int or None, default=None
        Width of an optional hidden layer before the output layer.
    dropout : float, default=0.0
        Dropout before the output layer.
    activation : {"relu", "gelu", "identity"}, default="relu"
        Activation after the LayerNorm (and after the hidden layer); ``"identity"``: none.
    pooling : {"cls", "mean"}, default="cls"
        Read the CLS output or the mean over CLS and the real tokens.
    """


# ------------------------------------------------------------------ modules
class TokenClassificationHead(nn.Module):
    """Logits per token from ``h[:, 1:]`` (CLS dropped): ``(B, T, n_tags)``.

    Parameters
    ----------
    d_model : int
        Token width ``D`` of the encoder output.
    n_outputs : int
        Number of tags.
    dropout : float, default=0.0
        Dropout on the token outputs before the linear layer.
    """

    def __init__(self, d_model: int, n_outputs: int, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        self.linear = nn.Linear(d_model, n_outputs)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Tag every token: ``hidden`` ``(B, 1+T, D)`` -> logits ``(B, T, n_outputs)`` (CLS dropped)."""
        return self.linear(self.dropout(hidden[:, 1:]))


class TokenCrossEntropy(nn.Module):
    """Cross-entropy over tokens whose label is not ``IGNORE_INDEX``.

    The text embedder drops all-padding columns while training, so the logits may be
    shorter than the labels; the dropped columns only hold ignored labels.
    """

    #: ``"none"`` returns the (B, T') per-token losses, 0 where ignored (weighted losses read them)
    reduction = "mean"

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over the labelled tokens.

        Parameters
        ----------
        logits : Tensor of shape (B, T', n_tags)
            Per-token logits, ``T' <= T``.
        target : Tensor of shape (B, T)
            Tag ids, ``IGNORE_INDEX`` where a token takes no part; cut to ``T'`` columns.

        Returns
        -------
        loss : scalar Tensor
            ``0`` (still attached to the graph) when no token is labelled.
        """
        target = target[:, : logits.shape[1]].long()
        if self.reduction == "none":
            return F.cross_entropy(logits.transpose(1, 2), target, ignore_index=IGNORE_INDEX, reduction="none")
        # The mean over labelled tokens, written so that a batch of empty sentences gives 0
        # (no signal, no NaN) without reading a count back from the device.
        total = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
        )
        return total / (target != IGNORE_INDEX).sum().clamp_min(1)
