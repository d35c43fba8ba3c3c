"""The built-in callbacks beside the user's own: one learning-rate schedule, one early stopping.

The estimators install a schedule (``lr_schedule``) under the name ``"lr_scheduler"``. A
schedule of the user's own in ``callbacks=[...]`` (skorch's ``LRScheduler``, or
:class:`~tabformer.callbacks.WarmupLinearLR`) ran on top of it: the cosine multiplied into
a ``StepLR``'s rates, ``warmup_linear`` overwrote a ``OneCycleLR``'s every batch, and both
wrote ``event_lr``. Now ``"auto"`` defers to the user's (resolves to None), and an explicit
``lr_schedule`` beside one is refused at ``fit``, naming both.

Early stopping alike: the built-in one (``patience``) fired before a user's
``EarlyStopping`` with a larger patience, and both restored their best weights, the last
restorer winning. ``patience="auto"`` now defers to the user's (resolves to None) while the
holdout stays: ``validation_fraction="auto"`` holds out rows whenever a callback of the
user's reads a validation score (``monitor="valid_..."``: ``EarlyStopping``, ``Checkpoint``,
``ReduceLROnPlateau``), and a holdout set to none beside one is refused at ``fit``, naming
``validation_fraction`` (skorch's ``KeyError`` came after the first epoch).

skorch runs its default callbacks before the user's, so the built-in early stopping read the
history before a user's ``EpochScoring`` wrote its score: ``callbacks__early_stopping__monitor``
on a score of the user's raised ``KeyError``. It now runs after the user's scoring callbacks.
"""

from __future__ import annotations

import inspect

import torch
from skorch.callbacks import EarlyStopping as SkorchEarlyStopping
from skorch.callbacks import LRScheduler
from skorch.callbacks.scoring import ScoringBase
from torch.optim.lr_scheduler import CosineAnnealingLR, ReduceLROnPlateau

from ..callbacks import EarlyStopping, NonFiniteGuard, WarmupLinearLR
from ._collapse import ValidationAnswerSpread

__all__ = [
    "CosineLR",
    "builtin_callbacks",
    "check_holdout_readers",
    "check_routed_builtins",
    "defer_to_user_callbacks",
    "holdout_readers",
    "replaced_builtins",
    "report_replaced_builtins",
    "scores_before_stopping",
    "user_callbacks",
]

_AUTO = "auto"


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == _AUTO


class CosineLR(LRScheduler):
    """skorch's ``LRScheduler`` (the built-in cosine) whose first epoch runs at the rate its schedule starts from.

    skorch's ``LoadInitState`` loads the optimizer at ``on_train_begin``, after the built-in schedule
    was made: the rate the last fit's cosine had decayed to 0 came back, and CosineAnnealingLR, which
    steps from the current rate, kept it at 0 for every resumed epoch. Like ``partial_fit``, a fit from
    a loaded state now runs the schedule from the peak (``TrainingCheckpoint`` restores the schedule's
    own state, whose rate is the optimizer's: nothing changes there).
    """

    def on_train_begin(self, net, **kwargs):
        """skorch's (skorch hook)."""
        super().on_train_begin(net, **kwargs)
        self.started_ = False

    def on_epoch_begin(self, net, **kwargs):
        """At the first epoch, set every group's rate to the schedule's (skorch hook)."""
        if not getattr(self, "started_", True):
            for group, lr in zip(net.optimizer_.param_groups, self.lr_scheduler_.get_last_lr()):
                group["lr"] = lr
            self.started_ = True


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


_SETTINGS = {"lr_scheduler": "lr_schedule", "early_stopping": "patience"}


def replaced_builtins(net) -> dict:
    """``{name: callback}`` of the built-in schedule (early stopping) a ``callbacks__<name>=<callback>`` replaces.

    Only where no entry of ``callbacks=[...]`` has that name (then the setting replaces the user's own).

    Parameters
    ----------
    net : TabFormerNet

    Returns
    -------
    dict of str to (Callback or type)
    """
    if _disabled(net):
        return {}
    listed = {name for name, _ in user_callbacks(net)}
    return {
        name: vars(net)[f"callbacks__{name}"]
        for name in _SETTINGS
        if vars(net).get(f"callbacks__{name}") is not None and name not in listed
    }


def _disabled(net) -> bool:
    return isinstance(net.callbacks, str) and net.callbacks == "disable"


def _is_a(callback, kinds) -> bool:
    return issubclass(callback if isinstance(callback, type) else type(callback), kinds)


