"""Multi-label classification: the loss that replaces cross-entropy, and its routed settings.

A 0/1 indicator ``y`` trains one sigmoid per label with ``BCEWithLogitsLoss`` in place of the
classifier's default ``CrossEntropyLoss``. The user's ``criterion__*`` settings go to that loss:
they were dropped before (``criterion__weight`` accepted and thrown away) and the natural
per-label setting, ``criterion__pos_weight``, was refused as "not a parameter of CrossEntropyLoss".
Which loss the settings are for is known once ``y`` is, so they are checked in ``fit`` then,
before the tokenizer's fit.
"""

from __future__ import annotations

import inspect

import torch

__all__ = ["MULTILABEL_LOSS", "check_criterion_for_y", "multilabel_criterion"]

#: the loss of a multi-label y, where the classifier's criterion is left at its default
MULTILABEL_LOSS = torch.nn.BCEWithLogitsLoss
#: its settings, besides the deprecated size_average and reduce
_TAKES = ("weight", "pos_weight", "reduction")
_PER_LABEL = ("weight", "pos_weight")


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
    params = net.get_params_for("criterion")
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


def multilabel_criterion(params: dict) -> torch.nn.Module:
    """``MULTILABEL_LOSS`` built with the routed settings (``check_criterion_for_y`` checked them).

    Per-label weights given as lists or arrays become float32 tensors, as the loss needs tensors.

    Parameters
    ----------
    params : dict
        ``net.get_params_for("criterion")``.

    Returns
    -------
    torch.nn.BCEWithLogitsLoss
    """
    params = dict(params)
    for key in _PER_LABEL:
        if params.get(key) is not None:
            params[key] = torch.as_tensor(params[key], dtype=torch.float32)
    return MULTILABEL_LOSS(**params)
