"""Multi-label classification: the loss that replaces cross-entropy and its routed settings, and
the per-label collapse check.

A 0/1 indicator ``y`` trains one sigmoid per label with ``BCEWithLogitsLoss`` in place of the
classifier's default ``CrossEntropyLoss``. The user's ``criterion__*`` settings go to that loss:
they were dropped before (``criterion__weight`` accepted and thrown away) and the natural
per-label setting, ``criterion__pos_weight``, was refused as "not a parameter of CrossEntropyLoss".
Which loss the settings are for is known once ``y`` is, so they are checked in ``fit`` then,
before the tokenizer's fit.

The collapse check of a multi-label fit looked at the labels together: it warned only when every
label was predicted the same for every row, so a rare label never predicted (capital gain > 0 at
9%, next to a learned one) passed silently where the same label fitted alone warned. Each label is
checked now, but a label that is constant in ``y`` itself is left out: answering it is expected
(it is warned of as ``fit`` starts, as scikit-learn's ``OneVsRestClassifier`` does).

Each label's output starts at its training prevalence (``init_label_prior``): a label 0 in every
training row was predicted 1 for some rows, since its bias started at random and the weights that
read the rows had not pushed every row's logit below 0 after a short fit. The prevalence is the
training rows' (``label_prior`` of the rows ``_target_for_tokenizer`` weighs): it read the
early-stopping holdout's too, which the epochs are compared on, so a label positive only there
started above the floor of a label never positive in training.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import torch
from skorch import NeuralNet

from .._warnings import user_stacklevel
from ._collapse import CHECK_ROWS, FIRST_LOOK, PER_CLASS, PROBABILITY_SPREAD, RARE_SHARE, class_rows, kept_epoch_constant_columns

__all__ = [
    "MULTILABEL_LOSS",
    "check_criterion_for_y",
    "collapsed_labels",
    "init_label_prior",
    "label_names",
    "label_prior",
    "multilabel_criterion",
    "user_criterion_params",
    "warn_constant_labels",
]

#: the loss of a multi-label y, where the classifier's criterion is left at its default
MULTILABEL_LOSS = torch.nn.BCEWithLogitsLoss
#: its settings, besides the deprecated size_average and reduce
_TAKES = ("weight", "pos_weight", "reduction")
_PER_LABEL = ("weight", "pos_weight")
#: the prevalence an output's initial bias reads is clipped to [PRIOR_CLIP, 1 - PRIOR_CLIP] (RetinaNet's prior, 0.01):
#: a constant label starts at a logit of -4.6 (or 4.6), far past the initial weights' spread
PRIOR_CLIP = 0.01


def _swaps(net) -> bool:
    """Whether a multi-label y would train ``MULTILABEL_LOSS`` in place of the criterion (left at its default)."""
    return net.criterion is torch.nn.CrossEntropyLoss


def check_criterion_for_y(net, n_labels: int | None) -> None:
    """Refuse ``criterion__*`` settings the loss of this ``y`` does not take, naming that loss.

    Parameters
    ----------
    net : TabFormerClassifier
    n_labels : int or None
        The label columns of a multi-label ``y``; None for a single-label one.

    Raises
    ------
    ValueError
        On ``criterion__pos_weight`` for a single-label ``y``; for a multi-label one, on a setting
        ``BCEWithLogitsLoss`` does not take (``label_smoothing``, ``ignore_index``) and on per-label
        weights of another length than the label columns.
    """
    if not _swaps(net):
        return
    # The user's settings only: the recipe's (a previous image fit's label_smoothing, kept in
    # resolved_params_ until this fit resolves its own) are the recipe's to drop, not the user's error.
    params = user_criterion_params(net)
    if n_labels is None:
        if "pos_weight" in params:
            raise ValueError(
                "criterion__pos_weight weighs each label's positives in the loss of a multi-label y (BCEWithLogitsLoss); "
                "this y is single-label, trained with CrossEntropyLoss, which takes no pos_weight: weigh its classes "
                "with class_weight or criterion__weight (one weight per class of classes_)"
            )
        return
    signature = set(inspect.signature(MULTILABEL_LOSS).parameters)
    refused = sorted(set(params) - signature)
    if refused:
        raise ValueError(
            f"criterion__{refused[0]}: a multi-label y trains {MULTILABEL_LOSS.__name__} (one sigmoid per label) in place "
            f"of CrossEntropyLoss, and it takes no {refused[0]}; its settings are {', '.join(_TAKES)} (criterion__pos_weight: "
            "a weight per label on its positives)"
        )
    for key in _PER_LABEL:
        if params.get(key) is None:
            continue
        try:
            value = torch.as_tensor(params[key], dtype=torch.float32).detach().cpu()
        except (TypeError, ValueError) as error:
            raise ValueError(f"criterion__{key} must be numbers, one per label column: {error}") from None
        if value.ndim > 1 or value.numel() not in (1, n_labels):
            raise ValueError(
                f"criterion__{key} has shape {tuple(value.shape)}; for a multi-label y it holds one weight per label "
                f"column, shape ({n_labels},) (or one number for every label)"
            )
        if not (torch.isfinite(value).all() and (value >= 0).all()):
            raise ValueError(f"criterion__{key} must be finite and non-negative; got {value.tolist()}")


def user_criterion_params(net) -> dict:
    """The ``criterion__*`` settings the user passed, without the recipe's (``resolved_params_``).

    Parameters
    ----------
    net : TabFormerClassifier

    Returns
    -------
    dict
    """
    return NeuralNet.get_params_for(net, "criterion")


def multilabel_criterion(params: dict) -> torch.nn.Module:
    """``MULTILABEL_LOSS`` built with the routed settings (``check_criterion_for_y`` checked them).

    Per-label weights given as lists or arrays become float32 tensors, as the loss needs tensors.

    Parameters
    ----------
    params : dict
        ``user_criterion_params(net)``: the recipe's settings are cross-entropy's (label smoothing).

    Returns
    -------
    torch.nn.BCEWithLogitsLoss
    """
    params = dict(params)
    for key in _PER_LABEL:
        if params.get(key) is not None:
            params[key] = torch.as_tensor(params[key], dtype=torch.float32)
    return MULTILABEL_LOSS(**params)


def label_prior(y: np.ndarray, sample_weight=None) -> np.ndarray:
    """Each label's share of positives in ``y``, rows weighed as the loss weighs them.

    Parameters
    ----------
    y : ndarray of shape (n_samples, n_labels), 0/1
    sample_weight : ndarray of shape (n_samples,) or None

    Returns
    -------
    ndarray of shape (n_labels,), float64
    """
    weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if not weights.sum() > 0:  # weights the fit refuses later; the shares are only an initial bias
        weights = np.ones(len(y))
    return weights @ np.asarray(y, dtype=np.float64) / weights.sum()


def init_label_prior(head: torch.nn.Module, prior: np.ndarray) -> None:
    """Start each label's output at the log-odds of its prevalence; a constant label's reads no feature.

    The usual start of a binary cross-entropy output (its loss at the first step is the labels'
    entropy, not log 2 for each). A label of one value in every training row (prevalence 0 or 1)
    also gets a zero weight row: its logit starts at the clipped constant, and as the head's input
    is non-negative (the default ReLU activation) the loss's gradients only move it further that way, so the label is not
    predicted otherwise, whatever the row.

    Parameters
    ----------
    head : ClassificationHead
        Its last layer, ``head.net[-1]``, is the output ``Linear``; a head without one is left as built.
    prior : ndarray of shape (n_labels,)
        ``label_prior`` of the training rows (the early-stopping holdout's left out).
    """
    output = getattr(head, "net", [None])[-1]
    if not isinstance(output, torch.nn.Linear) or output.bias is None or output.out_features != len(prior):
        return
    clipped = np.clip(prior, PRIOR_CLIP, 1 - PRIOR_CLIP)
    with torch.no_grad():
        output.bias.copy_(torch.as_tensor(np.log(clipped / (1 - clipped)), dtype=output.bias.dtype))
        constant = torch.as_tensor((prior == 0) | (prior == 1))
        output.weight[constant] = 0.0


def label_names(y) -> list | None:
    """The label columns' names of a DataFrame ``y`` (for messages), else None."""
    columns = getattr(y, "columns", None)
    return None if columns is None else list(columns)


def _label(j: int, names) -> str:
    return f"{j} ({names[j]!r})" if names is not None and j < len(names) else str(j)


def warn_constant_labels(y: np.ndarray, names) -> None:
    """Warn of label columns that hold one value in every row of ``y``: the model cannot learn when they differ.

    Parameters
    ----------
    y : ndarray of shape (n_samples, n_labels), 0/1
    names : list or None
        The label columns' names (a DataFrame ``y``'s).
    """
    constant = np.flatnonzero(y.min(0) == y.max(0))
    if len(constant):
        which = ", ".join(f"{_label(j, names)} is {int(y[0, j])}" for j in constant)
        warnings.warn(
            f"label column {which} in every training row: the model can only learn to answer that for it",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _label_rows(y: np.ndarray, per_class: int, n_rows: int) -> np.ndarray:
    """Row indices holding, for every label, up to ``per_class`` rows of each of its values (a rare label's too)."""
    take = max(1, min(per_class, n_rows // (2 * y.shape[1])))
    return np.unique(np.concatenate([class_rows(y[:, j].astype(np.int64), take, n_rows) for j in range(y.shape[1])]))


def collapsed_labels(net, data: dict, y: np.ndarray) -> str | None:
    """What the collapse warning says of the labels predicted the same for every checked row, else None.

    Labels constant in ``y`` are left out. The kept epoch's validation pass settles it where every
    other label varied there; else training rows are read, a few first (8 of each value of each
    label), then up to 64 of each.

    Parameters
    ----------
    net : fitted multi-label TabFormerClassifier
    data : dict of ndarray
        The training rows' tokens.
    y : ndarray of shape (n_samples, n_labels)
        The encoded 0/1 labels.

    Returns
    -------
    str or None
        The warning's text after "predicts".
    """
    varying = y.min(0) != y.max(0)
    constant = kept_epoch_constant_columns(net)
    if not varying.any() or (constant is not None and len(constant) == len(varying) and not (constant & varying).any()):
        return None
    for per_class, n_rows in ((FIRST_LOOK, 8 * FIRST_LOOK), (PER_CLASS, CHECK_ROWS)):
        rows = _label_rows(y, per_class, n_rows)
        tokens = {key: value[rows] for key, value in data.items()}
        logits = net.collect(tokens, lambda inputs: net.module_(**inputs).float().cpu().numpy(), trim=True)
        logits = np.asarray(logits, dtype=np.float64).reshape(len(rows), -1)
        answers = logits >= 0  # a sigmoid of at least 0.5, as predict
        collapsed = np.flatnonzero(varying & (answers.min(0) == answers.max(0)))
        if not len(collapsed):
            return None
    names = getattr(net, "_label_names_", None)
    probabilities = 1.0 / (1.0 + np.exp(-logits))
    answered = ", ".join(f"label {_label(j, names)} as {int(answers[0, j])}" for j in collapsed)
    reasons, rare, pos_weight = [], [], np.ones(y.shape[1])
    for j in collapsed:
        value, spread = int(answers[0, j]), float(probabilities[:, j].std())
        other = float(np.mean(y[:, j] != value))  # the share of the value never predicted
        if other < RARE_SHARE / 2 and spread >= PROBABILITY_SPREAD:  # the binary classifier's rule
            never = "reach" if value == 0 else "fall below"
            reasons.append(
                f"label {_label(j, names)}'s probabilities vary (std {spread:.3f}), but never {never} 0.5 "
                f"(it is {1 - value} in {other:.1%} of the training rows)"
            )
            positives = float(y[:, j].mean())
            pos_weight[j] = round((1 - positives) / positives, 1)
            rare.append(j)
    if rare:
        sides = {"below" if answers[0, j] == 0 else "above" for j in rare}
        side = sides.pop() if len(sides) == 1 else "away from"
        reasons[-1] += (
            f". To predict {'it' if len(rare) == 1 else 'them'}, threshold predict_proba's column{'s' * (len(rare) > 1)} "
            f"{side} 0.5 (sklearn's TunedThresholdClassifierCV), or weigh each label's positives with "
            f"criterion__pos_weight={pos_weight.tolist()} (negatives / positives, 1 elsewhere)"
        )
    unlearned = [j for j in collapsed if j not in rare]
    if unlearned:
        which = ", ".join(_label(j, names) for j in unlearned)
        reasons.append(
            f"label{'s' * (len(unlearned) > 1)} {which} {'has' if len(unlearned) == 1 else 'have'} not learned beyond a "
            f"constant answer; {net._collapse_advice()}"
        )
    return f"{answered} for every training row it was checked on: {'; '.join(reasons)}"
