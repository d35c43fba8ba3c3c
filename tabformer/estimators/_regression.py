"""The regressor's target scaling and what its criterion makes of it.

``standardize_target`` trains on ``(y - mean) / std``: a change of units that MSE, L1, Huber and
smooth-L1 losses ride through (their optimum moves with the target). Losses whose target must be
a count, a probability or a class (``PoissonNLLLoss``, ``BCELoss``...) would read negative
standardised targets: a loss unbounded below, or a fit of nonsense that still predicts numbers.
They are refused there, by name, before the tokenizer fit. ``PoissonNLLLoss`` (``log_input=True``,
torch's default) trains a log-rate, so ``predict`` returns its ``exp``: counts, as
scikit-learn's ``PoissonRegressor`` predicts them.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from skorch import NeuralNet

from .._targets import standardization
from .._warnings import user_stacklevel

__all__ = ["original_scale", "poisson_log_link", "standardized", "target_scaling", "warn_constant_targets"]

#: losses that need targets which are not free to shift and scale (counts, probabilities, classes)
_NOT_FOR_STANDARDISED = (
    torch.nn.PoissonNLLLoss,
    torch.nn.GaussianNLLLoss,
    torch.nn.KLDivLoss,
    torch.nn.BCELoss,
    torch.nn.BCEWithLogitsLoss,
    torch.nn.CrossEntropyLoss,
    torch.nn.NLLLoss,
)


def _criterion_class(estimator) -> type:
    criterion = estimator.criterion
    return criterion if isinstance(criterion, type) else type(criterion)


def poisson_log_link(estimator) -> bool:
    """Whether the regressor's network outputs a log-rate: ``PoissonNLLLoss`` with ``log_input=True``.

    Parameters
    ----------
    estimator : TabFormerRegressor

    Returns
    -------
    bool
    """
    if not issubclass(_criterion_class(estimator), torch.nn.PoissonNLLLoss):
        return False
    criterion = estimator.criterion
    default = criterion.log_input if isinstance(criterion, torch.nn.PoissonNLLLoss) else True
    return bool(NeuralNet.get_params_for(estimator, "criterion").get("log_input", default))


#: losses the regressor's output cannot feed: it is one unbounded number per target (a linear head)
_NOT_FOR_AN_UNBOUNDED_OUTPUT = {
    torch.nn.BCEWithLogitsLoss: "a classification loss: TabFormerClassifier trains it and predicts probabilities",
    torch.nn.CrossEntropyLoss: "a classification loss: TabFormerClassifier trains it and predicts probabilities",
    torch.nn.NLLLoss: "a classification loss: TabFormerClassifier trains it and predicts probabilities",
    torch.nn.BCELoss: "it reads probabilities in [0, 1], and the output is unbounded (NaN at the first step past them)",
    torch.nn.KLDivLoss: "it reads log-probabilities of a distribution, which one unbounded number per target is not",
    torch.nn.GaussianNLLLoss: "it reads a variance beside each prediction, which the regressor does not output",
}


def _check_criterion(estimator, y2d: np.ndarray) -> None:
    """Refuse a criterion the regressor's output cannot feed, or that standardised (or negative) targets would make
    meaningless. They trained to a NaN (and advice to lower the learning rate), torch's own error, or logits."""
    criterion = _criterion_class(estimator)
    name = criterion.__name__
    why = next((text for loss, text in _NOT_FOR_AN_UNBOUNDED_OUTPUT.items() if issubclass(criterion, loss)), None)
    if why is None and issubclass(criterion, torch.nn.PoissonNLLLoss) and not poisson_log_link(estimator):
        why = "with log_input=False it reads rates > 0, and the output is unbounded; log_input=True (torch's default) "
        why += "trains a log-rate, and predict returns its exp"
    if why is not None:
        raise ValueError(f"criterion={name} cannot train TabFormerRegressor: {why}")
    if estimator.standardize_target and issubclass(criterion, _NOT_FOR_STANDARDISED):
        raise ValueError(
            f"criterion={name} needs targets as they are (counts, probabilities or classes), but standardize_target=True "
            "trains on (y - mean) / std, which is negative for some rows; pass standardize_target=False"
        )
    if issubclass(criterion, torch.nn.PoissonNLLLoss) and (y2d < 0).any():
        row, column = (int(i) for i in np.argwhere(y2d < 0)[0])
        raise ValueError(f"criterion={name} needs counts >= 0; y holds {y2d[row, column]:.6g} at row {row} (target {column})")


