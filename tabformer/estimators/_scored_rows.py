"""skorch's ``EpochScoring(use_caching=False)`` on tabformer's datasets: the rows with their targets.

Without caching, skorch's scorer reads the targets to score against from the epoch's dataset,
and only from its own ``skorch.dataset.Dataset`` (``data_from_dataset``); tabformer trains on a
:class:`~tabformer._data.TensorDictDataset` (whole batches per index list), so the scorer got
``y=None`` and sklearn's metric raised ("The 'y_true' parameter of accuracy_score must be an
array-like ... Got None instead"), whatever ``on_train`` said. Such a callback (or any
``EpochScoring`` when the net's ``use_caching=False``) now ends the epoch on :class:`ScoredRows`:
a skorch ``Dataset`` whose ``X`` is tabformer's dataset itself, which ``predict`` reads as it
reads the cached scorers', and whose ``y`` holds the rows' targets as ``predict`` answers them
(``_scored_targets``: a regressor's on the original scale, a classifier's labels). Every other
callback gets the datasets as before. A streamed fit's rows come in the order its DataLoader
workers read them, which a new pass need not repeat: it refuses such a callback (one whose phase's rows are
the stream: ``on_train``, or a validation holdout) before the first epoch's batches
(:func:`check_uncached_scoring`), where it failed at the first epoch's end.

A cached ``EpochScoring`` scores the outputs of the epoch's own pass (skorch replays them
through ``forward_iter``, which ``predict`` reads back with :func:`replayed_outputs`) against
the targets of those batches, which it gathered from the DataLoader as the network trains on
them: a regressor's standardised. Its ``predict`` ran a new pass and answered on the original
scale, so ``r2`` compared predictions near 100 with targets near 0 (-8966 on y = 100 +- 10),
and ``on_train=True`` also compared rows out of order (the training batches are shuffled).
The gathered targets are turned as the uncached path turns them (:func:`scored_cache`).

A ``BatchScoring`` scores each batch as it ends: ``predict`` on the batch's inputs (a dict of
tensors; cached, the batch's own outputs, :func:`replayed_outputs`) against the batch's targets,
which the DataLoader holds as the network trains on them: a regressor's standardised (r2 of
about -7800 on y = 100 + 10 a), a classifier's encoded (``accuracy`` raised on labels against
class numbers). It gets them as ``predict`` answers a batch (:func:`scored_batch`). Where no
conversion is needed (a classifier's classes ``0 .. n-1``, a tagger, a pretrainer), every scorer gets
skorch's own tensors; a regressor's are turned into tensors (:func:`unstandardized`), so a
``target_extractor`` that reads tensors (``lambda t: t.numpy()``) works as with skorch.

A classifier's scorers, epoch's and batch's, cached or not, compare labels with labels
(:func:`class_labels`), as sklearn's scorers do on a fitted estimator: ``predict`` answers labels
on a ``Dataset`` too. It answered a ``Dataset``'s rows (the epoch's) with their encoded classes,
which sklearn's scorers read against ``classes_``: ``make_scorer(f1_score, pos_label="pos")``
raised "pos_label=pos is not a valid label. It should be one of [0 1]" on labels ``neg``/``pos``,
and ``"f1"`` on labels 1/2 scored class 2 (its ``pos_label=1`` read as class number 1).
"""

from __future__ import annotations

import numpy as np
import torch
from skorch.callbacks import BatchScoring, EpochScoring
from skorch.dataset import Dataset as SkorchDataset
from skorch.utils import to_numpy
from torch.utils.data import Dataset, IterableDataset, Subset

from .._data import TensorDictDataset

#: where :func:`replayed_outputs` keeps a cached ``forward_iter``'s outputs (with it) during one scoring call
_REPLAYED = "_replayed_outputs"

__all__ = [
    "ScoredRows",
    "check_uncached_scoring",
    "class_labels",
    "dataset_targets",
    "forget_replayed",
    "replayed_outputs",
    "scored_batch",
    "scored_cache",
    "scored_datasets",
    "scores_uncached",
    "unstandardized",
]


class ScoredRows(SkorchDataset):
    """A skorch ``Dataset`` of tabformer's rows: ``X`` the dataset, ``y`` its targets (for skorch's ``data_from_dataset``).

    Parameters
    ----------
    rows : TensorDictDataset or (nested) Subset of one
    y : ndarray of shape (len(rows), ...)
    """

    def __init__(self, rows, y):  # skorch's __init__ would index X as arrays; rows is read whole
        self.X, self.y = rows, y

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, index):
        return self.X[index]


