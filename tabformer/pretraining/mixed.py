"""Pretraining on unlabeled mixed rows (text, image and table columns of one DataFrame).

``TabFormerPretrainer(objective="simclr")`` and ``(objective="mlm")`` dispatch here when
the tokenizer is a :class:`~tabformer.tokenizers.MixedTokenizer`; the batch keys are the
tokenizer's ``"<segment>/<array>"`` (see :mod:`tabformer.tokenizers.mixed`).

SimCLR on mixed rows: two views of every row, each corrupted per modality, go through
the shared :class:`~tabformer.tokenizers.MixedEmbedder` and encoder, and NT-Xent pulls
the two CLS projections of a row together (:class:`MixedTwoViewDataset`,
:class:`MixedSimCLRModule`):

- image columns: SimCLR's torchvision augmentation, drawn per image and per view;
- table cells: SCARF's corruption (Bahri et al., 2022): every cell is replaced, with
  probability ``corruption_rate``, by the same column's value in a random row. SCARF
  contrasts the clean row with one corrupted view and recommends a rate of 0.6; here,
  as in SimCLR, both views are corrupted independently, each with a milder 0.3 by
  default (two corrupted views differ about as much as one at 0.6 and a clean one);
- texts: a random contiguous crop of the words, then word masking (``[MASK]``).

Masked-token modelling on mixed rows (:class:`MixedMaskedTokenDataset`,
:class:`MixedMaskedTokenModule`): BERT's 80/10/10 masking of the words of every text
column, plus masking of categorical cells, each predicted from the whole row (its
other columns, images included).
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._data import TensorDictDataset
from ..tokenizers.base import MASK, PAD
from ..nn.embedders.mixed import SEPARATOR, MixedEmbedder, segment_arrays
from ..tokenizers.mixed import _kind_of
from ..tokenizers.tabular import FIRST_CATEGORY_ID, UNSEEN_ID
from .mlm import _N_SPECIAL, IGNORE_INDEX, make_generator, mask_tokens
from .simclr import SimCLRModule, nt_xent_loss

__all__ = ["MixedTwoViewDataset", "MixedSimCLRModule", "MixedMaskedTokenDataset", "MixedMaskedTokenModule", "crop_text"]

#: prefixes of the two views' keys: ``"view1/<segment>/<array>"``
VIEWS = ("view1", "view2")
#: array name of the masked-token labels inside a segment: ``"<segment>/mlm_labels"``
LABELS = "mlm_labels"

#: what a position outside a cropped text holds, per text array
_TEXT_FILL = {"input_ids": PAD, "attention_mask": False, "token_type_ids": 0, "word_ids": -1}


def _segments(tokenizer) -> list:
    """``[(segment key, kind, sub-tokenizer), ...]`` of a fitted MixedTokenizer."""
    tokenizers = {name: sub for name, sub, _ in tokenizer.transformers_}
    return [(key, _kind_of(tokenizers[name]), tokenizers[name]) for key, name, _ in tokenizer.segments_]




def _view(inputs: dict, view: str) -> dict:
    """The batch of one view: keys ``"<view>/<segment>/<array>"`` without ``"<view>/"``."""
    prefix = view + SEPARATOR
    return {k[len(prefix):]: v for k, v in inputs.items() if k.startswith(prefix)}


def _check_rate(name, value, low_open=False):
    if not isinstance(value, numbers.Real) or not (0 < value <= 1 if low_open else 0 <= value <= 1):
        bounds = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"objective__{name} must be in {bounds}, got {value!r}")


def crop_text(arrays: dict, min_fraction: float, generator: torch.Generator) -> dict:
    """Keep a random contiguous span of every row's words, moved to the front.

    The words of a row are its real tokens but the last one, the ``[SEP]`` the
    tokenizer appends (also after a text truncated at ``max_length``). A row of ``k``
    words keeps ``L`` of them, ``L`` uniform in ``[ceil(min_fraction * k), k]``
    (at least 1 when ``k >= 1``), starting at a uniform offset; the span is followed by
    the row's ``[SEP]`` and padding. So a crop looks like a shorter text: positions
    restart at 0, as for a real text of that length.

    Parameters
    ----------
    arrays : dict with ``input_ids`` and ``attention_mask`` (B, T), optionally
        ``token_type_ids`` / ``word_ids`` (gathered the same way) and 1-D arrays (kept).
    min_fraction : float in (0, 1]
    generator : torch.Generator

    Returns
    -------
    dict with the same keys and shapes.
    """
    mask = arrays["attention_mask"].bool()
    n_rows, width = mask.shape
    lengths = mask.sum(dim=1)
    words = (lengths - 1).clamp(min=0)
    shortest = torch.ceil(words.double() * min_fraction).long().clamp(min=1).minimum(words)
    keep = shortest + (torch.rand(n_rows, generator=generator, dtype=torch.float64) * (words - shortest + 1)).long()
    start = (torch.rand(n_rows, generator=generator, dtype=torch.float64) * (words - keep + 1)).long()
    position = torch.arange(width)[None, :]
    keep, start, last = keep[:, None], start[:, None], (lengths - 1).clamp(min=0)[:, None]
    source = torch.where(position < keep, start + position, last.expand(n_rows, width))
    inside = (position <= keep) & (lengths > 0)[:, None]
    out = {}
    for name, value in arrays.items():
        if value.ndim == 2 and value.shape == mask.shape:
            fill = _TEXT_FILL.get(name, 0)
            value = torch.where(inside, value.gather(1, source), torch.full_like(value, fill))
        out[name] = value
    return out


class MixedTwoViewDataset(TensorDictDataset):
    """Two independently corrupted views of every mixed row, new ones at every access.

    Batches (through ``__getitems__``) are ``({"view1/<key>": ..., "view2/<key>": ...},
    zeros)`` for every ``<key>`` of the tokenizer's output. Per segment:

    - image: ``image_transform(sub_tokenizer)`` applied to every present image, once per
      view (absent images keep their placeholder; the embedder masks them);
    - table: every cell (``cat_ids``; ``num_values`` with ``num_missing``) is replaced,
      with probability ``corruption_rate``, by the same column's cell in a uniformly
      drawn row of this dataset (possibly the row itself, as a draw from the column's
      empirical distribution is in SCARF; with a validation split, rows of both parts);
    - text: :func:`crop_text` with ``text_crop``, then each real non-special token
      becomes ``[MASK]`` with probability ``text_mask_prob`` (no 80/10/10 here: the
      goal is a corrupted view, not a prediction target).

    Parameters
    ----------
    X : dict of arrays from a fitted MixedTokenizer's ``transform``
    tokenizer : fitted :class:`~tabformer.tokenizers.MixedTokenizer`
    image_transform : callable or None
        ``sub_tokenizer -> ((C, H, W) -> (C, H, W))``; ``None`` uses
        :func:`~tabformer.pretraining.augment.image_augmentation` with its defaults.
    corruption_rate, text_mask_prob : float in [0, 1]
    text_crop : float in (0, 1]
    random_state : int or None
        Seeds the stream of per-batch seeds; torchvision draws from the global torch
        RNG, which is forked around each batch so the caller's state is untouched.
    """

    def __init__(self, X, tokenizer, image_transform=None, corruption_rate=0.3, text_mask_prob=0.15, text_crop=0.7, random_state=None):
        super().__init__(X)
        _check_rate("corruption_rate", corruption_rate)
        _check_rate("text_mask_prob", text_mask_prob)
        _check_rate("text_crop", text_crop, low_open=True)
        if image_transform is None:
            from .augment import image_augmentation

            def image_transform(sub):
                return image_augmentation(sub.image_size_, sub.n_channels_)

        self.segments = [(key, kind) for key, kind, _ in _segments(tokenizer)]
        self.transforms = {key: image_transform(sub) for key, kind, sub in _segments(tokenizer) if kind == "image"}
        self.corruption_rate = corruption_rate
        self.text_mask_prob = text_mask_prob
        self.text_crop = text_crop
        self.seeds = np.random.default_rng(random_state)

    def __getitems__(self, indices):
        X, y = super().__getitems__(indices)
        seed = int(self.seeds.integers(2**63 - 1))
        generator = torch.Generator()
        generator.manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # torchvision's transforms draw from the global RNG
            views = [self._view(X, generator) for _ in VIEWS]
        return {f"{name}{SEPARATOR}{k}": v for name, view in zip(VIEWS, views) for k, v in view.items()}, y

    def _view(self, X: dict, generator: torch.Generator) -> dict:
        view = dict(X)
        for key, kind in self.segments:
            arrays = segment_arrays(X, key)
            if kind == "image":
                arrays = self._augment_images(key, arrays)
            elif kind == "text":
                arrays = self._corrupt_text(arrays, generator)
            else:
                arrays = self._corrupt_cells(key, arrays, generator)
            view.update({f"{key}{SEPARATOR}{k}": v for k, v in arrays.items()})
        return view

    def _augment_images(self, key, arrays):
        pixels, present = arrays["pixels"], arrays["present"].bool()
        transform = self.transforms[key]
        augmented = pixels.clone()
        for i in torch.nonzero(present).flatten().tolist():
            augmented[i] = transform(pixels[i])
        return dict(arrays, pixels=augmented)

    def _corrupt_text(self, arrays, generator):
        arrays = crop_text(arrays, self.text_crop, generator)
        ids = arrays["input_ids"]
        real = arrays["attention_mask"].bool() & (ids >= _N_SPECIAL)
        chosen = real & (torch.rand(ids.shape, generator=generator) < self.text_mask_prob)
        return dict(arrays, input_ids=ids.masked_fill(chosen, MASK))

    def _corrupt_cells(self, key, arrays, generator):
        """SCARF: each cell, with probability ``corruption_rate``, from a random row."""
        full = segment_arrays(self.X, key)
        out = dict(arrays)
        for names in (("cat_ids",), ("num_values", "num_missing")):
            if names[0] not in arrays or arrays[names[0]].ndim != 2 or arrays[names[0]].shape[1] == 0:
                continue
            shape = arrays[names[0]].shape
            corrupt = torch.rand(shape, generator=generator) < self.corruption_rate
            donors = torch.randint(self.n_samples, shape, generator=generator)
            columns = torch.arange(shape[1]).expand(shape)
            for name in names:
                out[name] = torch.where(corrupt, full[name][donors, columns], arrays[name])
        return out


class MixedSimCLRModule(SimCLRModule):
    """SimCLR's loss on mixed rows: ``forward(**views)`` takes the dataset's
    ``"view1/<key>"`` and ``"view2/<key>"`` tensors and returns the NT-Xent loss."""

    def embed(self, batch: dict) -> torch.Tensor:
        """CLS embeddings (B, D) of a mixed batch (keys ``"<segment>/<array>"``)."""
        tokens, mask = self.embedder(**batch)
        return self.encoder(tokens, mask)[:, 0]

    def forward(self, **inputs) -> torch.Tensor:
        first, second = (_view(inputs, name) for name in VIEWS)
        n_rows = len(next(iter(first.values())))
        # Both views in one pass, as for images: BatchNorm in the head sees all 2B.
        z = self.projection(self.embed({k: torch.cat([v, second[k]]) for k, v in first.items()}))
        return nt_xent_loss(z[:n_rows], z[n_rows:], self.temperature)


class MixedMaskedTokenDataset(TensorDictDataset):
    """Mixed rows with fresh masks at every access: text words and categorical cells.

    - every text segment: BERT's masking of its real, non-special tokens
      (:func:`~tabformer.pretraining.mlm.mask_tokens`: ``mask_prob`` chosen; of those
      80% ``[MASK]``, 10% a random word, 10% unchanged); rows whose text is missing
      take no part;
    - the table segment: each categorical cell holding a fitted category (ids ``2..``;
      missing cells are not targets) is chosen with probability ``mask_prob`` and
      becomes the column's UNSEEN id ``1``. That id already means "a value of this
      column I cannot tell" in every column's own id space, so masking needs no new
      embedding row and nothing leaks across columns; it is always replaced (no
      80/10/10), since a random category would be a SCARF-like corruption rather than
      BERT's "keep the encoder honest" trick, and the embedding of id 1 is otherwise
      only trained by values unseen at fit time;
    - numeric cells and images are never masked: they are context only (predicting a
      number needs a regression head and a loss scale of its own).

    Batches carry ``"<segment>/mlm_labels"``: for text the original id at chosen
    positions, for the table the original column-local id (``2..``) of chosen cells,
    ``-100`` elsewhere.

    Parameters
    ----------
    X : dict of arrays from a fitted MixedTokenizer's ``transform``
    tokenizer : fitted :class:`~tabformer.tokenizers.MixedTokenizer`
    mask_prob, mask_token_prob, random_token_prob : float
    random_state : int or None
    """

    def __init__(self, X, tokenizer, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, random_state=None):
        X = {key: value for key, value in X.items() if not key.endswith(SEPARATOR + "word_ids")}
        super().__init__(X)
        self.text_segments = [(key, int(sub.vocab_size_)) for key, kind, sub in _segments(tokenizer) if kind == "text"]
        self.table_segments = [
            key for key, kind, _ in _segments(tokenizer)
            if kind == "table" and f"{key}{SEPARATOR}cat_ids" in self.X and self.X[f"{key}{SEPARATOR}cat_ids"].shape[1] > 0
        ]
        if not self.text_segments and not self.table_segments:
            raise ValueError(
                "objective='mlm' on mixed rows masks words of text columns and categorical cells; "
                "these rows have neither (use objective='simclr')"
            )
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.random_token_prob = random_token_prob
        self.generator = make_generator(random_state)

    def __getitems__(self, indices):
        X, y = super().__getitems__(indices)
        X = dict(X)
        for key, vocab_size in self.text_segments:
            arrays = segment_arrays(X, key)
            ids = arrays["input_ids"]
            candidates = arrays["attention_mask"].bool() & (ids >= _N_SPECIAL)
            if "present" in arrays:
                candidates &= arrays["present"].bool()[:, None]
            ids, labels = mask_tokens(
                ids, candidates, vocab_size, self.mask_prob, self.mask_token_prob, self.random_token_prob, self.generator
            )
            X[f"{key}{SEPARATOR}input_ids"], X[f"{key}{SEPARATOR}{LABELS}"] = ids, labels
        for key in self.table_segments:
            cat_ids = X[f"{key}{SEPARATOR}cat_ids"]
            chosen = (cat_ids >= FIRST_CATEGORY_ID) & (torch.rand(cat_ids.shape, generator=self.generator) < self.mask_prob)
            X[f"{key}{SEPARATOR}cat_ids"] = cat_ids.masked_fill(chosen, UNSEEN_ID)
            X[f"{key}{SEPARATOR}{LABELS}"] = torch.where(chosen, cat_ids, torch.full_like(cat_ids, IGNORE_INDEX))
        return X, y


class _TokenHead(nn.Module):
    """``LayerNorm(GELU(Linear(h)))`` then logits against an output matrix (+ bias):
    :class:`~tabformer.pretraining.mlm.MaskedTokenModule`'s head, one per vocabulary."""

    def __init__(self, d_model: int, n_outputs: int, tie_weights: bool):
        super().__init__()
        self.transform = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model))
        self.decoder = None if tie_weights else nn.Linear(d_model, n_outputs, bias=False)
        self.bias = nn.Parameter(torch.zeros(n_outputs))

    def forward(self, states: torch.Tensor, tied_weight: torch.Tensor) -> torch.Tensor:
        weight = tied_weight if self.decoder is None else self.decoder.weight
        return F.linear(self.transform(states), weight, self.bias)


