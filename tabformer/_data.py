"""A dataset over pre-tokenised tensors that hands out whole batches at once.

skorch's default ``Dataset`` fetches one sample at a time and collates; for short token
sequences that per-sample Python work is a visible slice of a CPU training step. Here
the tokenizer output is converted to tensors once per fit (``torch.as_tensor`` shares
numpy's memory) and the DataLoader asks for a batch of indices through
``__getitems__``, which this class answers with one fancy-indexing per key.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset


class TensorDictDataset(Dataset):
    """``X``: dict of arrays with a common first dimension; ``y``: array or None.

    ``dataset.__getitems__(indices)`` returns ``(X_batch, y_batch)``: every array indexed
    by ``indices`` (shape ``(len(indices), ...)``) and the targets, or zeros when ``y`` is None.

    Parameters
    ----------
    X : dict of str to ndarray or Tensor, each of shape (n_samples, ...)
        A tokenizer's output; converted to tensors once (numpy memory is shared).
    y : ndarray or Tensor of shape (n_samples, ...) or None, default=None
        Targets.

    Attributes
    ----------
    X : dict of str to Tensor
        The arrays as tensors.
    y : Tensor or None
    n_samples : int

    Raises
    ------
    TypeError
        If ``X`` is not a non-empty dict.
    ValueError
        If the arrays (or ``y``) disagree on ``n_samples``.
    """

    def __init__(self, X, y=None):
        if not isinstance(X, dict) or not X:
            raise TypeError("TensorDictDataset expects a non-empty dict of arrays (a tokenizer's output)")
        self.X = {
            key: torch.as_tensor(np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value)
            for key, value in X.items()
        }
        lengths = {key: len(value) for key, value in self.X.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"tokenizer outputs disagree on the number of samples: {lengths}")
        self.n_samples = next(iter(lengths.values()))
        self.y = None if y is None else torch.as_tensor(y)
        if self.y is not None and len(self.y) != self.n_samples:
            raise ValueError(f"X has {self.n_samples} samples but y has {len(self.y)}")

    def __len__(self) -> int:
        return self.n_samples

    def on_cpu(self) -> bool:
        """Whether every array is a CPU tensor (only those can be pinned)."""
        tensors = [*self.X.values(), *([] if self.y is None else [self.y])]
        return all(tensor.device.type == "cpu" for tensor in tensors)

    def __getitem__(self, index):
        return self.__getitems__([index])

    def __getitems__(self, indices):
        index = torch.as_tensor(indices, dtype=torch.long)
        X = {key: value[index] for key, value in self.X.items()}
        y = self.y[index] if self.y is not None else torch.zeros(len(index))
        return X, y


def collate_batched(batch):
    """The batch arrives already collated from ``__getitems__``; pass it through.

    Parameters
    ----------
    batch : tuple of (dict of str to Tensor, Tensor)
        What :meth:`TensorDictDataset.__getitems__` returned.

    Returns
    -------
    batch : the same object
    """
    return batch


def collate_trimmed(batch):
    """A training batch from ``__getitems__``, its text arrays cut to the batch's longest text.

    Parameters
    ----------
    batch : tuple of (dict of str to Tensor, Tensor)
        What :meth:`TensorDictDataset.__getitems__` returned.

    Returns
    -------
    batch : tuple of (dict of str to Tensor, Tensor)
        ``X`` through :func:`trim_padding` (contiguous, so it pins whole); ``y`` as is.
    """
    X, y = batch
    return {key: value.contiguous() for key, value in trim_padding(X).items()}, y


def sequence_lengths(dataset) -> torch.Tensor:
    """Real tokens per row of a (possibly ``Subset``-wrapped) ``TensorDictDataset``.

    Sums every ``attention_mask`` array (mixed inputs have one per text segment).

    Parameters
    ----------
    dataset : TensorDictDataset or (nested) torch.utils.data.Subset of one
        Tokenized token sequences.

    Returns
    -------
    lengths : long Tensor of shape (n_rows,)
        Rows in the order of ``dataset`` (after the subsets' indices).

    Raises
    ------
    TypeError
        If the underlying dataset is not a :class:`TensorDictDataset`.
    ValueError
        If it holds no ``attention_mask`` (tables, images).
    """
    indices = None
    while isinstance(dataset, torch.utils.data.Subset):
        indices = dataset.indices if indices is None else [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if not isinstance(dataset, TensorDictDataset):
        raise TypeError(f"group_by_length needs tokenized data, got a {type(dataset).__name__}")
    masks = [value for key, value in dataset.X.items() if key.split("/")[-1] == "attention_mask" and value.ndim == 2]
    if not masks:
        raise ValueError(
            f"group_by_length needs token sequences with an attention_mask; this tokenizer's arrays are {sorted(dataset.X)}"
        )
    lengths = sum(mask.sum(dim=1) for mask in masks)
    return lengths if indices is None else lengths[torch.as_tensor(indices, dtype=torch.long)]


class LengthGroupedBatchSampler(torch.utils.data.Sampler):
    """Shuffled batches of rows of similar length, so little of each batch is padding.

    Every epoch the rows are shuffled, cut into windows of ``window`` batches, and each
    window is sorted by length before it is cut into batches; the batch order is then
    shuffled again. Rows still meet random neighbours (the window is random), but a
    batch of short texts no longer pays for one long one. Uses torch's global RNG, so
    a seeded fit repeats. This is the ``group_by_length`` idea of Hugging Face's
    Trainer, with the window made explicit.

    Iterating yields lists of row indices, one list per batch.

    Parameters
    ----------
    lengths : Tensor of shape (n_samples,)
        Real tokens per row (:func:`sequence_lengths`).
    batch_size : int
        Rows per batch.
    drop_last : bool, default=False
        Drop the rows that do not fill a whole batch.
    window : int, default=50
        Batches per sorting window; 1 sorts nothing, a huge window sorts everything
        (and makes the batch composition nearly fixed across epochs).
    """

    def __init__(self, lengths, batch_size: int, drop_last: bool = False, window: int = 50):
        self.lengths = torch.as_tensor(lengths)
        self.batch_size = int(batch_size)
        self.drop_last = bool(drop_last)
        self.window = int(window)

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        order = torch.randperm(len(self.lengths))
        span = self.window * self.batch_size
        batches = []
        for start in range(0, len(order), span):
            window = order[start : start + span]
            window = window[torch.argsort(self.lengths[window], descending=True, stable=True)]
            batches += list(torch.split(window, self.batch_size))
        if self.drop_last and len(self.lengths) % self.batch_size:
            batches = [batch for batch in batches if len(batch) == self.batch_size][: len(self)]
        for i in torch.randperm(len(batches)).tolist():
            yield batches[i].tolist()


def trim_padding(batch: dict) -> dict:
    """Cut each text segment's arrays to the longest text of this batch.

    Text arrays are padded to the longest text of the whole input; most batches are
    shorter. Padding sits at the end and is masked out of attention, so outputs read
    from CLS (or pooled over real tokens) do not change; outputs per token would lose
    their trailing columns, so per-token callers must not trim.

    Parameters
    ----------
    batch : dict of str to Tensor
        A tokenized batch; every ``"<prefix>attention_mask"`` of shape (B, L) (non-zero =
        real, padding at the end) trims the 2-D arrays of the same prefix and width
        (``input_ids``, ``token_type_ids``, ``word_ids``...).

    Returns
    -------
    dict of str to Tensor
        The same keys; trimmed arrays of shape (B, L') with ``1 <= L' <= L``.

    Examples
    --------
    >>> batch = {"input_ids": torch.tensor([[2, 7, 0, 0]]), "attention_mask": torch.tensor([[1, 1, 0, 0]])}
    >>> trim_padding(batch)["input_ids"]
    tensor([[2, 7]])
    """
    out = dict(batch)
    for key, mask in batch.items():
        if not key.endswith("attention_mask") or mask.ndim != 2:
            continue
        prefix, width = key[: -len("attention_mask")], mask.shape[1]
        length = max(int((mask != 0).sum(dim=1).max()), 1) if len(mask) else width
        if length >= width:
            continue
        for name, value in batch.items():
            own = name.startswith(prefix) and "/" not in name[len(prefix) :]
            if own and value.ndim == 2 and value.shape[1] == width:
                out[name] = value[:, :length]
    return out
