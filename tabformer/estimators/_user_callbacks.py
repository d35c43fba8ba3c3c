"""The built-in callbacks beside the user's own: one learning-rate schedule.

The estimators install a schedule (``lr_schedule``) under the name ``"lr_scheduler"``. A
schedule of the user's own in ``callbacks=[...]`` (skorch's ``LRScheduler``, or
:class:`~tabformer.callbacks.WarmupLinearLR`) ran on top of it: the cosine multiplied into
a ``StepLR``'s rates, ``warmup_linear`` overwrote a ``OneCycleLR``'s every batch, and both
wrote ``event_lr``. Now ``"auto"`` defers to the user's (resolves to None), and an explicit
``lr_schedule`` beside one is refused at ``fit``, naming both.
"""

from __future__ import annotations

from skorch.callbacks import LRScheduler
from torch.optim.lr_scheduler import CosineAnnealingLR

from ..callbacks import EarlyStopping, NonFiniteGuard, WarmupLinearLR
from ._collapse import ValidationAnswerSpread

__all__ = ["builtin_callbacks", "defer_to_user_callbacks", "user_callbacks"]

_AUTO = "auto"


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == _AUTO


def user_callbacks(net) -> list:
    """``(name, callback)`` of the ``callbacks`` the user passed, instances or classes alike.

    A ``callbacks__<name>=`` replacement stands in for the entry it names (``None`` removes it),
    as skorch's ``initialize_callbacks`` does; ``callbacks="disable"`` has none.

    Parameters
    ----------
    net : TabFormerNet

    Returns
    -------
    list of (str, Callback or type)
    """
    if not isinstance(net.callbacks, (list, tuple)):
        return []
    found = []
    for item in net.callbacks:
        if isinstance(item, (tuple, list)):
            name, callback = item
        else:
            name, callback = (item.__name__ if isinstance(item, type) else type(item).__name__), item
        callback = vars(net).get(f"callbacks__{name}", callback)
        if callback is not None:
            found.append((name, callback))
    return found


def _is_a(callback, kinds) -> bool:
    return issubclass(callback if isinstance(callback, type) else type(callback), kinds)


def user_schedules(net) -> list:
    """Names of the user's callbacks that set the learning rate (``LRScheduler``, ``WarmupLinearLR``)."""
    return [name for name, callback in user_callbacks(net) if _is_a(callback, (LRScheduler, WarmupLinearLR))]


def defer_to_user_callbacks(net, resolved: dict) -> dict:
    """``resolved`` with ``lr_schedule`` None where the user's own schedule takes its place.

    Parameters
    ----------
    net : TabFormerNet
    resolved : dict
        The recipe's resolved top-level settings (``resolve_recipe``); updated in place.

    Returns
    -------
    dict
        ``resolved``.

    Raises
    ------
    ValueError
        When ``lr_schedule`` is set (not ``"auto"`` or None) beside a schedule in ``callbacks``.
    """
    schedules = user_schedules(net)
    if schedules and net.lr_schedule is not None and not _is_auto(net.lr_schedule):
        raise ValueError(
            f"lr_schedule={net.lr_schedule!r} and the schedule in callbacks ({', '.join(map(repr, schedules))}) would both "
            "set the learning rate: pass lr_schedule=None (or 'auto', which leaves it to yours), or leave the callback out"
        )
    if schedules:
        resolved["lr_schedule"] = None
    return resolved


def builtin_callbacks(net) -> list:
    """The callbacks every estimator adds to skorch's: the non-finite guard, the collapse check,
    the ``lr_schedule`` and early stopping, as ``(name, callback)``.

    No built-in schedule runs beside one of the user's own (``fit`` refuses an explicit
    ``lr_schedule`` beside one; this also covers ``set_params(callbacks=...)`` after a fit).

    Parameters
    ----------
    net : TabFormerNet

    Returns
    -------
    list of (str, Callback)
    """
    callbacks = [("nonfinite", NonFiniteGuard()), ("collapse", ValidationAnswerSpread())]
    lr_schedule, max_epochs, patience = (net._setting(name) for name in ("lr_schedule", "max_epochs", "patience"))
    if user_schedules(net):
        lr_schedule = None
    if lr_schedule == "cosine" and not _is_auto(max_epochs):
        # Decays to 0 at max_epochs: a fit that runs to the end finishes with small, refining steps.
        callbacks.append(("lr_scheduler", LRScheduler(policy=CosineAnnealingLR, T_max=max_epochs)))
    elif lr_schedule == "warmup_linear":
        callbacks.append(("lr_scheduler", WarmupLinearLR()))
    # Other values are refused by fit (check_params): skorch builds callbacks in set_params, which must not validate.
    if patience is not None and not _is_auto(patience) and net._uses_validation():
        monitor = net._setting("monitor") if hasattr(net, "resolved_params_") else "valid_loss"
        stopping = EarlyStopping(monitor=monitor, patience=patience, load_best=True, sink=net._sink)
        callbacks.append(("early_stopping", stopping))
    return callbacks
