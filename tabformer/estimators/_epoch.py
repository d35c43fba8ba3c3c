"""The training loop's batches: the DataLoader the estimators train and validate on."""

from __future__ import annotations

from torch.utils.data import Subset

from .._data import LengthGroupedBatchSampler, TensorDictDataset, collate_batched, sequence_lengths

__all__ = ["EpochMixin"]


class EpochMixin:
    """The DataLoader (``get_iterator``)."""

    def get_iterator(self, dataset, training=False):
        """skorch's DataLoader, with the resolved ``batch_size`` and optional length grouping."""
        prefix = "iterator_train" if training else "iterator_valid"
        kwargs = self.get_params_for(prefix)
        kwargs.setdefault("batch_size", self._setting("batch_size"))
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        group_by_length = kwargs.pop("group_by_length", False)
        if training:
            kwargs.setdefault("shuffle", True)
            if self._drop_last_in_training() and len(dataset) > kwargs["batch_size"]:
                kwargs.setdefault("drop_last", True)
            if group_by_length:
                # iterator_train__group_by_length=True: batches of similar text length.
                window = 50 if group_by_length is True else int(group_by_length)
                kwargs["batch_sampler"] = LengthGroupedBatchSampler(
                    sequence_lengths(dataset), kwargs.pop("batch_size"), kwargs.pop("drop_last", False), window
                )
                kwargs.pop("shuffle")
        inner = dataset.dataset if isinstance(dataset, Subset) else dataset
        if isinstance(inner, TensorDictDataset):
            kwargs.setdefault("collate_fn", collate_batched)
        iterator = self.iterator_train if training else self.iterator_valid
        return self._shard(iterator(dataset, **kwargs), training)

    def _drop_last_in_training(self) -> bool:
        """Whether training should skip the last, smaller batch (subclasses decide)."""
        return False