class MixedMaskedTokenModule(nn.Module):
    """Loss module for :class:`MixedMaskedTokenDataset` batches.

    One pass of the whole row through the embedder and encoder; then, per text
    sub-tokenizer, a head onto its vocabulary tied to its word embeddings (as
    :class:`~tabformer.pretraining.mlm.MaskedTokenModule`), and per table, a head onto
    the rows of the categorical embedding table tied to ``category_embedding``, where a
    masked cell of column ``j`` is scored only against column ``j``'s own categories
    (its rows ``offset_j + 2 ..``; every other row, and its missing/unseen rows, get
    ``-inf``-like logits). The loss is the mean cross-entropy over all masked positions,
    words and cells together, i.e. the two losses averaged with weights the number of
    masked positions of each.

    Parameters
    ----------
    embedder : MixedEmbedder
    encoder : TransformerEncoder
    tie_weights : bool, default=True
    """

    def __init__(self, embedder: nn.Module, encoder: nn.Module, tie_weights: bool = True):
        super().__init__()
        if not isinstance(embedder, MixedEmbedder):
            raise TypeError(f"mixed masked-token modelling needs a MixedEmbedder, got {type(embedder).__name__}")
        self.embedder = embedder
        self.encoder = encoder
        d_model = encoder.d_model
        self.heads = nn.ModuleDict()
        for index, name in enumerate(embedder.names):
            sub = embedder.embedders[index]
            if embedder.kinds[name] == "text":
                self.heads[f"g{index}"] = _TokenHead(d_model, sub.word_embeddings.num_embeddings, tie_weights)
            elif getattr(sub, "n_categorical", 0):
                n_rows = sub.category_embedding.num_embeddings
                self.heads[f"g{index}"] = _TokenHead(d_model, n_rows, tie_weights)
                # allowed[j, r]: row r of the table is one of column j's categories
                bounds = torch.cat([sub.category_offsets.cpu(), torch.tensor([n_rows])])
                rows = torch.arange(n_rows)[None, :]
                allowed = (rows >= bounds[:-1, None] + FIRST_CATEGORY_ID) & (rows < bounds[1:, None])
                self.register_buffer(f"allowed_g{index}", allowed, persistent=False)

    def forward(self, **inputs) -> torch.Tensor:
        suffix = SEPARATOR + LABELS
        labels = {k[: -len(suffix)]: inputs.pop(k) for k in [k for k in inputs if k.endswith(suffix)]}
        parts = self.embedder.forward_segments(**inputs)
        tokens = torch.cat([t for _, t, _ in parts], dim=1)
        mask = torch.cat([m for _, _, m in parts], dim=1)
        hidden = self.encoder(tokens, mask)[:, 1:]
        total, count, start = hidden.new_zeros((), dtype=torch.float32), 0, 0
        for (key, name, _), (_, segment, _) in zip(self.embedder.segments, parts):
            states = hidden[:, start: start + segment.shape[1]]
            start += segment.shape[1]
            if key not in labels:
                continue
            index = self.embedder.names.index(name)
            sub, head = self.embedder.embedders[index], self.heads[f"g{index}"]
            if self.embedder.kinds[name] == "text":
                target = labels[key][:, : states.shape[1]]  # the text embedder cuts padding in training
                chosen = target != IGNORE_INDEX
                logits = head(states[chosen], sub.word_embeddings.weight)
                target = target[chosen]
            else:
                cells = states[:, sub.n_numeric: sub.n_numeric + sub.n_categorical]  # numbers come first
                target = labels[key]
                chosen = target != IGNORE_INDEX
                column = torch.arange(target.shape[1], device=target.device).expand_as(target)[chosen]
                logits = head(cells[chosen], sub.category_embedding.weight).float()
                allowed = getattr(self, f"allowed_g{index}")[column]
                logits = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
                target = target[chosen] + sub.category_offsets[column]
            if len(target):
                total = total + F.cross_entropy(logits.float(), target, reduction="sum")
                count += len(target)
        if count == 0:
            return hidden.sum() * 0.0  # nothing masked in this batch
        return total / count
