"""The views objectives train on: augmented pairs (SimCLR) and masked copies (MLM), drawn afresh at every access
so every epoch sees new ones, from a seed stream that makes a run reproducible without touching the caller's global RNG.

Images: SimCLR's recipe (Chen et al., 2020), random resized crop, horizontal flip, colour jitter and random grayscale
(colour images only), and Gaussian blur, with torchvision transforms v2. Masked tokens: BERT's 80/10/10 (Devlin et al.,
2019). Mixed rows (keys ``"<segment>/<array>"``, see :class:`~tabformer.tokenizers.MixedTokenizer`): image columns get the
image augmentation, per image and view; table cells SCARF's corruption (Bahri et al., 2022; see :class:`MixedTwoViewDataset`);
texts a random crop of the words, then word masking. Masked-token modelling masks the words of every text column and
categorical cells. Both views of a batch come out under ``"view1/<key>"`` and ``"view2/<key>"``.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from torch.utils.data import Dataset

from .._data import TensorDictDataset
from ..nn.embedders.mixed import SEPARATOR, segment_arrays
from ..nn.heads import IGNORE_INDEX
from ..tokenizers.base import MASK, SPECIAL_TOKENS
from ..tokenizers.tabular import FIRST_CATEGORY_ID, UNSEEN_ID
from ._crops import crop_text
from ._draws import Draws, RowSeededMasks

__all__ = [
    "image_augmentation",
    "TwoViewDataset",
    "MaskedTokenDataset",
    "MixedTwoViewDataset",
    "MixedMaskedTokenDataset",
    "mask_tokens",
    "crop_text",
    "view_batch",
    "VIEWS",
]

#: prefixes of the two views' keys: ``"view1/<key>"``
VIEWS = ("view1", "view2")
#: array name of the masked-token labels (``"<segment>/mlm_labels"`` on mixed rows)
LABELS = "mlm_labels"
N_SPECIAL = len(SPECIAL_TOKENS)  # ids below this are [PAD] [UNK] [CLS] [SEP] [MASK]


def view_batch(inputs: dict, view: str) -> dict:
    """The batch of one view: keys ``"<view>/<key>"`` without ``"<view>/"``.

    Parameters
    ----------
    inputs : dict of str to Tensor
        A two-view batch, keys ``"view1/<key>"`` and ``"view2/<key>"``.
    view : str
        One of :data:`VIEWS`.

    Returns
    -------
    batch : dict of str to Tensor
        ``{<key>: value}`` of that view (values unchanged, first dimension ``B``).
    """
    prefix = view + SEPARATOR
    return {k[len(prefix) :]: v for k, v in inputs.items() if k.startswith(prefix)}


def _segments(tokenizer) -> list:
    """``[(segment key, kind, sub-tokenizer), ...]`` of a fitted MixedTokenizer."""
    tokenizers = {name: sub for name, sub, _ in tokenizer.transformers_}
    return [(key, tokenizer.segment_kind(tokenizers[name]), tokenizers[name]) for key, name, _ in tokenizer.segments_]


def image_augmentation(
    image_size,
    n_channels: int,
    *,
    crop_scale=(0.3, 1.0),
    crop_ratio=(3 / 4, 4 / 3),
    flip_p=0.5,
    jitter_p=0.8,
    brightness=0.4,
    contrast=0.4,
    saturation=0.4,
    hue=0.1,
    grayscale_p=0.2,
    blur_p=0.5,
    blur_sigma=(0.1, 2.0),
    blur_kernel=3,
):
    """The SimCLR view transform for ``(C, H, W)`` float images in ``[0, 1]``.

    Parameters
    ----------
    image_size : (int, int)
        Output size of the random resized crop (the tokenizer's fitted size).
    n_channels : int
        1 (grey: no saturation, hue or grayscale step) or 3.
    crop_scale, crop_ratio : pairs of float, default=(0.3, 1.0) and (3/4, 4/3)
        Area fraction and aspect-ratio range of the random crop. SimCLR uses ``(0.08, 1)`` on ImageNet; small
        low-resolution images keep more of the object.
    flip_p, grayscale_p : float, default=0.5 and 0.2
        Probabilities of a horizontal flip and of turning a colour view grey.
    jitter_p, brightness, contrast, saturation, hue : float, default=0.8, 0.4, 0.4, 0.4, 0.1
        Colour jitter, applied with probability ``jitter_p``.
    blur_p, blur_sigma, blur_kernel : float, pair of float, odd int, default=0.5, (0.1, 2.0), 3
        Gaussian blur probability, sigma range and kernel size.

    Returns
    -------
    transform : torchvision.transforms.v2.Compose
        Maps a ``(C, H, W)`` tensor to a random ``(C, *image_size)`` view.
    """
    from torchvision.transforms import v2  # here: torchvision costs seconds to import, and only images need it

    steps = [v2.RandomResizedCrop(tuple(image_size), scale=tuple(crop_scale), ratio=tuple(crop_ratio), antialias=True)]
    if flip_p:
        steps.append(v2.RandomHorizontalFlip(flip_p))
    colour = n_channels == 3
    jitter = v2.ColorJitter(brightness, contrast, saturation if colour else 0, hue if colour else 0)
    if jitter_p and (brightness or contrast or (colour and (saturation or hue))):
        steps.append(v2.RandomApply([jitter], p=jitter_p))
    if colour and grayscale_p:
        steps.append(v2.RandomGrayscale(grayscale_p))
    if blur_p:
        steps.append(v2.RandomApply([v2.GaussianBlur(blur_kernel, tuple(blur_sigma))], p=blur_p))
    return v2.Compose(steps)


class TwoViewDataset(Dataset):
    """Two independently augmented views of every image, new ones at every access.

    Yields ``({"view1/pixels": (C, H, W), "view2/pixels": (C, H, W)}, 0.0)``; the default collate (or skorch's) stacks them.

    Parameters
    ----------
    pixels : ndarray or Tensor of shape (N, C, H, W), float in [0, 1]
        The images, as a :class:`~tabformer.tokenizers.PatchTokenizer` returns them (``ValueError`` unless 4-D).
    transform : callable
        ``(C, H, W) -> (C, H, W)``, e.g. :func:`image_augmentation`.
    random_state : int or None, default=None
        Seeds the per-batch seeds; torchvision draws from the global torch RNG, forked around each batch (left untouched).
    """

    def __init__(self, pixels, transform, random_state=None):
        self.pixels = torch.as_tensor(np.ascontiguousarray(pixels) if isinstance(pixels, np.ndarray) else pixels)
        if self.pixels.ndim != 4:
            raise ValueError(f"pixels must be (N, C, H, W), got shape {tuple(self.pixels.shape)}")
        self.transform = transform
        self.seeds = np.random.default_rng(random_state)

    def __len__(self) -> int:
        return len(self.pixels)

    def __getitem__(self, index):
        return self.__getitems__([index])[0]

    def __getitems__(self, indices):
        seed = int(self.seeds.integers(2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)  # the CPU transforms' RNG; CUDA's stays the fit's
            return [({f"{view}{SEPARATOR}pixels": self.transform(self.pixels[i]) for view in VIEWS}, 0.0) for i in indices]


def make_generator(random_state=None) -> torch.Generator:
    """A private torch generator seeded from ``random_state`` (int; ``None``: a seed from the global torch RNG)."""
    generator = torch.Generator()
    generator.manual_seed(int(torch.randint(2**62, ()).item()) if random_state is None else int(random_state))
    return generator


def _check_has_words(vocab_size: int, what: str) -> int:
    if vocab_size <= N_SPECIAL:  # nothing to mask, nor to put in a masked token's place
        raise ValueError(f"masked-token pretraining needs words, and {what} hold none: the vocabulary is its special tokens only")
    return vocab_size


def mask_tokens(ids, candidates, vocab_size, mask_prob, mask_token_prob, random_token_prob, generator):
    """BERT's corruption of a (B, T) id batch.

    Parameters
    ----------
    ids, candidates : long and bool Tensor of shape (B, T)
        Token ids (not modified) and the positions that may be chosen (real, non-special tokens).
    vocab_size : int
        Random replacements are non-special ids below this.
    mask_prob, mask_token_prob, random_token_prob : float
        A candidate is chosen with probability ``mask_prob`` (one at least, in a row that has any); a chosen id
        becomes ``[MASK]`` (``mask_token_prob``), a random id (``random_token_prob``) or stays.
    generator : torch.Generator or Draws
        Where the random numbers come from (a :class:`~tabformer.pretraining._draws.Draws` may draw them per row).

    Returns
    -------
    ids, labels : long Tensor of shape (B, T)
        The corrupted ids; the original id at chosen positions and ``IGNORE_INDEX`` elsewhere.
    """
    draws = generator if isinstance(generator, Draws) else Draws(generator)
    ids = ids.clone()
    draw = draws.rand(ids.shape)
    chosen = candidates & (draw < mask_prob)
    # Departs from BERT: a row with candidates but none drawn gets one, chosen uniformly. Short texts
    # often draw none (a 4-word text at 15%: half the time), and a batch or holdout with nothing
    # masked scored a loss of 0, which early stopping kept as its best epoch.
    none_drawn = candidates.any(dim=1) & ~chosen.any(dim=1)
    if none_drawn.any() or draws.per_row:  # per row, every row draws alike whatever its batch mates drew
        pick = draws.rand(ids.shape).masked_fill(~candidates, -1.0).argmax(dim=1)
        rows = none_drawn.nonzero().squeeze(1)
        chosen[rows, pick[rows]] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    kind = draws.rand(ids.shape)
    ids[chosen & (kind < mask_token_prob)] = MASK
    random = chosen & (kind >= mask_token_prob) & (kind < mask_token_prob + random_token_prob)
    replacement = draws.randint(N_SPECIAL, int(vocab_size), ids.shape)
    return torch.where(random, replacement, ids), labels


class MaskedTokenDataset(RowSeededMasks, TensorDictDataset):
    """Tokenized rows that come out with fresh masks at every access.

    Batches carry ``input_ids`` (corrupted), the other tokenizer arrays, and ``mlm_labels`` (original id at chosen
    positions, ``-100`` elsewhere).

    Parameters
    ----------
    X : dict of arrays of shape (N, T)
        A discrete tokenizer's output (``input_ids``, ``attention_mask``...; ``word_ids`` is dropped).
    vocab_size : int
        Random replacements are non-special ids below this.
    mask_prob, mask_token_prob, random_token_prob, random_state : float, float, float, int or None, default=0.15, 0.8, 0.1, None
        Masking probabilities (see :func:`mask_tokens`) and the seed of the masks.
    """

    def __init__(self, X, vocab_size, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, random_state=None):
        X = {key: value for key, value in X.items() if key != "word_ids"}
        super().__init__(X)
        self.vocab_size = _check_has_words(int(vocab_size), "the texts")
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.random_token_prob = random_token_prob
        self.generator = make_generator(random_state)

    def __getitems__(self, indices):
        X, y = super().__getitems__(indices)
        ids = X["input_ids"]
        candidates = X["attention_mask"].bool() & (ids >= N_SPECIAL)
        probabilities = (self.mask_prob, self.mask_token_prob, self.random_token_prob)
        ids, labels = mask_tokens(ids, candidates, self.vocab_size, *probabilities, self.draws(indices))
        return dict(X, input_ids=ids, mlm_labels=labels), y


def _check_rate(name, value, low_open=False):
    if not isinstance(value, numbers.Real) or not (0 < value <= 1 if low_open else 0 <= value <= 1):
        bounds = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"objective__{name} must be in {bounds}, got {value!r}")


class MixedTwoViewDataset(TensorDictDataset):
    """Two independently corrupted views of every mixed row, new ones at every access.

    Batches (through ``__getitems__``) are ``({"view1/<key>": ..., "view2/<key>": ...}, zeros)`` for every ``<key>`` of
    the tokenizer's output. Per segment:

    - image: ``image_transform(sub_tokenizer)`` applied to every present image, once per view (absent images keep their
      placeholder; the embedder masks them);
    - table: every cell (``cat_ids``; ``num_values`` with ``num_missing``) is replaced, with probability
      ``corruption_rate``, by the same column's cell in a uniformly drawn row of this dataset (possibly the row itself,
      as a draw from the column's empirical distribution is in SCARF; with a validation split, rows of both parts).
      SCARF contrasts the clean row with one corrupted view at a rate of 0.6; here, as in SimCLR, both views are
      corrupted independently, at a milder 0.3 by default (two such views differ about as much as SCARF's pair);
    - text: :func:`crop_text` with ``text_crop``, then each real non-special token becomes ``[MASK]`` with probability
      ``text_mask_prob`` (no 80/10/10 here: the goal is a corrupted view, not a prediction target).

    Parameters
    ----------
    X : dict of arrays, each of first dimension N
        A fitted MixedTokenizer's ``transform`` output.
    tokenizer : MixedTokenizer
        The fitted tokenizer (read for its segments).
    image_transform : callable or None, default=None
        ``sub_tokenizer -> ((C, H, W) -> (C, H, W))``; ``None`` uses :func:`image_augmentation`'s defaults.
    corruption_rate, text_mask_prob, text_crop : float, default=0.3, 0.15, 0.7
        The rates above; a ``ValueError`` unless in [0, 1] (``text_crop``: in (0, 1]).
    random_state : int or None, default=None
        Seeds the per-batch seeds; torchvision draws from the global torch RNG, forked around each batch (left untouched).
    """

    def __init__(
        self, X, tokenizer, image_transform=None, corruption_rate=0.3, text_mask_prob=0.15, text_crop=0.7, random_state=None
    ):
        super().__init__(X)
        _check_rate("corruption_rate", corruption_rate)
        _check_rate("text_mask_prob", text_mask_prob)
        _check_rate("text_crop", text_crop, low_open=True)
        if image_transform is None:

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
            torch.default_generator.manual_seed(seed)  # torchvision's transforms draw from the global CPU RNG
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
        real = arrays["attention_mask"].bool() & (ids >= N_SPECIAL)
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


class MixedMaskedTokenDataset(RowSeededMasks, TensorDictDataset):
    """Mixed rows with fresh masks at every access: text words and categorical cells.

    - every text segment: BERT's masking of its real, non-special tokens (:func:`mask_tokens`: ``mask_prob`` chosen; of
      those 80% ``[MASK]``, 10% a random word, 10% unchanged); rows whose text is missing take no part;
    - the table segment: each categorical cell holding a fitted category (ids ``2..``; missing cells are not targets) is
      chosen with probability ``mask_prob`` and becomes the column's UNSEEN id ``1``, which already means "a value of this
      column I cannot tell" in every column's own id space: no new embedding row, nothing leaks across columns. It is
      always replaced (no 80/10/10): a random category would be a SCARF-like corruption rather than BERT's "keep the
      encoder honest" trick, and id 1's embedding is otherwise only trained by values unseen at fit time;
    - numeric cells and images are never masked: they are context only (predicting a number needs a regression head and
      a loss scale of its own).

    Batches carry ``"<segment>/mlm_labels"``: for text the original id at chosen positions, for the table the original
    column-local id (``2..``) of chosen cells, ``-100`` elsewhere.

    Parameters
    ----------
    X : dict of arrays, each of first dimension N
        A fitted MixedTokenizer's ``transform`` output (``word_ids`` arrays are dropped).
    tokenizer : MixedTokenizer
        The fitted tokenizer; ``ValueError`` if its rows have neither a text column nor a categorical cell.
    mask_prob, mask_token_prob, random_token_prob, random_state : float, float, float, int or None, default=0.15, 0.8, 0.1, None
        Masking probabilities (see :func:`mask_tokens`; the table uses ``mask_prob`` only) and the seed of the masks.
    """

    def __init__(self, X, tokenizer, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, random_state=None):
        X = {key: value for key, value in X.items() if not key.endswith(SEPARATOR + "word_ids")}
        super().__init__(X)
        self.text_segments = [
            (key, _check_has_words(int(sub.vocab_size_), f"text column {key!r}"))
            for key, kind, sub in _segments(tokenizer)
            if kind == "text"
        ]
        self.table_segments = [
            key
            for key, kind, _ in _segments(tokenizer)
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
        X, draws = dict(X), self.draws(indices)
        for key, vocab_size in self.text_segments:
            arrays = segment_arrays(X, key)
            ids = arrays["input_ids"]
            candidates = arrays["attention_mask"].bool() & (ids >= N_SPECIAL)
            if "present" in arrays:
                candidates &= arrays["present"].bool()[:, None]
            ids, labels = mask_tokens(
                ids, candidates, vocab_size, self.mask_prob, self.mask_token_prob, self.random_token_prob, draws
            )
            X[f"{key}{SEPARATOR}input_ids"], X[f"{key}{SEPARATOR}{LABELS}"] = ids, labels
        for key in self.table_segments:
            cat_ids = X[f"{key}{SEPARATOR}cat_ids"]
            chosen = (cat_ids >= FIRST_CATEGORY_ID) & (draws.rand(cat_ids.shape) < self.mask_prob)
            X[f"{key}{SEPARATOR}cat_ids"] = cat_ids.masked_fill(chosen, UNSEEN_ID)
            X[f"{key}{SEPARATOR}{LABELS}"] = torch.where(chosen, cat_ids, torch.full_like(cat_ids, IGNORE_INDEX))
        return X, y
