"""skorch callbacks every tabformer estimator can take: learning-rate schedules that
skorch's epoch-level ``LRScheduler`` cannot express.

``WarmupLinearLR`` is BERT's fine-tuning schedule (Devlin et al., 2019): the rate climbs
linearly from 0 over the first ``warmup`` share of the optimizer steps, then falls
linearly to 0 at the last step of ``max_epochs``. It steps per batch, so it needs the
number of batches per epoch, which it reads from the training set at the first epoch.

``MixedPrecision`` was removed in 0.2.0 (constructing it raises, naming the estimators'
``precision`` parameter that replaces it).

``NonFiniteGuard`` is on by default in every tabformer estimator (callback name
``"nonfinite"``): at the first non-finite loss or gradient it restores the weights of the
last epoch that trained finitely and raises :class:`NonFiniteTrainingError` naming the
epoch and batch (``callbacks__nonfinite__action="warn"`` warns and stops instead), so a
diverged fit never returns a model that predicts NaN. It lives in ``tabformer._nonfinite``.

``EarlyStopping`` is skorch's, except that ``lower_is_better`` defaults to what the
monitored name says (``valid_loss`` lower, ``valid_acc`` higher), so that
``callbacks__early_stopping__monitor="valid_loss"`` alone on a recipe that watched accuracy
does not keep the epoch with the worst loss.

``TrainingCheckpoint`` (in ``tabformer._checkpoint``) writes the training state at every
epoch end, so a crashed ``fit`` run again resumes where it stopped.
"""

from __future__ import annotations

import logging
import math

from skorch.callbacks import Callback
from skorch.callbacks import EarlyStopping as _SkorchEarlyStopping

from ._checkpoint import TrainingCheckpoint, _max_epochs
from ._nonfinite import NonFiniteGuard, NonFiniteTrainingError

__all__ = [
    "EarlyStopping",
    "WarmupLinearLR",
    "MixedPrecision",
    "NonFiniteGuard",
    "NonFiniteTrainingError",
    "TrainingCheckpoint",
    "log_user_interrupt",
]


# Parts of a history key that say which way is better; a key with neither is refused.
_HIGHER_IS_BETTER = ("acc", "f1", "auc", "r2", "score", "precision", "recall")
_LOWER_IS_BETTER = ("loss", "error", "mse", "mae", "rmse")


def higher_is_better(monitor: str) -> bool:
    """Whether a larger value of the history key ``monitor`` is better, read from its name.

    Parameters
    ----------
    monitor : str
        E.g. ``"valid_loss"`` (False) or ``"valid_acc"`` (True).

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        When the name says neither (e.g. ``"valid_mcc"``): pass ``lower_is_better``.
    """
    parts = str(monitor).lower().replace("-", "_").split("_")
    if any(part in _LOWER_IS_BETTER for part in parts):
        return False
    if any(part in _HIGHER_IS_BETTER for part in parts):
        return True
    raise ValueError(
        f"cannot tell from its name whether a larger {monitor!r} is better: "
        "set callbacks__early_stopping__lower_is_better=True or False"
    )


