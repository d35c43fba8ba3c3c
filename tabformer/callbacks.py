"""skorch callbacks every tabformer estimator can take: learning-rate schedules that
skorch's epoch-level ``LRScheduler`` cannot express.

``WarmupLinearLR`` is BERT's fine-tuning schedule (Devlin et al., 2019): the rate climbs
linearly from 0 over the first ``warmup`` share of the optimizer steps, then falls
linearly to 0 at the last step of ``max_epochs``. It steps per batch, so it needs the
number of batches per epoch, which it reads from the training set at the first epoch.

``MixedPrecision`` was removed in 0.2.0 (constructing it raises, naming the estimators'
``precision`` parameter that replaces it).
"""

from __future__ import annotations

import math

from skorch.callbacks import Callback

__all__ = ["WarmupLinearLR", "MixedPrecision"]


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


def _max_epochs(net) -> int:
    """The epochs a fit runs: a tabformer estimator's resolved ``max_epochs`` (its parameter
    may be ``"auto"``), or any skorch net's ``max_epochs``."""
    setting = getattr(net, "_setting", None)
    return int(setting("max_epochs") if callable(setting) else net.max_epochs)
