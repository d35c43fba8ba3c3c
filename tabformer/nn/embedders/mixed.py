"""Mixed inputs: every segment's embedder output concatenated into one sequence, with a
column embedding per text/image column and positions restarting in every text segment.
The batch keys are ``"<segment>/<array>"`` (see :class:`~tabformer.tokenizers.MixedTokenizer`)."""

from __future__ import annotations

import torch
from torch import nn

from .augment import Augmented

__all__ = ["MixedEmbedder", "segment_arrays", "SEPARATOR"]

#: separates a segment's key from the sub-tokenizer's array name in the batch dict
SEPARATOR = "/"


def segment_arrays(batch: dict, key: str) -> dict:
    """The arrays of segment ``key``, without the ``"<key>/"`` prefix.

    Array names never contain the separator, so splitting at the *last* one gives the
    exact segment key even when a column name itself holds a "/".

    Parameters
    ----------
    batch : dict of str to Tensor
        A mixed batch, keys ``"<segment>/<array>"``.
    key : str
        The segment's key.

    Returns
    -------
    arrays : dict of str to Tensor
        ``{array: value}`` for that segment (each value of shape ``(B, ...)``).
    """
    out = {}
    for name, value in batch.items():
        segment, _, array = name.rpartition(SEPARATOR)
        if segment == key:
            out[array] = value
    return out


