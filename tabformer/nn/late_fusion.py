"""Late fusion: one encoder per modality, their CLS vectors fused before the head."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["LateFusionModel"]


class LateFusionModel(nn.Module):
    """Late fusion, the baseline early fusion is measured against.

    Each sub-tokenizer's tokens (a modality: all text columns, all image columns, the
    table) go through an encoder of their own; the CLS vectors are concatenated,
    projected back to ``d_model`` and read by the head. Tokens of different modalities
    never attend to each other: they only meet in that projection.

    Parameters
    ----------
    embedder : MixedEmbedder
        Supplies ``forward_groups(**batch) -> [(tokens, mask), ...]``.
    encoders : list of TransformerEncoder
        One per group, in ``embedder.group_names`` order (same architecture, own weights).
    head : nn.Module
        Reads ``(B, 1, D)``: the fused vector in the CLS slot.
    freeze_encoder : bool, default=False
        Keep every encoder fixed (eval mode, no gradient).
    """

    def __init__(self, embedder: nn.Module, encoders, head: nn.Module, freeze_encoder: bool = False):
        super().__init__()
        if not hasattr(embedder, "forward_groups"):
            raise TypeError(f"late fusion needs an embedder with forward_groups (mixed inputs), got {type(embedder).__name__}")
        self.embedder = embedder
        self.encoders = nn.ModuleList(encoders)
        d_model = self.encoders[0].d_model
        self.fusion = nn.Linear(len(self.encoders) * d_model, d_model)
        self.head = head
        self.freeze_encoder = freeze_encoder
        if freeze_encoder:
            self.encoders.requires_grad_(False)

    def train(self, mode: bool = True):
        """``nn.Module.train(mode)``, but frozen parts stay in eval mode (no dropout); returns self."""
        super().train(mode)
        if self.freeze_encoder:
            self.encoders.eval()
        return self

    def forward_features(self, return_attention: bool = False, **batch):
        """The fused vector as a length-1 sequence ``(B, 1, D)`` (and attention maps if asked).

        Parameters
        ----------
        return_attention : bool, default=False
            Also return attention maps laid out as early fusion's one sequence, so that
            ``explain`` reads them the same way: see :meth:`sequence_attention`.
        **batch : Tensor
            A mixed batch (keys ``"<segment>/<array>"``), each of shape (B, ...).

        Returns
        -------
        fused : Tensor of shape (B, 1, D)
            The projected concatenation of every modality's CLS vector.
        attention : list of Tensor of shape (B, H, 1+T, 1+T), only if ``return_attention``
        """
        groups = self.embedder.forward_groups(return_positions=return_attention, **batch)
        outputs = [
            encoder(group[0], group[1], return_attention=return_attention) for encoder, group in zip(self.encoders, groups)
        ]
        hidden = [out[0] for out in outputs] if return_attention else outputs
        fused = self.fusion(torch.cat([h[:, 0] for h in hidden], dim=-1))[:, None]
        if not return_attention:
            return fused
        return fused, self.sequence_attention([out[1] for out in outputs], [group[2] for group in groups])

    @staticmethod
    def sequence_attention(maps: list, positions: list) -> list:
        """Every encoder's attention maps placed in one sequence's layout, one map per layer.

        Late fusion has no single sequence: each modality's encoder has its own CLS and
        attends only to its own tokens. The maps are laid out as early fusion's sequence
        (``[CLS]`` then every segment in order), each modality's block where its tokens
        sit; across modalities the weights are 0. The CLS row is the mean of the
        modalities' CLS rows, so it still sums to 1 and a token's weight is its own
        encoder's CLS attention divided by the number of modalities.

        Parameters
        ----------
        maps : list (one per modality) of list (one per layer) of Tensor of shape (B, H, 1+T_g, 1+T_g)
        positions : list (one per modality) of long Tensor of shape (T_g,)
            Where the modality's tokens sit in the sequence (CLS not counted).

        Returns
        -------
        list (one per layer) of Tensor of shape (B, H, 1+T, 1+T), ``T = sum(T_g)``
        """
        n_tokens = sum(len(p) for p in positions)
        layers = []
        for per_modality in zip(*maps):
            first = per_modality[0]
            full = first.new_zeros(first.shape[0], first.shape[1], 1 + n_tokens, 1 + n_tokens)
            for weights, where in zip(per_modality, positions):
                index = torch.cat([where.new_zeros(1), where + 1])
                full[:, :, index[:, None], index] += weights
            full[:, :, 0] /= len(per_modality)
            layers.append(full)
        return layers

    def forward_head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Apply the head to the fused vector.

        Parameters
        ----------
        hidden : Tensor of shape (B, 1, D)
            What :meth:`forward_features` returns.

        Returns
        -------
        Tensor of shape (B, n_outputs)
        """
        return self.head(hidden)

    def forward(self, **batch) -> torch.Tensor:
        """Encode each modality, fuse the CLS vectors to (B, 1, D) and apply the head.

        Parameters
        ----------
        **batch : Tensor
            A mixed batch (keys ``"<segment>/<array>"``), each of shape (B, ...).

        Returns
        -------
        Tensor of shape (B, n_outputs)
        """
        return self.forward_head(self.forward_features(**batch))
