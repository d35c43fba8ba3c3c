"""The epoch's losses and validation accuracy weighted by ``sample_weight`` and ``class_weight``.

skorch averages a phase's batch losses by their row counts and scores ``valid_acc`` with
sklearn's unweighted accuracy. With weights, each batch loss is already ``sum(w * loss) /
sum(w)`` (``_weights.weighted_loss``), so the row-count average was off as soon as the holdout
took more than one batch (0.606 against the holdout's weighted log-loss of 0.590 in a review's
repro), and the accuracy early stopping watched for the pretrained-text recipe ignored the
weights. HistGradientBoosting likewise hands its validation weights to its early-stopping scorer.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import accuracy_score
from skorch.callbacks import EpochScoring, PassthroughScoring
from torch.utils.data import Subset

from ._weights import SAMPLE_WEIGHT

__all__ = ["WeightedPassthroughScoring", "batch_weight", "dataset_weights", "weighted_accuracy", "weighted_callbacks"]


def batch_weight(batch):
    """The total weight of a batch ``(X, y)`` whose ``X`` carries ``SAMPLE_WEIGHT``, else None.

    Per row (B,) or per token (B, T): the sum is the denominator of the batch's weighted loss. A float
    on the CPU; on a GPU (an accelerated loader places batches there) a tensor, read back with the
    phase's losses rather than stalling the queue every batch.
    """
    X = batch[0] if isinstance(batch, (tuple, list)) else batch
    if not (isinstance(X, dict) and SAMPLE_WEIGHT in X):
        return None
    total = X[SAMPLE_WEIGHT].detach().sum()
    return float(total) if total.device.type == "cpu" else total


def dataset_weights(dataset) -> np.ndarray | None:
    """The row weights of a dataset (or a ``Subset`` of one) in its order, or None without weights."""
    indices = None
    if isinstance(dataset, Subset):
        indices, dataset = dataset.indices, dataset.dataset
    arrays = getattr(dataset, "X", None)
    if not (isinstance(arrays, dict) and SAMPLE_WEIGHT in arrays):
        return None
    weights = torch.as_tensor(arrays[SAMPLE_WEIGHT])
    if indices is not None:
        weights = weights[torch.as_tensor(np.asarray(indices), dtype=torch.long)]
    return weights.double().numpy()


def weighted_accuracy(net, X, y) -> float:
    """``valid_acc``: sklearn's accuracy of ``net.predict(X)``, weighted by the rows' ``sample_weight``
    (and ``class_weight``) where the validation rows carry them.

    Parameters
    ----------
    net : fitted classifier
    X : the validation dataset
    y : its targets as ``predict`` answers them (labels)

    Returns
    -------
    float
    """
    return float(accuracy_score(np.asarray(y), net.predict(X), sample_weight=dataset_weights(X)))


class WeightedPassthroughScoring(PassthroughScoring):
    """skorch's ``PassthroughScoring``, averaging the batches by their total weight where they carry weights."""

    def get_avg_score(self, history):
        key = f"{'train' if self.on_train else 'valid'}_batch_weight"
        try:
            weights, scores = zip(*history[-1, "batches", :, (key, self.name)])
        except KeyError:  # no weights this epoch: skorch's average by rows
            return super().get_avg_score(history)
        return float(np.average(scores, weights=weights)) if sum(weights) > 0 else float(np.mean(scores))


def weighted_callbacks(callbacks: list) -> list:
    """skorch's default ``(name, callback)`` list with the losses and ``valid_acc`` weighted as above."""
    replaced = []
    for name, callback in callbacks:
        if type(callback) is PassthroughScoring:
            callback = WeightedPassthroughScoring(
                name=callback.name, lower_is_better=callback.lower_is_better, on_train=callback.on_train
            )
        elif name == "valid_acc" and type(callback) is EpochScoring and callback.scoring == "accuracy":
            callback = EpochScoring(weighted_accuracy, name="valid_acc", lower_is_better=False, use_caching=callback.use_caching)
        replaced.append((name, callback))
    return replaced
