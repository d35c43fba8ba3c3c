"""The shared Transformer encoder.

Every tokenizer produces ``tokens (B, T, D)`` and ``mask (B, T)`` (``True`` = real
token); :class:`TransformerEncoder` prepends a learned CLS token, optionally adds
positions, and runs ``n_layers`` identical blocks of multi-head self-attention and a
position-wise feed-forward network, each wrapped in a residual and a LayerNorm.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .attention import MultiHeadSelfAttention, attention_bias_from_mask, grouped_attention_bias
from .positions import SINUSOIDAL_SCALE, LearnedPositions, SinusoidalPositions, saved_encoder_config
from .safe_load import load_tensors

__all__ = ["FeedForward", "EncoderLayer", "TransformerEncoder"]


class FeedForward(nn.Module):
    """Position-wise feed-forward network ``W_2 act(W_1 x)`` applied to every token.

    Parameters
    ----------
    d_model : int
        Token width ``D`` (input and output).
    d_ff : int
        Hidden width.
    activation : {"gelu", "relu"}, default="gelu"
        Activation between the two linear layers.
    dropout : float, default=0.0
        Dropout on the hidden activations; ``0`` builds no dropout module.

    Raises
    ------
    ValueError
        If ``activation`` is not one of the names above.
    """

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
        """Map every token independently: ``(..., D)`` -> ``(..., D)``, e.g. ``(B, T, D)``."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class EncoderLayer(nn.Module):
    """One Transformer block: attention and feed-forward, each with residual + LayerNorm.

    ``norm_first=False`` is post-LN (``x = LN(x + sublayer(x))``, the original
    Transformer and BERT); ``norm_first=True`` is pre-LN (``x = x + sublayer(LN(x))``),
    which trains more stably without warm-up. ``skip_first_norm`` drops the attention
    pre-norm, as FT-Transformer does in its first layer, where the tokens come straight
    from a (linear) tokenizer and normalising them again only loses information.

    Parameters
    ----------
    d_model : int
        Token width ``D``.
    n_heads : int
        Attention heads; must divide ``d_model``.
    d_ff : int
        Feed-forward hidden width.
    dropout : float, default=0.0
        Dropout on each sublayer's output before the residual sum.
    attention_dropout : float, default=0.0
        Dropout on the attention probabilities.
    ffn_dropout : float, default=0.0
        Dropout on the feed-forward hidden activations.
    activation : {"gelu", "relu"}, default="gelu"
        Feed-forward activation.
    norm_first : bool, default=False
        ``False`` = post-LN, ``True`` = pre-LN.
    skip_first_norm : bool, default=False
        With ``norm_first``, replace the attention pre-norm by the identity.
    layer_norm_eps : float, default=1e-5
        Epsilon of both LayerNorms.
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
        self.norm1 = nn.Identity() if (norm_first and skip_first_norm) else nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        # Dropout masks cost about a quarter of a CPU training step at d=64 (measured,
        # with plain PyTorch on a 2-core machine), so a zero rate builds no module at all.
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x, bias=None, need_weights=False, cls_only=False):
        """Run one block.

        Parameters
        ----------
        x : Tensor of shape (B, 1+T, D)
            Token sequence, CLS first.
        bias : Tensor of shape (B, 1, 1, 1+T) or (B, 1, 1+T, 1+T), or None, default=None
            Additive attention bias (see :mod:`tabformer.nn.attention`).
        need_weights : bool, default=False
            Also return the attention probabilities.
        cls_only : bool, default=False
            Compute the CLS output only (it still attends to every token): the same
            ``x[:, :1]`` for about ``1 / (1+T)`` of the feed-forward and query work.

        Returns
        -------
        x : Tensor of shape (B, 1+T, D), or (B, 1, D) with ``cls_only``
        weights : Tensor of shape (B, H, 1+T, 1+T) (``(B, H, 1, 1+T)`` with ``cls_only``),
            or None unless ``need_weights``
        """
        n_queries = 1 if cls_only else None
        if self.norm_first:
            attended, weights = self.attention(self.norm1(x), bias, need_weights, n_queries)
            x = x[:, :n_queries] + self.dropout(attended)
            x = x + self.dropout(self.feed_forward(self.norm2(x)))
        else:
            attended, weights = self.attention(x, bias, need_weights, n_queries)
            x = self.norm1(x[:, :n_queries] + self.dropout(attended))
            x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x, weights


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
        Epsilon of every LayerNorm.
    gradient_checkpointing : bool, default=False
        In training, keep only each layer's input and recompute its activations in the
        backward pass (``torch.utils.checkpoint``): activation memory falls from
        O(layers) to O(1) layers for about a third more compute. Not used in eval mode.
    embedding_size : int or None, default=None
        Width ``E`` of the input tokens when it differs from ``d_model`` (ELECTRA-small):
        CLS, positions and the embedding LayerNorm are ``E`` wide, and a linear layer
        projects the normalised tokens to ``d_model``. ``None``: ``E = d_model``.
    positions_scale : float or None, default=None
        Factor on the sinusoidal table (``positions="sinusoidal"`` only). ``None``:
        ``0.02 * sqrt(2)``, the RMS of the learned positions, not the paper's 1 (see
        :class:`~tabformer.nn.positions.SinusoidalPositions`). Recorded in ``config``.

    Attributes
    ----------
    config : dict
        The constructor arguments, written by :meth:`save` so :meth:`load` can rebuild
        the same architecture.
    cls_token : Parameter of shape (1, 1, D)
        The learned CLS token prepended to every sequence.
    layers : ModuleList of EncoderLayer
        The ``n_layers`` blocks.

    Raises
    ------
    ValueError
        If ``positions`` or ``activation`` is not one of the values above, ``d_model``
        is not divisible by ``n_heads``, or ``positions_scale`` is given without sinusoidal positions.

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
        gradient_checkpointing: bool = False,
        embedding_size: int | None = None,
        positions_scale: float | None = None,
    ):
        super().__init__()
        # Kept so that save()/load() can rebuild the same architecture anywhere.
        self.config = {
            "d_model": d_model,
            "n_layers": n_layers,
            "n_heads": n_heads,
            "d_ff": d_ff,
            "dropout": dropout,
            "attention_dropout": attention_dropout,
            "ffn_dropout": ffn_dropout,
            "activation": activation,
            "norm_first": norm_first,
            "skip_first_norm": skip_first_norm,
            "positions": positions,
            "max_length": max_length,
            "embedding_norm": embedding_norm,
            "layer_norm_eps": layer_norm_eps,
            "gradient_checkpointing": gradient_checkpointing,
        }
        if embedding_size is not None:  # only then, so configs saved before the setting stay identical
            self.config["embedding_size"] = embedding_size
        if positions not in (None, "learned", "sinusoidal"):
            raise ValueError(f"positions must be None, 'learned' or 'sinusoidal', got {positions!r}")
        if positions == "sinusoidal":  # only then, as embedding_size: other configs stay as they were saved
            self.config["positions_scale"] = SINUSOIDAL_SCALE if positions_scale is None else float(positions_scale)
        elif positions_scale is not None:
            raise ValueError(f"positions_scale={positions_scale!r} scales sinusoidal positions; positions is {positions!r}")
        self.d_model = d_model
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.norm_first = norm_first
        self.gradient_checkpointing = gradient_checkpointing
        self.embedding_size = width = embedding_size or d_model
        self.cls_token = nn.Parameter(torch.empty(1, 1, width))
        nn.init.normal_(self.cls_token, std=0.02)
        scale = {"scale": self.config["positions_scale"]} if positions == "sinusoidal" else {}
        position_classes = {"learned": LearnedPositions, "sinusoidal": SinusoidalPositions}
        self.positions = position_classes[positions](max_length, width, **scale) if positions else None
        self.embedding_norm = nn.LayerNorm(width, eps=layer_norm_eps) if embedding_norm else None
        self.embedding_projection = nn.Linear(width, d_model) if width != d_model else None
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
        """Write the architecture and weights (CPU tensors) to ``path``; reload with :meth:`load`.

        Parameters
        ----------
        path : str, path-like or file-like
            Destination, passed to :func:`torch.save`.
        """
        state = {name: tensor.detach().cpu() for name, tensor in self.state_dict().items()}
        torch.save({"format": "tabformer.TransformerEncoder/1", "config": self.config, "state_dict": state}, path)

    @classmethod
    def load(cls, path, map_location="cpu") -> TransformerEncoder:
        """Rebuild an encoder written by :meth:`save`, on ``map_location``.

        Parameters
        ----------
        path : str, path-like or file-like
            A file written by :meth:`save`.
        map_location : str or torch.device, default="cpu"
            Device the weights are loaded onto.

        Returns
        -------
        encoder : TransformerEncoder
            Same architecture and weights as the saved one.

        Raises
        ------
        ValueError
            If ``path`` was not written by :meth:`save`.
        UnsafeFileError
            If the file holds any other pickled object: it is refused
            (``torch.load(weights_only=True)``), never run.
        """
        saved = load_tensors(path, map_location, what="a TransformerEncoder.save file")
        if not isinstance(saved, dict) or saved.get("format") != "tabformer.TransformerEncoder/1":
            raise ValueError(f"{path} is not a file written by TransformerEncoder.save")
        encoder = cls(**saved_encoder_config(saved["config"]))
        encoder.load_state_dict(saved["state_dict"])
        return encoder

    def prepend_cls(self, tokens: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Prepend the CLS token to ``tokens`` and a ``True`` column to ``mask``.

        Parameters
        ----------
        tokens : Tensor of shape (B, T, D)
        mask : bool Tensor of shape (B, T), or None
            ``True`` = real token; ``None`` means no padding.

        Returns
        -------
        tokens : Tensor of shape (B, 1+T, D)
            CLS first.
        mask : bool Tensor of shape (B, 1+T)
            First column ``True``.

        Raises
        ------
        ValueError
            If the token width is not ``d_model`` or ``mask`` does not have shape (B, T).
        """
        batch, length, width = tokens.shape
        expected = getattr(self, "embedding_size", self.d_model)  # encoders pickled before the setting have none
        if width != expected:
            raise ValueError(f"tokens have width {width}, the encoder expects {expected} (d_model={self.d_model})")
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
        cls_only: bool = False,
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
        return_attention : bool, default=False
            Also return the per-layer attention probabilities.
        token_groups : long Tensor of shape (T,) or None
            Modality of each token (CLS excluded), for mid fusion.
        grouped_layers : int, default=0
            The first ``grouped_layers`` layers attend within each ``token_groups`` group
            only (CLS reads every group); later layers attend across all tokens.
        cls_only : bool, default=False
            The last layer computes the CLS output only (rtdl's FT-Transformer does the
            same): for heads that read ``hidden[:, 0]`` and nothing else.

        Returns
        -------
        hidden : Tensor of shape (B, 1+T, D), or (B, 1, D) with ``cls_only``
            ``hidden[:, 0]`` is the CLS embedding.
        attention : list of Tensor of shape (B, H, 1+T, 1+T), only if ``return_attention``
            One map per layer.

        Raises
        ------
        ValueError
            If ``tokens`` or ``mask`` has the wrong shape, ``grouped_layers`` is out of
            range, or a position exceeds ``max_length``.
        """
        x, full_mask = self.prepend_cls(tokens, mask)
        if self.positions is not None:
            length = None
            if position_ids is None:
                position_ids, length = torch.arange(x.shape[1], device=x.device)[None, :], x.shape[1]
            x = x + self.positions(position_ids, length).to(x.dtype)
        if self.embedding_norm is not None:
            x = self.embedding_dropout(self.embedding_norm(x))
        if getattr(self, "embedding_projection", None) is not None:
            x = self.embedding_projection(x)
        bias = attention_bias_from_mask(full_mask, x.dtype)
        if token_groups is None:
            grouped_layers = 0
        if not 0 <= grouped_layers <= len(self.layers):
            raise ValueError(f"grouped_layers must be in [0, {len(self.layers)}], got {grouped_layers}")
        if grouped_layers:
            cls_group = torch.full((1,), -1, dtype=torch.long, device=x.device)
            grouped = grouped_attention_bias(full_mask, torch.cat([cls_group, token_groups.to(x.device)]), x.dtype)
        maps, last = [], len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            layer_bias = grouped if index < grouped_layers else bias
            only = cls_only and index == last
            if (
                getattr(self, "gradient_checkpointing", False)
                and self.training
                and torch.is_grad_enabled()
                and not return_attention
            ):
                x, weights = checkpoint(layer, x, layer_bias, False, only, use_reentrant=False)
            else:
                x, weights = layer(x, layer_bias, need_weights=return_attention, cls_only=only)
            if return_attention:
                maps.append(weights)
        x = self.final_norm(x)
        return (x, maps) if return_attention else x
