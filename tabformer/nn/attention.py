"""Multi-head self-attention over a CLS-prefixed token sequence, and the one helper that
turns tabformer's mask convention (``True`` = real token) into an additive bias."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MultiHeadSelfAttention", "attention_bias_from_mask", "grouped_attention_bias", "pad_keys"]

#: PyTorch's CPU softmax takes a slow path when the last dimension is under 16 (Adult's 15
#: tokens cost about 30x more per element than 16); shorter key sequences are padded to it
SHORT_KEYS = 16


def pad_keys(k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, length: int = SHORT_KEYS):
    """Pad keys and values to ``length`` with masked zeros: the attention output is unchanged.

    A padded key gets the most negative finite bias, so its softmax weight is exactly
    ``exp(min - max) = 0`` and its (zero) value adds nothing. Only worth it on CPU, where
    short softmax rows are slow; a no-op when the keys are ``length`` or longer.

    Parameters
    ----------
    k, v : Tensor of shape (B, H, T, d_k)
        Keys and values.
    bias : Tensor of shape (B, 1, 1, T) or (B, 1, Q, T), or None
        Additive attention bias over the ``T`` keys.
    length : int, default=16
        Key count to pad to.

    Returns
    -------
    k, v : Tensor of shape (B, H, max(T, length), d_k)
    bias : Tensor of shape (B or 1, 1, 1 or Q, max(T, length)), or the input bias if no padding was needed

    Examples
    --------
    >>> k = v = torch.randn(2, 4, 15, 8)
    >>> k16, v16, bias = pad_keys(k, v, None)
    >>> k16.shape, bias.shape
    (torch.Size([2, 4, 16, 8]), torch.Size([1, 1, 1, 16]))
    """
    extra = length - k.shape[-2]
    if extra <= 0:
        return k, v, bias
    lowest = torch.finfo(k.dtype if bias is None else bias.dtype).min
    if bias is None:
        bias = torch.zeros(1, 1, 1, k.shape[-2], dtype=k.dtype, device=k.device)
    bias = F.pad(bias, (0, extra), value=lowest)
    return F.pad(k, (0, 0, 0, extra)), F.pad(v, (0, 0, 0, extra)), bias


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
        ``None`` when every token is real (checked on the CPU only), which lets SDPA pick
        its fastest kernel.

    Raises
    ------
    TypeError
        If ``mask`` is not a bool tensor.
    """
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = real token), got {mask.dtype}")
    # Under torch.compile the data-dependent branch would break the graph, and on a GPU reading
    # the answer back would stall its queue every forward pass: an all-zero bias is equivalent.
    if mask.device.type == "cpu" and not torch.compiler.is_compiling() and bool(mask.all()):
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
        n_queries: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend: every token of ``x`` (or its first ``n_queries``) to every unmasked token of ``x``.

        Parameters
        ----------
        x : Tensor of shape (B, T, D)
            Token sequence (CLS included, so ``T`` here counts it).
        bias : Tensor of shape (B, 1, 1, T) or (B, 1, T, T), or None, default=None
            Additive bias from :func:`attention_bias_from_mask` or
            :func:`grouped_attention_bias`; ``None``: attend everywhere.
        need_weights : bool, default=False
            Also return the attention probabilities, shape ``(B, H, Q, T)``.
        n_queries : int or None, default=None
            Compute the output of the first ``Q = n_queries`` tokens only (``1``: CLS, for
            a last layer whose other outputs nobody reads); ``None``: all ``Q = T``.

        Returns
        -------
        out : Tensor of shape (B, Q, D)
        weights : Tensor of shape (B, H, Q, T) or None
        """
        batch, length, _ = x.shape
        queries = x if n_queries is None else x[:, :n_queries]
        if bias is not None and n_queries is not None and bias.shape[-2] > 1:
            bias = bias[:, :, :n_queries]
        q = self._split_heads(self.query(queries))
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
            if x.device.type == "cpu" and not (torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()):
                k, v, bias = pad_keys(k, v, bias)
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)
        context = context.transpose(1, 2).reshape(batch, queries.shape[1], self.d_model)
        return self.out(context), weights