def user_schedules(net) -> list:
    """Names of the user's callbacks that set the learning rate (``LRScheduler``, ``WarmupLinearLR``, or
    any named ``"lr_scheduler"``: it takes the built-in's place, where skorch raised "duplicate name")."""
    kinds = (LRScheduler, WarmupLinearLR)
    return [name for name, callback in user_callbacks(net) if name == "lr_scheduler" or _is_a(callback, kinds)]


def user_stoppers(net) -> list:
    """Names of the user's ``EarlyStopping`` callbacks (skorch's or tabformer's, or any named ``"early_stopping"``)."""
    return [name for name, callback in user_callbacks(net) if name == "early_stopping" or _is_a(callback, SkorchEarlyStopping)]


def _check_builtin_names(net) -> None:
    # The guard and the collapse check have no setting of their own to hand over to a callback of the user's.
    taken = [name for name, _ in user_callbacks(net) if name in ("nonfinite", "collapse")]
    if taken:
        raise ValueError(
            f"a callback in callbacks is named {taken[0]!r}, the name of a built-in callback: name yours otherwise, "
            f"or replace the built-in with callbacks__{taken[0]}=<your callback> (None removes it)"
        )


def _monitor(net, name: str, callback):
    if _is_a(callback, LRScheduler):  # skorch reads an LRScheduler's monitor for ReduceLROnPlateau only
        policy = callback.policy if not isinstance(callback, type) else None
        policy = getattr(torch.optim.lr_scheduler, policy, None) if isinstance(policy, str) else policy
        if not (isinstance(policy, type) and issubclass(policy, ReduceLROnPlateau)):
            return None
    if isinstance(callback, type):
        parameter = inspect.signature(callback).parameters.get("monitor")
        monitor = None if parameter is None else parameter.default
    else:
        monitor = getattr(callback, "monitor", None)
    return vars(net).get(f"callbacks__{name}__monitor", monitor)


def holdout_readers(net) -> list:
    """The user's callbacks that read a validation score, as ``"'name' (monitor='valid_...')"``.

    Parameters
    ----------
    net : TabFormerNet

    Returns
    -------
    list of str
    """
    monitors = ((name, _monitor(net, name, callback)) for name, callback in user_callbacks(net))
    return [f"{name!r} (monitor={m!r})" for name, m in monitors if isinstance(m, str) and m.startswith("valid_")]


def check_holdout_readers(net, fraction) -> None:
    """Refuse a fit without validation rows when a callback of the user's reads a validation score.

    Parameters
    ----------
    net : TabFormerNet
    fraction : float or None
        The resolved ``validation_fraction``.

    Raises
    ------
    ValueError
        Naming the callbacks and ``validation_fraction`` (or ``train_split=None``).
    """
    readers = holdout_readers(net)
    auto_split = isinstance(net.train_split, str) and net.train_split == _AUTO
    if not readers or (bool(fraction) if auto_split else net.train_split is not None):
        return
    setting = f"validation_fraction={fraction!r}" if auto_split else "train_split=None"
    raise ValueError(
        f"{', '.join(readers)} in callbacks read a validation score, but {setting} holds out no row to score: pass "
        "validation_fraction='auto' (or a share such as 0.1), or monitor a train_* key"
    )


def defer_to_user_callbacks(net, resolved: dict) -> dict:
    """``resolved`` with ``lr_schedule`` (``patience``) None where the user's own schedule (early stopping) takes its place,
    and ``monitor`` what the user's early stopping watches.

    Parameters
    ----------
    net : TabFormerNet
    resolved : dict
        The recipe's resolved top-level settings (``resolve_recipe``); updated in place. With
        ``callbacks="disable"`` both are None (nothing runs them), so ``validation_fraction="auto"`` holds out no row.

    Returns
    -------
    dict
        ``resolved``.

    Raises
    ------
    ValueError
        When ``lr_schedule`` is set (not ``"auto"`` or None) beside a schedule in ``callbacks``,
        or ``patience`` (or ``callbacks__early_stopping__*``) beside an ``EarlyStopping`` there; when a
        callback there is named ``"nonfinite"`` or ``"collapse"`` (a built-in's name).
    """
    if _disabled(net):  # no callback runs: no schedule, no early stopping, so "auto" holds out no row for one
        resolved["lr_schedule"] = resolved["patience"] = None
        return resolved
    _check_builtin_names(net)
    schedules = user_schedules(net)
    if schedules and net.lr_schedule is not None and not _is_auto(net.lr_schedule):
        raise ValueError(
            f"lr_schedule={net.lr_schedule!r} and the schedule in callbacks ({', '.join(map(repr, schedules))}) would both "
            "set the learning rate: pass lr_schedule=None (or 'auto', which leaves it to yours), or leave the callback out"
        )
    if schedules:
        resolved["lr_schedule"] = None
    stoppers = user_stoppers(net)
    routed = sorted(key for key in vars(net) if key.startswith("callbacks__early_stopping__"))
    given = [f"patience={net.patience!r}"] if net.patience is not None and not _is_auto(net.patience) else []
    given += routed if "early_stopping" not in stoppers else []  # routed to the user's own, named so
    if stoppers and given:
        raise ValueError(
            f"{', '.join(given)} sets the built-in early stopping, beside the EarlyStopping in callbacks "
            f"({', '.join(map(repr, stoppers))}): two early stoppings would each restore their best weights; pass "
            "patience='auto' (which leaves it to yours) and set yours, or leave the callback out"
        )
    if stoppers:
        resolved["patience"] = None
        resolved["monitor"] = _stoppers_monitor(net)
    return resolved


