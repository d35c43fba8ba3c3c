"""The ``nn.Module`` skorch trains: embedder + (CLS +) encoder + head."""

from __future__ import annotations

import torch
from torch import nn

from .encoder import TransformerEncoder

__all__ = ["TabFormerModel"]


class TabFormerModel(nn.Module):
    """Embed a tokenized batch, encode it, and apply the head.

    Parameters
    ----------
    embedder : nn.Module
        ``embedder(**batch) -> (tokens (B, T, D), mask (B, T) bool or None)``, built by a
        tokenizer's ``build_embedder``.
    encoder : TransformerEncoder
    head : nn.Module
        Reads the encoder output ``(B, 1+T, D)``.
    freeze_encoder : bool, default=False
        Train the head (and embedder) only: the encoder's parameters get no gradient
        and the encoder runs in eval mode (no dropout), i.e. a linear/MLP probe.
    """

    def __init__(self, embedder: nn.Module, encoder: TransformerEncoder, head: nn.Module, freeze_encoder: bool = False):
        super().__init__()
        self.embedder = embedder
        self.encoder = encoder
        self.head = head
        self.freeze_encoder = freeze_encoder
        if freeze_encoder:
            self.encoder.requires_grad_(False)

    def train(self, mode: bool = True):
        super().train(mode)
        if self.freeze_encoder:
            self.encoder.eval()
        return self

    def forward_features(self, return_attention: bool = False, **batch):
        """Return the encoder output ``(B, 1+T, D)`` (and attention maps if asked)."""
        tokens, mask = self.embedder(**batch)
        return self.encoder(tokens, mask, return_attention=return_attention)

    def forward_head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden)

    def forward(self, **batch) -> torch.Tensor:
        return self.forward_head(self.forward_features(**batch))