def dataset_targets(dataset) -> np.ndarray | None:
    """The targets of a ``TensorDictDataset`` (or a nested ``Subset`` of one) in its row order, else None.

    Parameters
    ----------
    dataset : torch Dataset

    Returns
    -------
    ndarray or None
        None for other datasets (a stream) and for rows without targets.
    """
    indices = None
    while isinstance(dataset, Subset):
        step = torch.as_tensor(np.asarray(dataset.indices), dtype=torch.long)
        indices = step if indices is None else step[indices]
        dataset = dataset.dataset
    if not isinstance(dataset, TensorDictDataset) or dataset.y is None:
        return None
    y = dataset.y if indices is None else dataset.y[indices]
    return y.detach().cpu().numpy()


def scores_uncached(net, callback) -> bool:
    """Whether ``callback`` is an ``EpochScoring`` that predicts the rows anew (``use_caching=False``, its or the net's)."""
    if not isinstance(callback, EpochScoring):
        return False
    use_caching = callback.use_caching if net.use_caching == "auto" else net.use_caching
    return not use_caching


def scored_datasets(net, callback, kwargs: dict) -> dict:
    """``on_epoch_end``'s arguments for ``callback``: its datasets as :class:`ScoredRows` where it scores uncached.

    Parameters
    ----------
    net : TabFormer estimator
        Its ``_scored_targets`` turns the dataset's targets into what ``predict`` answers.
    callback : skorch Callback
    kwargs : dict
        ``dataset_train``, ``dataset_valid`` (either may be None).

    Returns
    -------
    dict
    """
    if not scores_uncached(net, callback):
        return kwargs
    kwargs = dict(kwargs)
    for key in ("dataset_train", "dataset_valid"):
        y = dataset_targets(kwargs.get(key))
        if y is not None:
            kwargs[key] = ScoredRows(kwargs[key], net._scored_targets(y))
    return kwargs


def scored_cache(net, callback) -> None:
    """Turn the targets a cached ``EpochScoring`` gathered this epoch into what ``predict`` answers (``_scored_targets``).

    Its list is its own (the batches' tensors are shared, and left as they are); skorch empties it
    as the next epoch begins. Where ``predict`` answers them as they are (a classifier's classes
    ``0 .. n-1``), the list holds skorch's own tensors, for its ``target_extractor``.

    Parameters
    ----------
    net : TabFormer estimator
    callback : skorch Callback
        Other callbacks, and an ``EpochScoring`` that predicts anew, are left alone.
    """
    if isinstance(callback, EpochScoring) and not scores_uncached(net, callback):
        callback.y_trues_ = [net._scored_targets(y) for y in getattr(callback, "y_trues_", ())]


def unstandardized(net, y):
    """A regressor's standardised targets on the original scale, as ``predict`` answers them: a CPU float64 tensor for a tensor.

    skorch hands a scorer's ``target_extractor`` the batches' tensors (``lambda t: t.numpy()`` is a
    documented use), so a tensor stays a tensor; on the CPU in float64, as ``predict`` answers (and
    as skorch's default extractor, ``to_numpy``, would bring them back anyway; MPS has no float64).

    Parameters
    ----------
    net : TabFormerRegressor
        Fitted: ``target_scale_``, ``target_mean_``, ``target_ndim_``.
    y : Tensor or array-like of shape (n_rows,) or (n_rows, n_targets)

    Returns
    -------
    Tensor or ndarray of shape (n_rows,) (1-D fit) or (n_rows, n_targets)
    """
    # ``standardized`` undone; not original_scale, which also reads a Poisson output as a log-rate
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu().double().reshape(len(y), -1)
        y = y * torch.as_tensor(net.target_scale_, dtype=torch.float64) + torch.as_tensor(net.target_mean_, dtype=torch.float64)
        return y.reshape(-1) if net.target_ndim_ == 1 else y
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1) * net.target_scale_ + net.target_mean_
    return y.ravel() if net.target_ndim_ == 1 else y


def class_labels(net, y):
    """A classifier's targets (class numbers: a batch's or an epoch's) as ``predict`` answers: its labels.

    Where the labels are the class numbers (``classes_`` is ``0 .. n-1``, ints) or indicators
    (multi-label), skorch's tensor is given back as it is, for a ``target_extractor`` that reads tensors.

    Parameters
    ----------
    net : TabFormerClassifier
    y : Tensor or ndarray of shape (n_rows,) or (n_rows, n_labels)

    Returns
    -------
    ``y`` as it is, or ndarray of ``classes_``' dtype
    """
    classes = np.asarray(net.classes_)
    if net._multilabel or (classes.dtype.kind in "iu" and np.array_equal(classes, np.arange(len(classes)))):
        return y
    return classes[to_numpy(y)]


