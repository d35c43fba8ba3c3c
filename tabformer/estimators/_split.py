"""The early-stopping holdout: which rows ``fit`` trains on and which it validates on."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split
from torch.utils.data import Subset

from ._weights import check_split_weights

__all__ = ["HoldoutSplitMixin"]


class HoldoutSplitMixin:
    """skorch's ``get_split_datasets`` for ``train_split="auto"``: a seeded ``validation_fraction``
    holdout, stratified where the estimator says so (``_stratify_labels``)."""

    def _uses_validation(self) -> bool:
        if self.train_split == "auto":
            return bool(self._validation_fraction())
        return self.train_split is not None

    def get_split_datasets(self, X, y=None, **fit_params):
        """skorch's split, or for ``train_split="auto"`` a ``validation_fraction`` holdout (stratified if asked)."""
        if self.train_split != "auto":
            return super().get_split_datasets(X, y, **fit_params)
        dataset = self.get_dataset(X, y)
        fraction = self._validation_fraction()
        if not fraction:
            return dataset, None
        indices = np.arange(len(dataset))
        n_valid = self._validation_rows(len(dataset))
        if not 0 < n_valid < len(dataset):
            raise ValueError(
                f"validation_fraction={fraction} of n_samples={len(dataset)} leaves no row to "
                f"{'train on' if n_valid else 'validate on'}; pass more rows, or validation_fraction=None to train "
                "on every row without early stopping"
            )
        train_idx, valid_idx = train_test_split(
            indices, test_size=fraction, random_state=self._split_seed(), stratify=self._stratify_labels(y)
        )
        check_split_weights(X, train_idx, valid_idx, fraction)
        return Subset(dataset, train_idx), Subset(dataset, valid_idx)

    def _stratify_labels(self, y):
        return None

    def _split_seed(self):
        seed = self._fit_seed()
        return None if seed is None else seed + 1

    def _fit_seed(self):
        """``random_state`` as an int seed, or None; a ``RandomState`` gives the seed ``_seeded`` drew for this fit."""
        if isinstance(self.random_state, np.random.RandomState):
            return getattr(self, "_drawn_seed", None)
        return None if self.random_state is None else int(self.random_state)
