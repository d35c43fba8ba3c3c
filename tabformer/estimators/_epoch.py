"""The training loop's batches: the DataLoader, and skorch's epoch loop without a host sync per batch.

On a GPU, reading a value back waits until every launched kernel has run, so the Python
work of the next batch (the DataLoader, callbacks, the launches themselves) stops
overlapping the GPU's work. skorch read every batch's loss back (``loss.item()``) and
copied each batch with a blocking ``.to(device)``, which PyTorch implements by
synchronizing the stream; with the non-finite guard's reads and the model's own, a
MiniLM-shaped model trained at 0.82x the speed of a plain PyTorch loop on an H200
(``benchmarks/bench_gpu.py``, docs/scale.md). Here the losses are recorded as tensors and
read back once per phase (the training batches, then the validation batches), before any
epoch-end callback reads the history, and :class:`~tabformer.callbacks.NonFiniteGuard`
checks them then; batches come from pinned memory and move with ``non_blocking=True``.

Training batches of text are also cut to their longest text in the DataLoader, before they
are pinned and moved (the text embedder would otherwise read the lengths back from the
GPU). On a GPU, a callback that reads a batch's loss from the history during the phase
(``on_batch_end``) sees a 0-d tensor, not yet a float.
"""

from __future__ import annotations

import numbers

import torch
from skorch.callbacks.scoring import ScoringBase
from skorch.dataset import get_len, unpack_data
from torch.utils.data import Subset

from .._data import LengthGroupedBatchSampler, TensorDictDataset, collate_batched, collate_trimmed, sequence_lengths
from ..callbacks import NonFiniteGuard
from ._scored_rows import check_uncached_scoring, forget_replayed, scored_batch, scored_cache, scored_datasets
from ._weighted_scores import batch_weight

__all__ = ["EpochMixin"]


