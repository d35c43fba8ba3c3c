"""Multi-head self-attention over a CLS-prefixed token sequence, and the one helper that
turns tabformer's mask convention (``True`` = real token) into an additive bias."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MultiHeadSelfAttention", "attention_bias_from_mask", "grouped_attention_bias"]


def grouped_attention_bias(mask: torch.Tensor, groups: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive bias ``(B, 1, 1+T, 1+T)`` letting tokens attend within their group only.

    ``groups`` names each token's modality. CLS attends to every real token; a token
    attends to the real tokens of its own group, never to CLS (which would carry the
    other modalities back in), and always to itself, so that no row of the softmax is
    empty (a masked token's output is never read: no real query attends to it).

    Parameters
    ----------
    mask : Tensor of shape (B, 1+T), bool
        Key mask including the CLS column, ``True`` = real token.
    groups : Tensor of shape (1+T,), int
        Group (modality) of each position, CLS first with group ``-1``.
    dtype : torch.dtype
        Floating dtype of the bias (that of the attention scores).

    Returns
    -------
    bias : Tensor of shape (B, 1, 1+T, 1+T)
        ``0`` where a query (row) may attend to a key (column), else the most negative
        finite value of ``dtype``.
    """
    cls_query, cls_key = (groups == -1)[:, None], (groups == -1)[None, :]
    same = groups[:, None] == groups[None, :]
    allowed = cls_query | (same & ~cls_key)  # (1+T, 1+T): query row, key column
    allowed = allowed[None, None] & mask[:, None, None, :]
    position = torch.arange(groups.shape[0], device=mask.device)  # not torch.eye(len(...)): this exports to ONNX
    allowed = allowed | (position[:, None] == position[None, :])
    bias = torch.zeros(allowed.shape, dtype=dtype, device=mask.device)
    return bias.masked_fill_(~allowed, torch.finfo(dtype).min)


def attention_bias_from_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """Turn a key mask (``True`` = real token) into an additive attention bias.

    This is the one place where tabformer's mask convention is translated for an
    attention API. The bias holds ``0`` for real keys and the most negative finite value
    for padding: a finite value, not ``-inf``, so a row whose keys were all padding could
    never produce NaN (CLS is never masked anyway).

    Parameters
    ----------
    mask : Tensor of shape (B, T), bool, or None
        Key mask, ``True`` = real token; ``None`` means every token is real.
    dtype : torch.dtype
        Floating dtype of the bias (that of the attention scores).

    Returns
    -------
    bias : Tensor of shape (B, 1, 1, T), or None
        ``None`` when every token is real, which lets SDPA pick its fastest kernel.

    Raises
    ------
    TypeError
        If ``mask`` is not a bool tensor.
    """
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = real token), got {mask.dtype}")
    if bool(mask.all()):
        return None
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    bias.masked_fill_(~mask, torch.finfo(dtype).min)
    return bias[:, None, None, :]


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention: ``softmax(Q Kᵀ / √d_k) V`` per head, then ``W_O``.

    Q, K and V have separate projections (as in BERT, which keeps pretrained weights
    loadable one-to-one). The product runs through
    :func:`torch.nn.functional.scaled_dot_product_attention`, except when attention
    weights are requested, which SDPA does not return; then the same formula is
    computed explicitly.

    Parameters
    ----------
    d_model : int
        Token width ``D``; must be divisible by ``n_heads``.
    n_heads : int
        Number of heads; each works in ``d_k = D / n_heads`` dimensions.
    attention_dropout : float, default=0.0
        Dropout on the attention probabilities (training only).
    bias : bool, default=True
        Whether the four projections have biases.

    Raises
    ------
    ValueError
        If ``d_model`` is not divisible by ``n_heads``.
    """

    def __init__(self, d_model: int, n_heads: int, attention_dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.attention_dropout = attention_dropout
        self.query = nn.Linear(d_model, d_model, bias=bias)
        self.key = nn.Linear(d_model, d_model, bias=bias)
        self.value = nn.Linear(d_model, d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.d_head).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        bias: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend: every token of ``x`` to every (unmasked) token of ``x``.

        Parameters
        ----------
        x : Tensor of shape (B, T, D)
            Token sequence (CLS included, so ``T`` here counts it).
        bias : Tensor of shape (B, 1, 1, T) or (B, 1, T, T), or None, default=None
            Additive bias from :func:`attention_bias_from_mask` or
            :func:`grouped_attention_bias`; ``None``: attend everywhere.
        need_weights : bool, default=False
            Also return the attention probabilities, shape ``(B, H, T, T)``.

        Returns
        -------
        out : Tensor of shape (B, T, D)
        weights : Tensor of shape (B, H, T, T) or None
        """
        batch, length, _ = x.shape
        q = self._split_heads(self.query(x))
        k = self._split_heads(self.key(x))
        v = self._split_heads(self.value(x))
        dropout_p = self.attention_dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
            if bias is not None:
                scores = scores + bias
            weights = scores.softmax(dim=-1)
            context = F.dropout(weights, dropout_p, self.training) @ v
        else:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)
        context = context.transpose(1, 2).reshape(batch, length, self.d_model)
        return self.out(context), weights
