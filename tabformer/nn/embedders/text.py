"""Sub-word ids as tokens: word + segment embeddings; positions are the encoder's."""

from __future__ import annotations

import torch
from torch import nn

from .augment import Augmented

__all__ = ["TextEmbedder"]


class TextEmbedder(Augmented, nn.Module):
    """Word embedding + segment embedding per sub-word; positions are the encoder's.

    While training, columns that are padding in every row of the batch are cut off:
    the dataset is padded once to its longest text, and most batches are shorter.
    Padding never changes the output, so this only saves time. In eval mode nothing
    is cut, so outputs of different batches line up.

    Parameters
    ----------
    vocab_size : int
        Number of sub-word ids.
    d_model : int
        Token width ``D``.
    n_segments : int, default=2
        Number of segment (token type) ids: 2 for sentence pairs.
    token_dropout : float, default=0.0
        Training only: probability that a real, non-special sub-word becomes [MASK].
    mask_id : int, default=4
        Id of ``[MASK]``, what a dropped sub-word becomes.
    n_special : int, default=5
        Ids below this are special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]), never dropped.
    """

    def __init__(
        self, vocab_size: int, d_model: int, n_segments: int = 2, token_dropout: float = 0.0, mask_id: int = 4, n_special: int = 5
    ):
        super().__init__()
        self.mask_id = mask_id
        self.n_special = n_special
        self.token_dropout = token_dropout
        self.word_embeddings = nn.Embedding(vocab_size, d_model)
        self.token_type_embeddings = nn.Embedding(n_segments, d_model)
        nn.init.normal_(self.word_embeddings.weight, std=0.02)
        nn.init.normal_(self.token_type_embeddings.weight, std=0.02)

    def forward(self, input_ids, attention_mask, token_type_ids=None, **_):
        """Embed sub-word ids.

        Parameters
        ----------
        input_ids : long Tensor of shape (B, T)
        attention_mask : Tensor of shape (B, T)
            Non-zero for real sub-words (padding at the end).
        token_type_ids : long Tensor of shape (B, T), or None, default=None
            Segment of each sub-word; ``None``: all segment 0.

        Returns
        -------
        tokens : Tensor of shape (B, T', D)
            ``T' <= T``: while training on the CPU, all-padding columns are cut off.
        mask : bool Tensor of shape (B, T')
        """
        mask = attention_mask.bool()
        # Reading the length back from a GPU (or under torch.compile) would stall the
        # queue (or break the graph) every batch: there the estimators cut on the host.
        if self.training and mask.device.type == "cpu" and not torch.compiler.is_compiling():
            length = max(int(mask.sum(dim=1).max()), 1)
            input_ids, mask = input_ids[:, :length], mask[:, :length]
            token_type_ids = None if token_type_ids is None else token_type_ids[:, :length]
        # getattr: embedders pickled before the setting existed have none.
        if self.augmenting and getattr(self, "token_dropout", 0.0) > 0:
            drop = (torch.rand(input_ids.shape, device=input_ids.device) < self.token_dropout) & mask
            drop &= input_ids >= self.n_special
            input_ids = input_ids.masked_fill(drop, self.mask_id)
        tokens = self.word_embeddings(input_ids)
        if token_type_ids is None:
            tokens = tokens + self.token_type_embeddings.weight[0]
        else:
            tokens = tokens + self.token_type_embeddings(token_type_ids)
        return tokens, mask
