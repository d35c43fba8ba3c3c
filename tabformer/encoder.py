"""The shared Transformer encoder.

Every tokenizer produces ``tokens (B, T, D)`` and ``mask (B, T)`` (``True`` = real
token); :class:`TransformerEncoder` prepends a learned CLS token, optionally adds
positions, and runs ``n_layers`` identical blocks of multi-head self-attention and a
position-wise feed-forward network, each wrapped in a residual and a LayerNorm.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MultiHeadSelfAttention",
    "FeedForward",
    "EncoderLayer",
    "LearnedPositions",
    "SinusoidalPositions",
    "TransformerEncoder",
    "attention_bias_from_mask",
    "sinusoidal_table",
]


def grouped_attention_bias(mask: torch.Tensor, groups: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive bias ``(B, 1, 1+T, 1+T)`` letting tokens attend within their group only.

    ``groups`` (shape ``(1+T,)``, CLS first with group ``-1``) names each token's
    modality. CLS attends to every real token; a token attends to the real tokens of
    its own group, never to CLS (which would carry the other modalities back in), and
    always to itself, so that no row of the softmax is empty (a masked token's output
    is never read: no real query attends to it).
    """
    cls_query, cls_key = (groups == -1)[:, None], (groups == -1)[None, :]
    same = groups[:, None] == groups[None, :]
    allowed = cls_query | (same & ~cls_key)  # (1+T, 1+T): query row, key column
    allowed = allowed[None, None] & mask[:, None, None, :]
    allowed = allowed | torch.eye(len(groups), dtype=torch.bool, device=mask.device)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=mask.device)
    return bias.masked_fill_(~allowed, torch.finfo(dtype).min)


def attention_bias_from_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """Turn a key mask (``True`` = real token) into an additive attention bias.

    This is the one place where tabformer's mask convention is translated for an
    attention API. The bias has shape ``(B, 1, 1, T)`` and holds ``0`` for real keys and
    the most negative finite value for padding: a finite value, not ``-inf``, so a row
    whose keys were all padding could never produce NaN (CLS is never masked anyway).
    Returns ``None`` when every token is real, which lets SDPA pick its fastest kernel.
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
    attention_dropout : float
        Dropout on the attention probabilities (training only).
    bias : bool
        Whether the four projections have biases.
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
        """Attend.

        Parameters
        ----------
        x : Tensor of shape (B, T, D)
        bias : Tensor of shape (B, 1, 1, T) or None
            Additive bias from :func:`attention_bias_from_mask`.
        need_weights : bool
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