def _stoppers_monitor(net):
    """What the user's early stoppings (``user_stoppers``) watch: one monitor, or a tuple of theirs where they differ."""
    stoppers = [(name, cb) for name, cb in user_callbacks(net) if name == "early_stopping" or _is_a(cb, SkorchEarlyStopping)]
    monitors = list(dict.fromkeys(_monitor(net, name, callback) for name, callback in stoppers))
    return monitors[0] if len(monitors) == 1 else tuple(monitors)


def report_replaced_builtins(net, resolved: dict) -> dict:
    """``resolved`` with ``lr_schedule`` (``patience``) None where ``callbacks__lr_scheduler=`` (``callbacks__early_stopping=``)
    puts a callback of the user's in the built-in's place, as for one in ``callbacks=[...]``: the recipe's does not run.
    ``monitor`` is what the replacing early stopping watches.

    Called after the checks that need the built-in's resolved setting (the holdout, ``check_routed_builtins``):
    ``builtin_callbacks`` installs the replacement itself.

    Parameters
    ----------
    net : TabFormerNet
    resolved : dict
        Updated in place.

    Returns
    -------
    dict
        ``resolved``.
    """
    replaced = replaced_builtins(net)
    for name in replaced:
        resolved[_SETTINGS[name]] = None
    if "early_stopping" in replaced:  # yours watches what it watches, not the recipe's monitor
        resolved["monitor"] = _monitor(net, "early_stopping", replaced["early_stopping"])
    return resolved


_HINTS = {
    "lr_scheduler": "pass lr_schedule='cosine' (or 'warmup_linear'), or put your LRScheduler in callbacks=[...]",
    "early_stopping": "pass an int patience with a holdout (validation_fraction='auto' or a share), "
    "or put your EarlyStopping in callbacks=[...]",
}


def _why_absent(net, name: str, resolved: dict):
    """Why the built-in ``name`` is not installed in this fit (None: it is)."""
    if name == "lr_scheduler":
        if resolved["lr_schedule"] is not None:
            return None
        if not _is_auto(net.lr_schedule):
            return "lr_schedule=None installs no lr_scheduler"
        theirs = user_schedules(net)
        cause = f"the schedule in callbacks ({', '.join(map(repr, theirs))}) takes its place" if theirs else "the recipe's"
        return f"lr_schedule='auto' resolved to None ({cause}), which installs no lr_scheduler"
    if resolved["patience"] is None:
        if "callbacks__early_stopping__patience" in vars(net):
            return "callbacks__early_stopping__patience=None installs no early_stopping"
        if _is_auto(net.patience):
            return "patience='auto' resolved to None (the recipe's: it stops no fit early), which installs no early_stopping"
        return "patience=None installs no early_stopping"
    fraction = resolved["validation_fraction"]
    if _is_auto(net.train_split) and not fraction:
        shown = f"validation_fraction={net.validation_fraction!r}" + (
            f" (resolved to {fraction!r})" if _is_auto(net.validation_fraction) else ""
        )
        return f"{shown} holds out no row to stop on, which installs no early_stopping"
    if net.train_split is None:
        return "train_split=None holds out no row to stop on, which installs no early_stopping"
    return None