def scored_batch(net, callback, kwargs: dict) -> dict:
    """``on_batch_end``'s arguments for ``callback``: a ``BatchScoring`` of this phase gets the targets as ``predict`` answers.

    Parameters
    ----------
    net : TabFormer estimator
        Its ``_batch_targets`` turns a batch's targets into what ``predict`` answers on the batch's inputs.
    callback : skorch Callback
        Other callbacks, and a ``BatchScoring`` of the other phase (``on_train``), get the batch as it is.
    kwargs : dict
        ``batch`` (inputs and targets), ``training``, the step's outputs.

    Returns
    -------
    dict
    """
    batch = kwargs.get("batch")
    if (
        not isinstance(callback, BatchScoring)
        or kwargs.get("training") != callback.on_train
        or not isinstance(batch, (tuple, list))
        or len(batch) != 2
        or batch[1] is None
    ):
        return kwargs
    return dict(kwargs, batch=(batch[0], net._batch_targets(batch[1])))


def replayed_outputs(net, X) -> torch.Tensor | None:
    """The network's outputs for ``X`` that a cached ``EpochScoring`` or ``BatchScoring`` replays, else None.

    skorch swaps in a ``forward_iter`` that yields them while it scores the epoch's rows (a
    ``Dataset``) or a batch's (a dict of tensors), so ``predict`` reads them instead of a second
    pass; ``on_train=True`` replays the training batches' outputs, in their shuffled order (the
    gathered targets' order), with their graph, which is dropped. That ``forward_iter`` yields them
    once: they are kept for it (``_REPLAYED``), so a scorer that predicts twice (two metrics, or
    ``predict_proba`` then ``predict``) reads them again rather than nothing (``torch.cat`` raised on
    an empty list). :func:`forget_replayed` drops them once the callback is done.

    Parameters
    ----------
    net : TabFormer estimator
    X : what ``predict`` was given

    Returns
    -------
    Tensor of shape (n_rows, ...), float32 on the CPU (a copy for each call), or None
    """
    batch = isinstance(X, dict) and all(isinstance(value, torch.Tensor) for value in X.values())
    forward_iter = vars(net).get("forward_iter")
    if forward_iter is None or not (batch or isinstance(X, Dataset)):
        return None
    kept = vars(net).get(_REPLAYED)
    if kept is None or kept[0] is not forward_iter:  # the object itself: a new scoring call's is another
        kept = (forward_iter, torch.cat([out.detach().float() for out in forward_iter(X)]).cpu())
        setattr(net, _REPLAYED, kept)
    return kept[1].clone()


def forget_replayed(state: dict) -> None:
    """Drop the outputs :func:`replayed_outputs` kept for a scoring callback from a net's ``__dict__`` (or pickled state).

    Parameters
    ----------
    state : dict
        ``vars(net)`` once the callback is done (skorch's ``forward_iter`` is gone by then), or ``__getstate__``'s.
    """
    state.pop(_REPLAYED, None)


def check_uncached_scoring(net, dataset_train, dataset_valid) -> None:
    """Refuse an uncached ``EpochScoring`` whose phase's rows are a stream, naming it, before the epoch's first batch.

    skorch skips a validation scorer (``on_train=False``) when the fit has no validation set, so a
    streamed fit without a holdout (``validation_fraction=None``) trains with one, as it did before.

    Parameters
    ----------
    net : TabFormer estimator
    dataset_train, dataset_valid : what the epoch trains and validates on (``on_epoch_begin``'s); either may be None

    Raises
    ------
    ValueError
        If a callback scores with ``use_caching=False`` the training rows (``on_train``) or the
        validation rows, and those are a stream.
    """
    streamed = [isinstance(dataset, IterableDataset) for dataset in (dataset_valid, dataset_train)]
    names = [name for name, callback in net.callbacks_ if scores_uncached(net, callback) and streamed[bool(callback.on_train)]]
    if names:
        rows = dataset_train if streamed[1] else dataset_valid
        raise ValueError(
            f"callback(s) {names} score with use_caching=False: each epoch they would predict the rows anew and compare "
            f"them with their targets, which a streamed fit ({type(rows).__name__}) cannot hand back in the order its "
            "DataLoader workers read them. Pass use_caching=True (skorch's default; the net's use_caching='auto'): "
            "it scores the predictions of the epoch's own pass over the same rows"
        )
