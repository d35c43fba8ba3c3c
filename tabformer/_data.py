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

    Parameters
    ----------
    X : dict of str to ndarray or Tensor, each of shape (n_samples, ...)
    y : ndarray or Tensor of shape (n_samples, ...) or None
    """

    def __init__(self, X, y=None):
        if not isinstance(X, dict) or not X:
            raise TypeError("TensorDictDataset expects a non-empty dict of arrays (a tokenizer's output)")
        self.X = {key: torch.as_tensor(np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value) for key, value in X.items()}
        lengths = {key: len(value) for key, value in self.X.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"tokenizer outputs disagree on the number of samples: {lengths}")
        self.n_samples = next(iter(lengths.values()))
        self.y = None if y is None else torch.as_tensor(y)
        if self.y is not None and len(self.y) != self.n_samples:
            raise ValueError(f"X has {self.n_samples} samples but y has {len(self.y)}")

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, index):
        return self.__getitems__([index])

    def __getitems__(self, indices):
        index = torch.as_tensor(indices, dtype=torch.long)
        X = {key: value[index] for key, value in self.X.items()}
        y = self.y[index] if self.y is not None else torch.zeros(len(index))
        return X, y


def collate_batched(batch):
    """The batch arrives already collated from ``__getitems__``; pass it through."""
    return batch