def check_routed_builtins(net, resolved: dict) -> None:
    """Refuse ``callbacks__lr_scheduler...`` / ``callbacks__early_stopping...`` settings for a built-in this fit has not.

    skorch applies a ``callbacks__<name>`` replacement or ``callbacks__<name>__<param>`` setting only to
    a callback of that name and ignores the rest: ``lr_schedule=None`` with
    ``callbacks__lr_scheduler=LRScheduler(StepLR)`` trained at a constant rate. A replacement with None
    (removing it) is fine, and so is ``callbacks__early_stopping__patience=None``, which is what removes it.

    Parameters
    ----------
    net : TabFormerNet
    resolved : dict
        The recipe's resolved settings (``lr_schedule``, ``patience``, ``validation_fraction``).

    Raises
    ------
    ValueError
        Naming the keys and the setting that leaves the callback out.
    """
    mine = {name for name, _ in user_callbacks(net)}  # a callback of the user's by that name takes these settings
    for name in ("lr_scheduler", "early_stopping"):
        keys = sorted(key for key in vars(net) if key == f"callbacks__{name}" or key.startswith(f"callbacks__{name}__"))
        keys = [
            key for key in keys if not (vars(net)[key] is None and key in (f"callbacks__{name}", f"callbacks__{name}__patience"))
        ]
        if not keys or name in mine:
            continue
        why = "callbacks='disable' runs no callback" if _disabled(net) else _why_absent(net, name, resolved)
        if why is not None:
            raise ValueError(f"{', '.join(keys)} would set the built-in {name}, but {why}: nothing would read it; {_HINTS[name]}")


def builtin_callbacks(net) -> list:
    """The callbacks every estimator adds to skorch's: the non-finite guard, the collapse check,
    the ``lr_schedule`` and early stopping, as ``(name, callback)``.

    No built-in schedule (early stopping) runs beside one of the user's own (``fit`` refuses an
    explicit ``lr_schedule`` or ``patience`` beside one; this also covers ``set_params(callbacks=...)``
    after a fit).

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
    if user_stoppers(net):
        patience = None
    # A callbacks__<name>= replacement (its setting reported None) stands in the built-in's place; skorch swaps it in.
    replaced = replaced_builtins(net)
    if "lr_scheduler" in replaced:
        callbacks.append(("lr_scheduler", replaced["lr_scheduler"]))
    elif lr_schedule == "cosine" and not _is_auto(max_epochs):
        # Decays to 0 at max_epochs: a fit that runs to the end finishes with small, refining steps.
        callbacks.append(("lr_scheduler", CosineLR(policy=CosineAnnealingLR, T_max=max_epochs)))
    elif lr_schedule == "warmup_linear":
        callbacks.append(("lr_scheduler", WarmupLinearLR()))
    # Other values are refused by fit (check_params): skorch builds callbacks in set_params, which must not validate.
    if "early_stopping" in replaced:
        callbacks.append(("early_stopping", replaced["early_stopping"]))
    elif patience is not None and not _is_auto(patience) and net._uses_validation():
        monitor = net._setting("monitor") if hasattr(net, "resolved_params_") else "valid_loss"
        stopping = EarlyStopping(monitor=monitor, patience=patience, load_best=True, sink=net._sink)
        callbacks.append(("early_stopping", stopping))
    return callbacks


def scores_before_stopping(net, callbacks: list) -> list:
    """``callbacks`` (``callbacks_``) with the user's scoring callbacks moved up to just before the built-in early stopping.

    Early stopping may watch a score of the user's (skorch's ``EpochScoring``, ``BatchScoring``,
    ``PassthroughScoring``), so those must write it first. The scorers move, not early stopping:
    the user's other callbacks (``Checkpoint``, ``TrainEndCheckpoint``, ...) still run after early
    stopping, and so read its counters of the epoch and, at the end, the best weights it restored.

    Parameters
    ----------
    net : TabFormerNet
    callbacks : list of (str, Callback)
        skorch's initialized callbacks: the defaults, the user's, then PrintLog.

    Returns
    -------
    list of (str, Callback)
    """
    if "early_stopping" in {name for name, _ in user_callbacks(net)}:  # the user's own, already in place
        return callbacks
    stop = next((i for i, (name, _) in enumerate(callbacks) if name == "early_stopping"), None)
    if stop is None:
        return callbacks
    after = callbacks[stop + 1 :]
    scorers = [item for item in after if isinstance(item[1], ScoringBase)]
    return callbacks[:stop] + scorers + [callbacks[stop]] + [item for item in after if not isinstance(item[1], ScoringBase)]
