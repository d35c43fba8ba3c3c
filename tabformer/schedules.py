"""Learning-rate schedules that skorch's epoch-level ``LRScheduler`` cannot express.

``WarmupLinearLR`` is BERT's fine-tuning schedule (Devlin et al., 2019): the rate climbs
linearly from 0 over the first ``warmup`` share of the optimizer steps, then falls
linearly to 0 at the last step of ``max_epochs``. It steps per batch, so it needs the
number of batches per epoch, which it reads from the training set at the first epoch.
"""

from __future__ import annotations

import math

from skorch.callbacks import Callback

__all__ = ["WarmupLinearLR"]


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
    """

    def __init__(self, warmup: float = 0.1):
        self.warmup = warmup

    def initialize(self):
        if not 0.0 <= float(self.warmup) < 1.0:
            raise ValueError(f"warmup must be a share of the training steps in [0, 1), got {self.warmup!r}")
        self.total_steps_ = None
        self.step_ = 0
        self.peak_lrs_ = None
        return self

    def on_train_begin(self, net, **kwargs):
        self.total_steps_ = None
        self.step_ = 0
        self.peak_lrs_ = [group["lr"] for group in net.optimizer_.param_groups]

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        if self.total_steps_ is None:
            batches = len(net.get_iterator(dataset_train, training=True))
            self.total_steps_ = max(1, batches * net.max_epochs)

    def factor(self, step: int) -> float:
        """Multiplier of the peak rate at optimizer step ``step`` (0-based)."""
        warmup_steps = math.ceil(float(self.warmup) * self.total_steps_)
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        remaining = self.total_steps_ - warmup_steps
        return max(0.0, (self.total_steps_ - step) / max(1, remaining))

    def on_batch_begin(self, net, training=False, **kwargs):
        if not training:
            return
        scale = self.factor(self.step_)
        for group, peak in zip(net.optimizer_.param_groups, self.peak_lrs_):
            group["lr"] = peak * scale
        net.history.record_batch("lr", net.optimizer_.param_groups[0]["lr"])
        self.step_ += 1

    def on_train_end(self, net, **kwargs):
        # Leave the optimizer at its peak rates so a later partial_fit starts a fresh cycle
        # from the same place instead of from ~0.
        for group, peak in zip(net.optimizer_.param_groups, self.peak_lrs_ or []):
            group["lr"] = peak