class EarlyStopping(_SkorchEarlyStopping):
    """skorch's ``EarlyStopping``, with ``lower_is_better="auto"`` read from the monitored name.

    The estimators install it as the callback ``"early_stopping"`` watching the recipe's
    ``monitor``; changing only ``callbacks__early_stopping__monitor`` then flips the
    direction with it (skorch's own keeps the direction it was built with).

    Parameters
    ----------
    monitor : str, default="valid_loss"
    patience : int, default=5
    threshold : float, default=1e-4
    threshold_mode : {"rel", "abs"}, default="rel"
    lower_is_better : bool or "auto", default="auto"
        ``"auto"``: :func:`higher_is_better` decides from ``monitor``'s name at the start
        of training (a name it cannot read raises, asking for this setting).
    sink : callable, default=print
    load_best : bool, default=False

    Attributes
    ----------
    lower_is_better_ : bool
        The direction this fit used.
    """

    def __init__(
        self,
        monitor="valid_loss",
        patience=5,
        threshold=1e-4,
        threshold_mode="rel",
        lower_is_better="auto",
        sink=print,
        load_best=False,
    ):
        super().__init__(
            monitor=monitor,
            patience=patience,
            threshold=threshold,
            threshold_mode=threshold_mode,
            lower_is_better=lower_is_better,
            sink=sink,
            load_best=load_best,
        )

    def on_train_begin(self, net, **kwargs):
        """Resolve the direction, then skorch's reset (skorch hook)."""
        if isinstance(self.lower_is_better, str):
            if self.lower_is_better != "auto":
                raise ValueError(f"lower_is_better must be True, False or 'auto', got {self.lower_is_better!r}")
            self.lower_is_better_ = not higher_is_better(self.monitor)
        else:
            self.lower_is_better_ = bool(self.lower_is_better)
        super().on_train_begin(net, **kwargs)
        self.dynamic_threshold_ = float("inf") if self.lower_is_better_ else float("-inf")

    def on_epoch_end(self, net, **kwargs):
        """skorch's, after checking that a callback wrote ``monitor`` this epoch (skorch hook)."""
        if self.monitor not in net.history[-1]:  # skorch's KeyError named the key, not what there is to watch
            scores = sorted(key for key in net.history[-1] if key.startswith(("valid_", "train_")) and "_batch_" not in key)
            raise ValueError(
                f"EarlyStopping monitors {self.monitor!r}, which no callback wrote in epoch {len(net.history)}; the "
                f"history has {scores}: monitor one of them, or add a scoring callback that writes it, e.g. "
                f"EpochScoring(..., name={self.monitor!r}) (with a validation split for a valid_* name)"
            )
        return super().on_epoch_end(net, **kwargs)

    def _is_score_improved(self, score):
        return score < self.dynamic_threshold_ if self.lower_is_better_ else score > self.dynamic_threshold_

    def _calc_new_threshold(self, score):
        change = self.threshold * score if self.threshold_mode == "rel" else self.threshold
        return score - change if self.lower_is_better_ else score + change


class WarmupLinearLR(Callback):
    """Linear warm-up over ``warmup`` of all training steps, then linear decay to 0.

    Installed by ``lr_schedule="warmup_linear"`` under the callback name
    ``"lr_scheduler"``, so ``callbacks__lr_scheduler__warmup=0.06`` sets the share.
    Each parameter group keeps its own peak rate (the one it had when ``fit`` began),
    and every ``fit`` restarts the schedule. The rate of each step is recorded in the
    batch history as ``"lr"``.

    Parameters
    ----------
    warmup : float, default=0.1
        Share of the total optimizer steps (``max_epochs`` x batches per epoch) spent
        warming up, in [0, 1).

    Attributes
    ----------
    total_steps_ : int or None
        Optimizer steps of the whole ``fit``; read from the training set at the first epoch.
    step_ : int
        Optimizer steps taken so far in this ``fit``.
    peak_lrs_ : list of float or None
        Each parameter group's rate when ``fit`` began.

    Raises
    ------
    ValueError
        At ``initialize`` (the estimator's fit), if ``warmup`` is not in [0, 1).
    """

    def __init__(self, warmup: float = 0.1):
        self.warmup = warmup

    def initialize(self):
        """Check ``warmup`` and reset the schedule's state (skorch hook); returns ``self``."""
        if not 0.0 <= float(self.warmup) < 1.0:
            raise ValueError(f"warmup must be a share of the training steps in [0, 1), got {self.warmup!r}")
        self.total_steps_ = None
        self.step_ = 0
        self.peak_lrs_ = None
        return self

    def on_train_begin(self, net, **kwargs):
        """Restart the schedule and remember each parameter group's peak rate (skorch hook)."""
        self.total_steps_ = None
        self.step_ = 0
        self.peak_lrs_ = [group["lr"] for group in net.optimizer_.param_groups]

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        """At the first epoch, count the total steps: batches per epoch x ``max_epochs`` (skorch hook)."""
        if self.total_steps_ is None:
            batches = len(net.get_iterator(dataset_train, training=True))
            self.total_steps_ = max(1, batches * _max_epochs(net))

    def factor(self, step: int) -> float:
        """Multiplier of the peak rate at optimizer step ``step`` (0-based).

        Parameters
        ----------
        step : int
            Optimizer step, ``0 .. total_steps_ - 1``; needs ``total_steps_`` (set at the first epoch).

        Returns
        -------
        factor : float in [0, 1]
            ``(step + 1) / (warmup_steps + 1)`` while warming up, then linear decay to 0.
        """
        warmup_steps = math.ceil(float(self.warmup) * self.total_steps_)
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        remaining = self.total_steps_ - warmup_steps
        return max(0.0, (self.total_steps_ - step) / max(1, remaining))

    def on_batch_begin(self, net, training=False, **kwargs):
        """Set every group's rate for this training step and record it as ``"lr"`` (skorch hook)."""
        if not training:
            return
        scale = self.factor(self.step_)
        for group, peak in zip(net.optimizer_.param_groups, self.peak_lrs_):
            group["lr"] = peak * scale
        net.history.record_batch("lr", net.optimizer_.param_groups[0]["lr"])
        self.step_ += 1

    def on_train_end(self, net, **kwargs):
        """Restore the peak rates (skorch hook)."""
        # Leave the optimizer at its peak rates so a later partial_fit starts a fresh cycle
        # from the same place instead of from ~0.
        for group, peak in zip(net.optimizer_.param_groups, self.peak_lrs_ or []):
            group["lr"] = peak


