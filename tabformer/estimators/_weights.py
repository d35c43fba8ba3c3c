"""Sample and class weights: checked once in ``fit``, carried with the tokens, applied in the loss.

The weights travel as one more array of the token dict (key ``SAMPLE_WEIGHT``), so the
validation split, shuffling and batching keep rows and weights together with no change
to skorch's loop; ``infer`` drops the key before the module sees the batch and
``get_loss`` reads it. The loss is ``sum(w * loss) / sum(w)`` over the elements the
criterion scores: a row of weight 2 counts exactly as that row twice in its batch.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import _check_sample_weight
from skorch.utils import to_tensor

__all__ = [
    "WeightedLossMixin",
    "SAMPLE_WEIGHT",
    "as_float32_weights",
    "check_sample_weight",
    "check_split_weights",
    "class_weights_of",
    "weighted_loss",
    "with_weights",
    "without_weights",
]

#: the token-dict key the weights travel under (no tokenizer writes it)
SAMPLE_WEIGHT = "sample_weight"


def check_sample_weight(sample_weight, n_samples: int):
    """``sample_weight`` as a float64 array of shape (n_samples,), or None when absent.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), float or None
        Non-negative weights; a scalar applies to every row.
    n_samples : int

    Returns
    -------
    ndarray of shape (n_samples,) or None

    Raises
    ------
    ValueError
        On a wrong length, negative or non-finite weights, weights that are all 0, or positive weights whose
        ratio float32 cannot hold (the smallest would weigh 0).
    """
    if sample_weight is None:
        return None
    weights = _check_sample_weight(sample_weight, np.empty((n_samples, 0)), dtype=np.float64, ensure_non_negative=True)
    _check_weight_range(weights, "sample_weight")
    return weights


#: the largest ratio of two positive weights that float32 keeps: scaled to a largest weight of 1 (``as_float32_weights``),
#: the smallest stays a normal float32 (above ``finfo(float32).tiny``, 1.2e-38), neither a subnormal nor 0
_WEIGHT_RANGE = 1.0 / float(np.finfo(np.float32).tiny)


def _check_weight_range(weights: np.ndarray, what: str) -> None:
    """Refuse positive weights whose ratio float32 cannot hold: the smallest would weigh 0 in the loss.

    One weight of 1e300 among 1s made every other row weigh 0 in float32, and the fit failed on a false
    "the holdout rows ... have a total sample_weight of 0" (or an ensemble member's training rows).
    """
    positive = weights[weights > 0]
    if positive.size and positive.max() > positive.min() * _WEIGHT_RANGE:
        raise ValueError(
            f"{what} spans {positive.min():.3g} to {positive.max():.3g} among its positive weights: a ratio beyond "
            f"{_WEIGHT_RANGE:.2g}, the range float32 (in which the loss weighs rows) keeps, so the smallest would weigh 0 "
            "(or lose its precision) next to the largest. Rescale or clip the weights (e.g. np.clip(w, w.max() * 1e-30, "
            "None)), or give rows that should not count a weight of 0"
        )


def class_weights_of(class_weight, classes, y_encoded) -> np.ndarray:
    """Weight of each class id in ``y_encoded``'s alphabet, shape (n_classes,).

    Parameters
    ----------
    class_weight : "balanced" or dict of label to weight
        ``"balanced"``: ``n_samples / (n_classes * bincount(y))``, as scikit-learn's; a
        dict: weights by label (labels it omits weigh 1).
    classes : ndarray of shape (n_classes,)
        The labels, in id order.
    y_encoded : ndarray of int
        Class ids of the labelled elements (rows, or words for the tagger).

    Returns
    -------
    ndarray of shape (n_classes,), float64
    """
    ids = np.arange(len(classes))
    if isinstance(class_weight, str):
        present = np.unique(y_encoded)
        weights = np.ones(len(classes))
        weights[present] = compute_class_weight("balanced", classes=present, y=y_encoded)
        return weights
    labels = np.asarray(classes).tolist()  # 'no' and 0, not np.str_('no') and np.int64(0), in the messages
    unknown = set(class_weight) - set(labels)
    unweighted = [label for label in labels if label not in class_weight]
    # scikit-learn's rule: a label y lacks is ignored (a rare class absent from a CV fold), unless a class of y is then
    # left unnamed too, which is more likely a misspelt label
    if unknown and unweighted:
        raise ValueError(
            f"class_weight names label(s) {sorted(unknown, key=str)} not in y, and not class(es) {unweighted} of y; "
            f"classes are {labels}"
        )
    weights = np.array([float(class_weight.get(classes[i], 1.0)) for i in ids])
    bad = {labels[i]: class_weight[labels[i]] for i in ids if not (np.isfinite(weights[i]) and weights[i] >= 0)}
    if bad:  # else "sample_weight must be finite", a NonFiniteTrainingError, or "the holdout weighs 0"
        raise ValueError(f"class_weight must be finite and non-negative; got {bad}")
    return weights


def with_weights(tokens: dict, weights) -> dict:
    """``tokens`` with ``weights`` added under ``SAMPLE_WEIGHT`` (as is when there are none).

    Equal weights on every row leave the loss unchanged, so they are dropped and the
    unweighted (bit-identical) path runs.
    """
    if weights is None or (weights.ndim == 1 and np.all(weights == weights[0])):
        return tokens
    return {**tokens, SAMPLE_WEIGHT: as_float32_weights(weights)}


def as_float32_weights(weights) -> np.ndarray:
    """``weights`` scaled to a largest weight of 1, as float32.

    The loss divides by the weights' sum, so their scale is free; at a largest weight of 1,
    float32 neither overflows (1e39 -> inf) nor flushes tiny weights (1e-50 -> 0, 1e-44 to
    subnormals with distorted ratios).
    """
    weights = np.asarray(weights, dtype=np.float64)
    _check_weight_range(weights, "sample_weight times class_weight")
    peak = weights.max() if weights.size else 0.0
    return (weights / peak if peak > 0 else weights).astype(np.float32)


def without_weights(inputs):
    """``inputs`` without the weights, for the module's forward (other inputs returned as is)."""
    if isinstance(inputs, dict) and SAMPLE_WEIGHT in inputs:
        return {key: value for key, value in inputs.items() if key != SAMPLE_WEIGHT}
    return inputs


def check_split_weights(X, train_idx, valid_idx, fraction) -> None:
    """Refuse a holdout split whose training or validation rows weigh 0 in total.

    A zero-weight holdout scores a loss of 0 every epoch: early stopping then ends the fit
    on no signal and restores an early epoch, silently.

    Parameters
    ----------
    X : dict of arrays, with the weights under ``SAMPLE_WEIGHT`` when any were given
    train_idx, valid_idx : ndarray of int
        The rows of each side of the split.
    fraction : float
        The ``validation_fraction`` (for the message).
    """
    weights = X.get(SAMPLE_WEIGHT) if isinstance(X, dict) else None
    if weights is None:
        return
    weights = np.asarray(weights)
    for side, rows in (("holdout", valid_idx), ("training", train_idx)):
        if not weights[rows].sum() > 0:
            raise ValueError(
                f"the {side} rows of the validation_fraction={fraction} split ({len(rows)} rows) have a total "
                "sample_weight of 0: their loss would read 0 every epoch. Give more rows weight, pass another "
                "random_state, or validation_fraction=None to train on every row without early stopping"
            )


def weighted_loss(criterion: torch.nn.Module, y_pred, y_true, weights: torch.Tensor) -> torch.Tensor:
    """``sum(w * loss) / sum(w)`` over the elements ``criterion`` scores.

    Parameters
    ----------
    criterion : nn.Module with a ``reduction`` attribute
        Called once with ``reduction="none"`` (then restored).
    y_pred, y_true : what the criterion takes; the first dimension is the batch
    weights : Tensor of shape (B,) or (B, T)
        Per row, or per token (the tagger: 0 where a token takes no part).

    Returns
    -------
    scalar Tensor
    """
    if not hasattr(criterion, "reduction"):
        raise TypeError(
            f"sample_weight and class_weight need a criterion with a `reduction` attribute; {type(criterion).__name__} has none"
        )
    reduction = criterion.reduction
    criterion.reduction = "none"
    try:
        loss = criterion(y_pred, y_true)
    finally:
        criterion.reduction = reduction
    weights = weights.to(loss.device, loss.dtype)
    if weights.ndim == 1:
        weights = weights.reshape(-1, *([1] * (loss.ndim - 1))).expand_as(loss)
    else:  # per token: the model may drop all-padding columns, which carry weight 0
        weights = weights[:, : loss.shape[1]]
    return (weights * loss).sum() / weights.sum().clamp_min(torch.finfo(loss.dtype).tiny)


class WeightedLossMixin:
    """For a skorch net: weights that travel with the tokens reach the loss, never the module."""

    def _row_weights(self, y_encoded, sample_weight, continued: bool = False):
        """The weights the loss applies (``sample_weight`` times any class weights), or None.
        ``continued``: for a continued fit (``partial_fit`` on a fitted model)."""
        return sample_weight

    def _class_weights(self, class_weight, y_encoded, continued: bool) -> np.ndarray:
        """Each class's weight, in ``classes_`` order, kept as ``class_weight_`` (as scikit-learn's SVC).

        ``"balanced"`` weighs the classes by the counts of the fit's ``y``; a continued fit keeps
        them. Recomputed from each ``partial_fit`` chunk, they changed with the chunk (a 50-row
        chunk's [0.66, 2.08] against the fit's), where scikit-learn's ``SGDClassifier`` refuses
        ``"balanced"`` in ``partial_fit`` for that reason. A dict is read afresh at every call.
        """
        kept = vars(self).get("class_weight_")
        if continued and isinstance(class_weight, str) and kept is not None and len(kept) == len(self.classes_):
            return kept
        self.class_weight_ = class_weights_of(class_weight, self.classes_, y_encoded)
        return self.class_weight_

    def infer(self, x, **fit_params):
        """skorch's forward pass, on the inputs without the weights that travel with them."""
        return super().infer(without_weights(x), **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """skorch's loss, or the weighted mean when the batch carries weights."""
        if isinstance(X, dict) and SAMPLE_WEIGHT in X:
            return weighted_loss(self.criterion_, y_pred, to_tensor(y_true, self.device), X[SAMPLE_WEIGHT])
        return super().get_loss(y_pred, y_true, X=X, training=training)