class MixedEmbedder(Augmented, nn.Module):
    """Embed every segment and concatenate them into one ``(B, T, D)`` sequence.

    Parameters
    ----------
    segments : list of (key, name, column or None)
        From :attr:`~tabformer.tokenizers.MixedTokenizer.segments_`, in sequence order.
    kinds : dict of str to {"text", "image", "table"}
        Kind of each sub-tokenizer ``name``.
    embedders : dict of str to nn.Module
        One embedder per sub-tokenizer, shared by all of its columns.
    max_lengths : dict of str to int
        Text tokenizers' ``max_length``: size of their position tables.
    d_model : int
        Token width ``D``.
    segment_dropout : float, default=0.0
        Training only: probability of masking a whole segment of a row.
    """

    def __init__(self, segments, kinds, embedders, max_lengths, d_model, segment_dropout=0.0):
        super().__init__()
        self.segment_dropout = float(segment_dropout)
        self.segments = [tuple(s) for s in segments]
        self.kinds = dict(kinds)
        self.names = list(embedders)
        # ModuleDict keys may not contain "."; index them instead of using user names.
        self.embedders = nn.ModuleList(embedders[name] for name in self.names)
        self.text_positions = nn.ParameterDict(
            {
                f"t{self.names.index(name)}": nn.Parameter(torch.randn(length, d_model) * 0.02)
                for name, length in max_lengths.items()
            }
        )
        n_columns = sum(1 for _, name, column in self.segments if column is not None)
        self.column_embedding = nn.Parameter(torch.randn(max(n_columns, 1), d_model) * 0.02)

    @classmethod
    def from_spec(cls, spec: dict, d_model: int, build) -> MixedEmbedder:
        """Build from a :class:`~tabformer.tokenizers.MixedTokenizer`'s embedder spec.

        Parameters
        ----------
        spec : dict
            ``{"segments", "kinds", "embedders": {name: sub-spec}, "max_lengths", "segment_dropout"}``.
        d_model : int
            Token width ``D``.
        build : callable
            ``build(sub_spec, d_model)`` builds each sub-embedder
            (:func:`~tabformer.nn.embedders.build_embedder`).

        Returns
        -------
        embedder : MixedEmbedder
        """
        embedders = {name: build(sub, d_model) for name, sub in spec["embedders"].items()}
        return cls(
            spec["segments"], spec["kinds"], embedders, spec["max_lengths"], d_model, segment_dropout=spec["segment_dropout"]
        )

    @property
    def group_names(self) -> list:
        """Sub-tokenizer names, in the order :meth:`forward_groups` returns them."""
        return list(self.names)

    def forward_segments(self, **batch) -> list:
        """Embed every segment separately.

        Parameters
        ----------
        **batch : Tensor
            The mixed batch, keys ``"<segment>/<array>"``.

        Returns
        -------
        parts : list of (str, Tensor, Tensor)
            ``(name, tokens (B, T_s, D), mask (B, T_s) bool)`` for every segment, in
            sequence order; ``name`` is the segment's sub-tokenizer.
        """
        out, column_index = [], 0
        for key, name, column in self.segments:
            arrays = segment_arrays(batch, key)
            present = arrays.pop("present", None)
            index = self.names.index(name)
            tokens, mask = self.embedders[index](**arrays)
            if mask is None:
                mask = torch.ones(tokens.shape[:2], dtype=torch.bool, device=tokens.device)
            if self.kinds[name] == "text":
                tokens = tokens + self.text_positions[f"t{index}"][: tokens.shape[1]].to(tokens.dtype)
            if column is not None:
                tokens = tokens + self.column_embedding[column_index].to(tokens.dtype)
                column_index += 1
            if present is not None:
                mask = mask & present.bool()[:, None]
            out.append((name, tokens, mask))
        if self.augmenting and self.segment_dropout > 0 and len(out) > 1:
            out = self._drop_segments(out)
        return out

    def _drop_segments(self, parts: list) -> list:
        """Mask whole segments of random rows; a row losing all of them keeps all."""
        batch = parts[0][1].shape[0]
        device = parts[0][1].device
        keep = torch.rand(batch, len(parts), device=device) >= self.segment_dropout
        keep |= ~keep.any(dim=1, keepdim=True)
        return [(name, tokens, mask & keep[:, [i]]) for i, (name, tokens, mask) in enumerate(parts)]

    def forward_groups(self, return_positions: bool = False, **batch) -> list:
        """One ``(tokens, mask)`` per sub-tokenizer (its segments concatenated): late fusion's input.

        Parameters
        ----------
        return_positions : bool, default=False
            Also return, per group, where its tokens sit in :meth:`forward`'s one sequence.
        **batch : Tensor
            The mixed batch, keys ``"<segment>/<array>"``.

        Returns
        -------
        list
            In :attr:`group_names` order, ``(tokens (B, T_g, D), mask (B, T_g))``, or with
            ``return_positions`` ``(tokens, mask, positions)``: ``positions`` a long Tensor of
            shape (T_g,), the indices of the group's tokens in the concatenation of every
            segment (CLS not counted).
        """
        grouped = {name: [] for name in self.names}
        start = 0
        for name, tokens, mask in self.forward_segments(**batch):
            where = torch.arange(start, start + tokens.shape[1], device=tokens.device) if return_positions else None
            grouped[name].append((tokens, mask, where))
            start += tokens.shape[1]
        groups = []
        for parts in grouped.values():
            tokens, mask = torch.cat([t for t, _, _ in parts], dim=1), torch.cat([m for _, m, _ in parts], dim=1)
            groups.append((tokens, mask, torch.cat([p for _, _, p in parts])) if return_positions else (tokens, mask))
        return groups

    def forward_with_groups(self, **batch):
        """As :meth:`forward`, plus the modality of every token (mid fusion).

        Returns
        -------
        tokens : Tensor of shape (B, T, D)
        mask : bool Tensor of shape (B, T)
        groups : long Tensor of shape (T,)
            Index of each token's sub-tokenizer in :attr:`group_names`.
        """
        parts = self.forward_segments(**batch)
        tokens = torch.cat([t for _, t, _ in parts], dim=1)
        groups = torch.cat(
            [torch.full((t.shape[1],), self.names.index(name), dtype=torch.long, device=t.device) for name, t, _ in parts]
        )
        return tokens, torch.cat([m for _, _, m in parts], dim=1), groups

    def forward(self, **batch):
        """Embed all segments, concatenated (early fusion).

        Returns ``(tokens (B, T, D), mask (B, T) bool)``; ``T`` sums every segment's length.
        """
        tokens, mask, _ = self.forward_with_groups(**batch)
        return tokens, mask