class FeedForward(nn.Module):
    """Position-wise feed-forward network ``W_2 act(W_1 x)`` applied to every token."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0):
        super().__init__()
        activations = {"relu": nn.ReLU, "gelu": nn.GELU}
        if activation not in activations:
            raise ValueError(f"activation must be one of {sorted(activations)}, got {activation!r}")
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = activations[activation]()
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class EncoderLayer(nn.Module):
    """One Transformer block: attention and feed-forward, each with residual + LayerNorm.

    ``norm_first=False`` is post-LN (``x = LN(x + sublayer(x))``, the original
    Transformer and BERT); ``norm_first=True`` is pre-LN (``x = x + sublayer(LN(x))``),
    which trains more stably without warm-up. ``skip_first_norm`` drops the attention
    pre-norm, as FT-Transformer does in its first layer, where the tokens come straight
    from a (linear) tokenizer and normalising them again only loses information.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
        activation: str = "gelu",
        norm_first: bool = False,
        skip_first_norm: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.attention = MultiHeadSelfAttention(d_model, n_heads, attention_dropout)
        self.feed_forward = FeedForward(d_model, d_ff, activation, ffn_dropout)
        self.norm1 = (
            nn.Identity() if (norm_first and skip_first_norm) else nn.LayerNorm(d_model, eps=layer_norm_eps)
        )
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        # Dropout masks cost about a quarter of a CPU training step at d=64 (measured,
        # ARCHITECTURE.md), so a zero rate builds no module at all.
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x, bias=None, need_weights=False):
        if self.norm_first:
            attended, weights = self.attention(self.norm1(x), bias, need_weights)
            x = x + self.dropout(attended)
            x = x + self.dropout(self.feed_forward(self.norm2(x)))
        else:
            attended, weights = self.attention(x, bias, need_weights)
            x = self.norm1(x + self.dropout(attended))
            x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x, weights


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``; shape (length, d)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]
    even = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / torch.pow(10000.0, even / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return table.float()


class LearnedPositions(nn.Module):
    """A trainable embedding per position ``0 .. max_length-1``."""

    def __init__(self, max_length: int, d_model: int):
        super().__init__()
        self.max_length = max_length
        self.embedding = nn.Embedding(max_length, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        if position_ids.max() >= self.max_length:
            raise ValueError(
                f"sequence needs position {int(position_ids.max())} but the encoder was built with "
                f"max_length={self.max_length}; raise encoder__max_length"
            )
        return self.embedding(position_ids)


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine positions (Vaswani et al., 2017); a buffer, not a parameter."""

    def __init__(self, max_length: int, d_model: int):
        super().__init__()
        self.max_length = max_length
        self.register_buffer("table", sinusoidal_table(max_length, d_model), persistent=False)

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        if position_ids.max() >= self.max_length:
            raise ValueError(
                f"sequence needs position {int(position_ids.max())} but max_length={self.max_length}"
            )
        return self.table[position_ids]


class TransformerEncoder(nn.Module):
    """A stack of identical self-attention blocks reading a CLS-prefixed token sequence.

    Parameters
    ----------
    d_model : int, default=64
        Token width ``D``.
    n_layers : int, default=3
        Number of stacked :class:`EncoderLayer` blocks.
    n_heads : int, default=8
        Attention heads per layer.
    d_ff : int or None, default=None
        Feed-forward hidden width; ``None`` means ``4 * d_model``.
    dropout : float, default=0.0
        Dropout on each sublayer's output before the residual sum.
    attention_dropout : float, default=0.1
        Dropout on attention probabilities.
    ffn_dropout : float, default=0.0
        Dropout on the feed-forward hidden activations.
    activation : {"gelu", "relu"}, default="gelu"
    norm_first : bool, default=False
        ``False`` = post-LN (BERT), ``True`` = pre-LN; pre-LN adds a final LayerNorm.
    skip_first_norm : bool, default=False
        In pre-LN, drop the first layer's attention pre-norm (FT-Transformer).
    positions : {None, "learned", "sinusoidal"}, default=None
        Position embeddings added to every token (CLS is position 0). Tables leave
        this ``None``: their columns have identities, not an order.
    max_length : int, default=512
        Largest sequence length (CLS included) that positions support.
    embedding_norm : bool, default=False
        LayerNorm (and dropout) on the input tokens after positions are added, as BERT
        does for its embeddings.
    layer_norm_eps : float, default=1e-5

    Examples
    --------
    >>> import torch
    >>> encoder = TransformerEncoder(d_model=16, n_layers=2, n_heads=4)
    >>> tokens, mask = torch.randn(3, 5, 16), torch.ones(3, 5, dtype=torch.bool)
    >>> encoder(tokens, mask).shape
    torch.Size([3, 6, 16])
    """

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 3,
        n_heads: int = 8,
        d_ff: int | None = None,
        dropout: float = 0.0,
        attention_dropout: float = 0.1,
        ffn_dropout: float = 0.0,
        activation: str = "gelu",
        norm_first: bool = False,
        skip_first_norm: bool = False,
        positions: str | None = None,
        max_length: int = 512,
        embedding_norm: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        # Kept so that save()/load() can rebuild the same architecture anywhere.
        self.config = {
            "d_model": d_model, "n_layers": n_layers, "n_heads": n_heads, "d_ff": d_ff,
            "dropout": dropout, "attention_dropout": attention_dropout, "ffn_dropout": ffn_dropout,
            "activation": activation, "norm_first": norm_first, "skip_first_norm": skip_first_norm,
            "positions": positions, "max_length": max_length, "embedding_norm": embedding_norm,
            "layer_norm_eps": layer_norm_eps,
        }
        if positions not in (None, "learned", "sinusoidal"):
            raise ValueError(f"positions must be None, 'learned' or 'sinusoidal', got {positions!r}")
        self.d_model = d_model
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.norm_first = norm_first
        self.cls_token = nn.Parameter(torch.empty(1, 1, d_model))
        nn.init.normal_(self.cls_token, std=0.02)
        position_classes = {"learned": LearnedPositions, "sinusoidal": SinusoidalPositions}
        self.positions = position_classes[positions](max_length, d_model) if positions else None
        self.embedding_norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if embedding_norm else None
        self.embedding_dropout = nn.Dropout(dropout) if (embedding_norm and dropout > 0) else nn.Identity()
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model,
                n_heads,
                d_ff or 4 * d_model,
                dropout=dropout,
                attention_dropout=attention_dropout,
                ffn_dropout=ffn_dropout,
                activation=activation,
                norm_first=norm_first,
                skip_first_norm=skip_first_norm and index == 0,
                layer_norm_eps=layer_norm_eps,
            )
            for index in range(n_layers)
        )
        # Pre-LN leaves the residual stream un-normalised; the final norm fixes its scale.
        self.final_norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if norm_first else nn.Identity()

    def save(self, path) -> None:
        """Write the architecture and weights (CPU tensors) to ``path``; reload with :meth:`load`."""
        state = {name: tensor.detach().cpu() for name, tensor in self.state_dict().items()}
        torch.save({"format": "tabformer.TransformerEncoder/1", "config": self.config, "state_dict": state}, path)

    @classmethod
    def load(cls, path, map_location="cpu") -> "TransformerEncoder":
        """Rebuild an encoder written by :meth:`save`, on ``map_location``."""
        saved = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(saved, dict) or saved.get("format") != "tabformer.TransformerEncoder/1":
            raise ValueError(f"{path} is not a file written by TransformerEncoder.save")
        encoder = cls(**saved["config"])
        encoder.load_state_dict(saved["state_dict"])
        return encoder

    def prepend_cls(
        self, tokens: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(B, 1+T, D)`` tokens and a ``(B, 1+T)`` mask whose first column is True."""
        batch, length, width = tokens.shape
        if width != self.d_model:
            raise ValueError(f"tokens have width {width}, the encoder expects d_model={self.d_model}")
        if mask is None:
            mask = torch.ones(batch, length, dtype=torch.bool, device=tokens.device)
        elif mask.shape != (batch, length):
            raise ValueError(f"mask has shape {tuple(mask.shape)}, tokens need {(batch, length)}")
        cls = self.cls_token.expand(batch, 1, width).to(tokens.dtype)
        cls_mask = torch.ones(batch, 1, dtype=torch.bool, device=mask.device)
        return torch.cat([cls, tokens], dim=1), torch.cat([cls_mask, mask], dim=1)

    def forward(
        self,
        tokens: torch.Tensor,
        mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        return_attention: bool = False,
        token_groups: torch.Tensor | None = None,
        grouped_layers: int = 0,
    ):
        """Encode a token sequence.

        Parameters
        ----------
        tokens : Tensor of shape (B, T, D)
        mask : bool Tensor of shape (B, T) or None
            ``True`` marks real tokens. ``None`` means no padding.
        position_ids : long Tensor of shape (B, 1+T) or None
            Explicit positions (CLS included); default ``0..T``. Ignored when the
            encoder has no positions.
        return_attention : bool
            Also return the per-layer attention probabilities.
        token_groups : long Tensor of shape (T,) or None
            Modality of each token (CLS excluded), for mid fusion.
        grouped_layers : int, default=0
            The first ``grouped_layers`` layers attend within each ``token_groups`` group
            only (CLS reads every group); later layers attend across all tokens.

        Returns
        -------
        hidden : Tensor of shape (B, 1+T, D)
            ``hidden[:, 0]`` is the CLS embedding.
        attention : list of Tensor of shape (B, H, 1+T, 1+T), only if ``return_attention``
        """
        x, full_mask = self.prepend_cls(tokens, mask)
        if self.positions is not None:
            if position_ids is None:
                position_ids = torch.arange(x.shape[1], device=x.device)[None, :]
            x = x + self.positions(position_ids).to(x.dtype)
        if self.embedding_norm is not None:
            x = self.embedding_dropout(self.embedding_norm(x))
        bias = attention_bias_from_mask(full_mask, x.dtype)
        if token_groups is None:
            grouped_layers = 0
        if not 0 <= grouped_layers <= len(self.layers):
            raise ValueError(f"grouped_layers must be in [0, {len(self.layers)}], got {grouped_layers}")
        if grouped_layers:
            cls_group = torch.full((1,), -1, dtype=torch.long, device=x.device)
            grouped = grouped_attention_bias(full_mask, torch.cat([cls_group, token_groups.to(x.device)]), x.dtype)
        maps = []
        for index, layer in enumerate(self.layers):
            layer_bias = grouped if index < grouped_layers else bias
            x, weights = layer(x, layer_bias, need_weights=return_attention)
            if return_attention:
                maps.append(weights)
        x = self.final_norm(x)
        return (x, maps) if return_attention else x
