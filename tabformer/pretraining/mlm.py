"""Masked-token pretraining (BERT's masked language model) for discrete token ids.

Each epoch draws fresh masks: 15% of the real, non-special tokens of every row are
chosen; of those, 80% become ``[MASK]``, 10% a random token and 10% stay unchanged
(Devlin et al., 2019), and the loss is the cross-entropy of the original id at the
chosen positions only. The output layer shares its weights with the input word
embeddings (as BERT does), which halves the parameters the objective adds.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F
from torch import nn

from .._data import TensorDictDataset
from ..tokenizers.base import MASK, SPECIAL_TOKENS
from ..tokenizers.mixed import MixedTokenizer
from . import register_objective

__all__ = ["MaskedTokenModeling", "MaskedTokenDataset", "MaskedTokenModule", "mask_tokens"]

#: label of positions that take no part in the loss
IGNORE_INDEX = -100
_N_SPECIAL = len(SPECIAL_TOKENS)  # ids below this are [PAD] [UNK] [CLS] [SEP] [MASK]


class MaskedTokenDataset(TensorDictDataset):
    """Tokenized rows that come out with fresh masks at every access.

    Batches carry ``input_ids`` (corrupted), the other tokenizer arrays, and
    ``mlm_labels`` (original id at chosen positions, ``-100`` elsewhere).

    Parameters
    ----------
    X : dict of arrays from a discrete tokenizer (``input_ids``, ``attention_mask``...)
    vocab_size : int
    mask_prob, mask_token_prob, random_token_prob : float
    random_state : int or None
    """

    def __init__(self, X, vocab_size, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, random_state=None):
        X = {key: value for key, value in X.items() if key != "word_ids"}
        super().__init__(X)
        self.vocab_size = int(vocab_size)
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.random_token_prob = random_token_prob
        self.generator = make_generator(random_state)

    def __getitems__(self, indices):
        X, y = super().__getitems__(indices)
        ids = X["input_ids"]
        candidates = X["attention_mask"].bool() & (ids >= _N_SPECIAL)
        ids, labels = mask_tokens(
            ids, candidates, self.vocab_size, self.mask_prob, self.mask_token_prob, self.random_token_prob, self.generator
        )
        return dict(X, input_ids=ids, mlm_labels=labels), y


def make_generator(random_state=None) -> torch.Generator:
    """A private torch generator seeded from ``random_state`` (``None``: from the global RNG)."""
    generator = torch.Generator()
    generator.manual_seed(int(torch.randint(2**62, ()).item()) if random_state is None else int(random_state))
    return generator


def mask_tokens(ids, candidates, vocab_size, mask_prob, mask_token_prob, random_token_prob, generator):
    """BERT's corruption of a (B, T) id batch; returns ``(corrupted ids, labels)``.

    Each ``candidates`` position is chosen with probability ``mask_prob``; a chosen id
    becomes ``[MASK]`` (``mask_token_prob``), a random non-special id below
    ``vocab_size`` (``random_token_prob``) or stays. ``labels`` hold the original id at
    chosen positions and ``IGNORE_INDEX`` elsewhere. ``ids`` is not modified.
    """
    ids = ids.clone()
    draw = torch.rand(ids.shape, generator=generator)
    chosen = candidates & (draw < mask_prob)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    kind = torch.rand(ids.shape, generator=generator)
    ids[chosen & (kind < mask_token_prob)] = MASK
    random = chosen & (kind >= mask_token_prob) & (kind < mask_token_prob + random_token_prob)
    replacement = torch.randint(_N_SPECIAL, int(vocab_size), ids.shape, generator=generator)
    return torch.where(random, replacement, ids), labels


class MaskedTokenModule(nn.Module):
    """Loss module: embed, encode, predict the original id at the chosen positions.

    Head: ``LayerNorm(GELU(Linear(h)))`` then a linear map onto the vocabulary through
    the (tied) word-embedding matrix plus a bias.
    """

    def __init__(self, embedder: nn.Module, encoder: nn.Module, vocab_size: int, tie_weights: bool = True):
        super().__init__()
        self.embedder = embedder
        self.encoder = encoder
        d_model = encoder.d_model
        self.transform = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model))
        self.decoder = None if tie_weights else nn.Linear(d_model, vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, input_ids, attention_mask, mlm_labels, token_type_ids=None, **_):
        tokens, mask = self.embedder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        hidden = self.encoder(tokens, mask)[:, 1:]
        labels = mlm_labels[:, : hidden.shape[1]]
        chosen = labels != IGNORE_INDEX
        if not bool(chosen.any()):
            return hidden.sum() * 0.0  # nothing masked in this batch (very short rows)
        # Only the chosen positions go through the vocabulary-sized output layer.
        states = self.transform(hidden[chosen])
        weight = self.embedder.word_embeddings.weight if self.decoder is None else self.decoder.weight
        return F.cross_entropy(F.linear(states, weight, self.bias), labels[chosen])


@register_objective("mlm")
class MaskedTokenModeling:
    """Masked-token objective for :class:`~tabformer.TabFormerPretrainer` (``objective="mlm"``).

    Parameters
    ----------
    mask_prob : float, default=0.15
        Share of real, non-special tokens chosen per row and epoch.
    mask_token_prob : float, default=0.8
        Share of chosen tokens replaced by ``[MASK]``.
    random_token_prob : float, default=0.1
        Share of chosen tokens replaced by a random non-special token; the rest stay.
    tie_weights : bool, default=True
        Output layer shares the input word embeddings.

    Notes
    -----
    With a :class:`~tabformer.tokenizers.MixedTokenizer` (a DataFrame with text, image
    and table columns), the dataset and loss module come from
    :mod:`tabformer.pretraining.mixed`: text words are masked as above and categorical
    cells with the same ``mask_prob`` (see
    :class:`~tabformer.pretraining.mixed.MixedMaskedTokenDataset`).
    """

    def __init__(self, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, tie_weights=True):
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.random_token_prob = random_token_prob
        self.tie_weights = tie_weights

    def _check(self, tokenizer):
        self._check_probabilities()
        if not hasattr(tokenizer, "vocab_size_"):
            raise TypeError(
                f"objective='mlm' masks discrete token ids and needs a vocabulary tokenizer "
                f"(e.g. tokenizer='wordpiece'); got {type(tokenizer).__name__}"
            )

    def _check_probabilities(self):
        for name in ("mask_prob", "mask_token_prob", "random_token_prob"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
                raise ValueError(f"objective__{name} must be a probability in [0, 1], got {value!r}")
        if not 0 < self.mask_prob:
            raise ValueError("objective__mask_prob must be > 0: with nothing masked there is nothing to learn")
        if self.mask_token_prob + self.random_token_prob > 1:
            raise ValueError(
                f"objective__mask_token_prob + objective__random_token_prob = "
                f"{self.mask_token_prob + self.random_token_prob} exceeds 1"
            )

    def make_dataset(self, batch, tokenizer, random_state=None) -> MaskedTokenDataset:
        """Dataset of the tokenized rows, masked afresh at every access."""
        if isinstance(tokenizer, MixedTokenizer):
            from .mixed import MixedMaskedTokenDataset

            self._check_probabilities()
            return MixedMaskedTokenDataset(
                batch, tokenizer, self.mask_prob, self.mask_token_prob, self.random_token_prob, random_state
            )
        self._check(tokenizer)
        return MaskedTokenDataset(batch, tokenizer.vocab_size_, self.mask_prob, self.mask_token_prob, self.random_token_prob, random_state)

    def build_module(self, tokenizer, embedder, encoder) -> MaskedTokenModule:
        """The loss module sharing ``embedder`` and ``encoder``, with a masked-token head."""
        if isinstance(tokenizer, MixedTokenizer):
            from .mixed import MixedMaskedTokenModule

            self._check_probabilities()
            return MixedMaskedTokenModule(embedder, encoder, self.tie_weights)
        self._check(tokenizer)
        if not hasattr(embedder, "word_embeddings"):
            raise TypeError(f"objective='mlm' needs an embedder with word_embeddings, got {type(embedder).__name__}")
        return MaskedTokenModule(embedder, encoder, tokenizer.vocab_size_, self.tie_weights)