class EpochMixin:
    """The DataLoader (``get_iterator``: length grouping, host-side padding cuts, pinned memory on
    a GPU), ``run_single_epoch`` with batch losses read back once per phase, and the epoch's end
    given to an uncached ``EpochScoring`` with its rows' targets, a cached one's turned as ``predict``
    answers them (``_scored_rows``)."""

    def notify(self, method_name, **cb_kwargs):
        """skorch's, but scoring callbacks get targets as ``predict`` answers them, on rows they can read.

        An ``EpochScoring(use_caching=False)`` ends the epoch on rows whose targets it can read:
        skorch reads them from its own ``Dataset`` only, and on tabformer's it scored against
        ``y=None``. A streamed fit refuses such a callback whose rows are the stream before the first epoch. A cached one's
        gathered targets, and a ``BatchScoring``'s batch targets, are turned into what ``predict``
        answers (a regressor's are standardised in the batches, a classifier's encoded: original scale, labels).

        Parameters
        ----------
        method_name : str
            ``"on_epoch_end"``, ``"on_batch_end"``...
        **cb_kwargs : the callbacks' arguments
        """
        if method_name == "on_epoch_begin":  # before the net's own: a refused fit records no epoch
            check_uncached_scoring(self, cb_kwargs.get("dataset_train"), cb_kwargs.get("dataset_valid"))
        if method_name not in ("on_epoch_end", "on_batch_end"):
            return super().notify(method_name, **cb_kwargs)
        getattr(self, method_name)(self, **cb_kwargs)
        for _, callback in self.callbacks_:
            if not isinstance(callback, ScoringBase):  # only scorers read targets or replayed outputs
                getattr(callback, method_name)(self, **cb_kwargs)
                continue
            try:
                if method_name == "on_batch_end":
                    callback.on_batch_end(self, **scored_batch(self, callback, cb_kwargs))
                    continue
                scored_cache(self, callback)  # a cached one's targets as predict answers them (a regressor's original scale)
                callback.on_epoch_end(self, **scored_datasets(self, callback, cb_kwargs))
            finally:
                forget_replayed(vars(self))  # the outputs a cached scorer replayed, kept for its second predict
        return None

    def _scored_targets(self, y):
        """The targets of the epoch's rows as ``predict`` answers them: as they are (a tagger's, a pretrainer's)."""
        return y

    def _batch_targets(self, y):
        """A batch's targets (a tensor) as ``predict`` answers the batch's inputs, a dict of tensors (``BatchScoring``)."""
        return self._scored_targets(y)

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """One pass over ``iterator``, as skorch's, with losses read back at its end.

        Parameters
        ----------
        iterator : DataLoader or None
            The batches; ``None`` skips the phase (no holdout).
        training : bool
            Training or validation batches.
        prefix : str
            ``"train"`` or ``"valid"``: the history keys ``<prefix>_loss`` and
            ``<prefix>_batch_size``.
        step_fn : callable
            ``train_step`` or ``validation_step``.
        **fit_params : passed to ``step_fn``
        """
        if iterator is None:
            return
        batch_count = 0
        try:
            for batch in iterator:
                self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                # On a GPU a tensor until the phase ends: reading it now would stall the queue. It is
                # a copy, as CUDA graphs (compile__mode="reduce-overhead") overwrite their outputs
                # at the next batch.
                loss = step["loss"].detach()
                if loss.device.type != "cpu":
                    step = dict(step, loss=loss.clone())
                self.history.record_batch(prefix + "_loss", loss.item() if loss.device.type == "cpu" else step["loss"])
                self.history.record_batch(
                    prefix + "_batch_size", get_len(batch[0]) if isinstance(batch, (tuple, list)) else get_len(batch)
                )
                weight = batch_weight(batch)
                if weight is not None:  # the epoch's loss averages the batches by it (WeightedPassthroughScoring)
                    self.history.record_batch(prefix + "_batch_weight", weight)
                self.notify("on_batch_end", batch=batch, training=training, **step)
                batch_count += 1
        finally:
            _losses_to_floats(self.history, prefix + "_loss")
            _losses_to_floats(self.history, prefix + "_batch_weight")
        self.history.record(prefix + "_batch_count", batch_count)
        for _, callback in self.callbacks_:
            if isinstance(callback, NonFiniteGuard):
                callback.check_pending(self, training=training)

    def _set_training(self, training=True):
        """skorch's, but skipped while the modules are still in the mode this net last set.

        ``module.train(mode)`` walks every submodule: about 0.25 ms per batch for a 3-layer
        table model on the CPU (5% of its step), paid on every training batch. It runs again
        whenever a module was replaced or its own flag differs (``predict`` between epochs, a
        user's ``module_.eval()``); a submodule's flag changed from outside is kept until then.

        Parameters
        ----------
        training : bool, default=True
            Training or evaluation mode.
        """
        modules = [getattr(self, name + "_", None) for name in self._modules + self._criteria]
        modules = [module for module in modules if isinstance(module, torch.nn.Module)]
        ids = tuple(map(id, modules))
        if self.__dict__.get("_modes_set") == ids and all(module.training == bool(training) for module in modules):
            return
        super()._set_training(training)
        self._modes_set = ids

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_modes_set", None)  # object ids mean nothing in another process
        forget_replayed(state)  # a scorer's replayed outputs and skorch's local forward_iter (not picklable)
        return state

    def get_iterator(self, dataset, training=False):
        """skorch's DataLoader, with the resolved ``batch_size`` and optional length grouping."""
        prefix = "iterator_train" if training else "iterator_valid"
        kwargs = self.get_params_for(prefix)
        kwargs.setdefault("batch_size", self._setting("batch_size"))
        if isinstance(kwargs["batch_size"], numbers.Integral):  # np.int64(16) from a search grid: DataLoader takes int only
            kwargs["batch_size"] = int(kwargs["batch_size"])
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        group_by_length = kwargs.pop("group_by_length", False)
        least = getattr(self.__dict__.get("objective_"), "min_batch_rows", 1)
        if not training and least > 1 and len(dataset) % kwargs["batch_size"] == 1 and len(dataset) > 1:
            kwargs["batch_size"] += 1  # no last batch of one row (SimCLR's NT-Xent has nothing to contrast it with)
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
            # Training batches are cut to their longest text here, before they are pinned
            # (what the text embedder cuts in training, without reading the lengths back from a GPU).
            kwargs.setdefault("collate_fn", collate_trimmed if training else collate_batched)
            # Pinned host memory: the copy to a GPU then runs without blocking (``_to_device_async``).
            kwargs.setdefault("pin_memory", torch.device(self.device).type == "cuda" and inner.on_cpu())
        iterator = self.iterator_train if training else self.iterator_valid
        return self._shard(iterator(dataset, **kwargs), training)

    def _drop_last_in_training(self) -> bool:
        """Whether training should skip the last, smaller batch (subclasses decide)."""
        return False

    def train_step_single(self, batch, **fit_params):
        """The step of the parent classes, on a batch already sent to the device without blocking.

        Parameters
        ----------
        batch : (X, y) from the training DataLoader
        **fit_params : passed on

        Returns
        -------
        dict with ``"loss"`` and ``"y_pred"``
        """
        return super().train_step_single(self._to_device_async(unpack_data(batch)), **fit_params)

    def validation_step(self, batch, **fit_params):
        """The step of the parent classes, on a batch already sent to the device without blocking.

        Parameters
        ----------
        batch : (X, y) from the validation DataLoader
        **fit_params : passed on

        Returns
        -------
        dict with ``"loss"`` and ``"y_pred"``
        """
        return super().validation_step(self._to_device_async(unpack_data(batch)), **fit_params)

    def _to_device_async(self, batch):
        # skorch's ``.to(device)`` is a blocking copy, and PyTorch blocks by synchronizing the
        # stream: every batch would wait for the GPU's queue. From the pinned memory the
        # DataLoader hands over on a GPU, ``non_blocking`` copies in order on the stream.
        device = torch.device(self.device)
        if device.type == "cpu" or self.__dict__.get("accelerator_") is not None:
            return batch
        return _to_device(batch, device)


def _losses_to_floats(history, key: str) -> None:
    """Replace the tensors recorded under ``key`` in the last epoch's batches by floats, in one read-back."""
    if not history:
        return
    batches = [row for row in history[-1].get("batches", ()) if isinstance(row.get(key), torch.Tensor)]
    if not batches:
        return
    values = torch.stack([row[key].double().reshape(-1).sum() for row in batches]).cpu().tolist()
    for row, value in zip(batches, values):
        row[key] = value


def _to_device(data, device):
    """``data`` (tensors in dicts, tuples and lists) on ``device``, copied with ``non_blocking=True``."""
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=True)
    if isinstance(data, dict):
        return {key: _to_device(value, device) for key, value in data.items()}
    if isinstance(data, (tuple, list)):
        return type(data)(_to_device(value, device) for value in data)
    return data