def target_scaling(estimator, y2d: np.ndarray, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """``(target_mean_, target_scale_)`` of the targets a fit starts on, after checking the criterion suits them.

    A constant target column gets its value as mean and a scale of 0, so that ``predict``
    returns that value exactly, whatever the network's output (a scale of 1 added the
    network's leftover output, 0.1 off after a few epochs).

    Parameters
    ----------
    estimator : TabFormerRegressor
    y2d : ndarray of shape (n_samples, n_targets), finite float64
    sample_weight : ndarray of shape (n_samples,) or None
        Row weights: the mean and spread are those the weighted loss sees, so rows of weight 0
        (outliers left out, say) do not set the scale the others train at.

    Returns
    -------
    mean, scale : ndarray of shape (n_targets,)

    Raises
    ------
    ValueError
        For a criterion that cannot train on standardised targets (naming it), or Poisson
        targets below 0 (naming the row).
    """
    _check_criterion(estimator, y2d)
    if not estimator.standardize_target:
        return np.zeros(y2d.shape[1]), np.ones(y2d.shape[1])
    weighted = sample_weight is not None and np.sum(sample_weight) > 0
    mean, scale = standardization(y2d, sample_weight if weighted else None)
    constant = (y2d == y2d[:1]).all(axis=0)
    # a column that varies only where the weight is 0 has no spread to learn: it trains in its own units
    return np.where(constant, y2d[0], mean), np.where(constant, 0.0, np.where(scale > 0, scale, 1.0))


def warn_constant_targets(estimator, y2d: np.ndarray, names=None) -> None:
    """Warn of a fit whose target (or an output column of it) holds one value in every training row.

    Such a fit trained and scored R^2 = 1.0 on its own rows without a word (the wrong column taken as
    ``y``, say), where the classifier refuses a ``y`` of one class. The constant is still predicted
    exactly (``target_scaling``). A ``partial_fit``'s first batch is not warned of: later ones may
    bring other values (a streamed fit's first batch can hold one value only).

    Parameters
    ----------
    estimator : TabFormerRegressor
    y2d : ndarray of shape (n_samples, n_targets), float64
    names : list of str or None
        The output columns' names (a DataFrame ``y``'s).
    """
    if "_classes_for_fit" in vars(estimator) or len(y2d) < 2:  # the first call of partial_fit; one row is refused later
        return
    constant = np.flatnonzero((y2d == y2d[:1]).all(axis=0))
    if not len(constant):
        return
    named = [f"{j}{f' ({names[j]!r})' if names is not None and j < len(names) else ''}" for j in constant]
    if y2d.shape[1] == 1:
        subject, it = f"y is constant (value {float(y2d[0, 0])!r})", "it"
    elif len(constant) == 1:
        subject, it = f"y's output column {named[0]} is constant (value {float(y2d[0, constant[0]])!r})", "it"
    else:
        columns = ", ".join(f"{label} (value {float(y2d[0, j])!r})" for label, j in zip(named, constant))
        subject, it = f"y's output columns {columns} are constant", "each one's value"
    warnings.warn(
        f"{subject} in every training row: the regressor will predict {it} for every row (check that y is the target you meant)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def standardized(estimator, y2d: np.ndarray) -> np.ndarray:
    """``y2d`` as the network trains on it, float64; a constant column of the first fit that moves goes to scale 1.

    Parameters
    ----------
    estimator : fitted TabFormerRegressor
    y2d : ndarray of shape (n_samples, n_targets), float64

    Returns
    -------
    ndarray of shape (n_samples, n_targets)
    """
    constant = estimator.target_scale_ == 0
    moved = constant & (y2d != estimator.target_mean_).any(axis=0)
    if moved.any():
        # A streamed fit's first batch can hold one value only. Its column trained on targets of 0 at
        # scale 1 (below), so it continues at scale 1 and learns the new values: the scale it had
        # before constants were predicted exactly.
        estimator.target_scale_ = np.where(moved, 1.0, estimator.target_scale_)
        constant = estimator.target_scale_ == 0
    _check_criterion(estimator, y2d)
    return (y2d - estimator.target_mean_) / np.where(constant, 1.0, estimator.target_scale_)


def original_scale(estimator, outputs: np.ndarray) -> np.ndarray:
    """The network's outputs (n_samples, n_targets) as predictions on the target's scale (float64).

    Parameters
    ----------
    estimator : fitted TabFormerRegressor
    outputs : ndarray of shape (n_samples, n_targets)

    Returns
    -------
    ndarray of shape (n_samples, n_targets), float64
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    if poisson_log_link(estimator):
        outputs = np.exp(outputs)  # a log-rate: the predicted count is its exp
    return outputs * estimator.target_scale_ + estimator.target_mean_