class MixedPrecision(Callback):
    """Removed in 0.2.0: use the estimators' ``precision`` parameter.

    The callback kept autocast on through ``backward`` and the optimizer step, ran fp16
    without loss scaling and predicted in fp32 only; ``precision="bf16"`` (or
    ``"fp16"``, with a ``GradScaler``) autocasts the forward pass and loss of training,
    validation and prediction alike.

    Parameters
    ----------
    dtype, enabled : ignored

    Raises
    ------
    TypeError
        Always, naming the replacement.
    """

    def __init__(self, dtype="bf16", enabled=True):
        raise TypeError(
            "tabformer.callbacks.MixedPrecision was removed in 0.2.0: pass "
            f"precision={dtype!r} to the estimator instead (e.g. TabFormerClassifier(precision='bf16'))"
        )


def log_user_interrupt(net, interrupt: KeyboardInterrupt) -> None:
    """Log (``"tabformer"`` logger, WARNING) a KeyboardInterrupt that ended ``net``'s fit,
    unless a callback raised it to stop training (skorch's EarlyStopping, NonFiniteGuard).

    Parameters
    ----------
    net : skorch NeuralNet
    interrupt : KeyboardInterrupt
    """
    frame = interrupt.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None or not isinstance(frame.tb_frame.f_locals.get("self"), Callback):
        logging.getLogger("tabformer").warning(
            "%s: fit interrupted (KeyboardInterrupt) in epoch %d; the estimator is usable and keeps the best "
            "weights so far (early stopping's best epoch, else the current ones)",
            type(net).__name__,
            len(net.history),
        )


def _restoring_early_stopping(net):
    """The early-stopping callback whose best epoch's weights the fit ended with, or None.

    With several (the user's callbacks may hold more than one), skorch runs their ``on_train_end`` in
    order: the last one that loaded wins, and one whose best epoch was the last loaded nothing.
    """
    callbacks = [callback for _, callback in getattr(net, "callbacks_", ()) if isinstance(callback, _SkorchEarlyStopping)]
    restorers = [cb for cb in callbacks if cb.load_best and getattr(cb, "best_model_weights_", None) is not None]
    last = net.history[-1, "epoch"] if len(getattr(net, "history", ())) else None
    loaded = [callback for callback in restorers if callback.best_epoch_ != last]
    return (loaded or restorers or [None])[-1]
