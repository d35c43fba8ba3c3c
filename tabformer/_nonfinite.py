"""``NonFiniteGuard``: stop a fit at the first non-finite loss or gradient and restore the
last good weights (public as :mod:`tabformer.callbacks`' ``NonFiniteGuard``).

Its checks read values back from the device. On a GPU each read waits for every launched
kernel, so on an accelerator it defers them to the end of each phase (``defer="auto"``).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import torch
from skorch.callbacks import Callback

from ._warnings import user_stacklevel

__all__ = ["NonFiniteGuard", "NonFiniteTrainingError"]


class NonFiniteTrainingError(FloatingPointError):
    """A training (or validation) loss or gradient became NaN or infinite; the message
    names the epoch and batch, and the weights were restored to the last good epoch."""


class NonFiniteGuard(Callback):
    """Stop at the first non-finite loss or gradient and restore the last good weights.

    Every tabformer estimator installs it under the name ``"nonfinite"``. Gradients are
    checked after ``backward`` and before the optimizer step, so a NaN gradient never
    reaches the weights; losses are checked for training and validation batches. On a
    failure the module's weights go back to those at the end of the last epoch whose
    every batch was finite (the initial weights if it was the first epoch).

    Parameters
    ----------
    action : {"raise", "warn"}, default="raise"
        ``"raise"``: raise :class:`NonFiniteTrainingError` (``fit`` fails).
        ``"warn"``: warn (``RuntimeWarning``) and end training there; ``fit`` returns
        the estimator with the restored weights.
    check_gradients : bool, default=True
        Also check the gradients (one reduction per parameter and batch).
    defer : {"auto", True, False}, default="auto"
        Check once per phase (after the training batches, after the validation batches)
        instead of after every batch. Each check reads a value back from the device, and
        on a GPU every read waits for the launched kernels to finish, so the next batch's
        Python work stops overlapping them. ``"auto"``: deferred unless the module is on
        the CPU, where a read costs nothing. Deferred, gradients are not checked batch by
        batch (a non-finite gradient shows in the next loss, or in the weights, which are
        checked after the training batches) and the rest of the phase runs before the
        failure is raised; the weights are restored all the same.

    Attributes
    ----------
    failure_ : str or None
        What stopped the last fit (the warning's text), or None.

    Raises
    ------
    NonFiniteTrainingError
        With ``action="raise"``, at the first non-finite loss or gradient.

    Examples
    --------
    >>> from tabformer import TabFormerClassifier
    >>> clf = TabFormerClassifier(callbacks__nonfinite__action="warn")
    """

    defer = "auto"  # a guard pickled before the setting existed has none

    def __init__(self, action: str = "raise", check_gradients: bool = True, defer="auto"):
        self.action = action
        self.check_gradients = check_gradients
        self.defer = defer

    def initialize(self):
        """Check ``action`` (skorch hook); returns ``self``."""
        if self.action not in ("raise", "warn"):
            raise ValueError(f"NonFiniteGuard action must be 'raise' or 'warn', got {self.action!r}")
        self.good_state_ = None
        self.failure_ = None
        self.pending_losses_, self.deferred_ = {True: [], False: []}, False
        return self

    def on_train_begin(self, net, **kwargs):
        """Remember the starting weights (skorch hook)."""
        self.failure_ = None
        self._snapshot(net)

    def on_train_end(self, net, **kwargs):
        """Check what a fit interrupted mid-phase left unchecked; warn, never raise (skorch hook)."""
        if any(getattr(self, "pending_losses_", {}).values()):
            self.check_pending(net, interrupted=True)

    def on_epoch_begin(self, net, **kwargs):
        """Restart the batch count (skorch hook)."""
        self.batch_counts_ = {True: 0, False: 0}
        self.pending_losses_ = {True: [], False: []}
        self.deferred_ = self._defers(net)

    def _defers(self, net) -> bool:
        if self.defer != "auto":
            return bool(self.defer)
        parameter = next(net.module_.parameters(), None) if getattr(net, "module_", None) is not None else None
        return parameter is not None and parameter.device.type != "cpu"

    def on_batch_begin(self, net, training=False, **kwargs):
        """Count the batch; deferred, check the training batches when validation begins (skorch hook)."""
        if not training and self.pending_losses_[True]:
            self.check_pending(net, training=True)
        self.batch_counts_[bool(training)] += 1

    def on_grad_computed(self, net, named_parameters, training=False, **kwargs):
        """Check the gradients before the optimizer step uses them (skorch hook)."""
        if not self.check_gradients or _scales_losses(net) or self.deferred_:
            return
        named = [(name, param.grad) for name, param in named_parameters if param.grad is not None]
        if not named:
            return
        grads = [grad.detach() for _, grad in named]
        # The L2 norm is non-finite whenever an element is, and on the CPU it runs ~10x faster
        # than the max norm (MiniLM: 8 ms against 78 ms a step). It can also overflow on huge
        # finite gradients, so only the max norm, which cannot, decides a failure.
        if bool(_finite_norms(grads, 2).all()):
            return
        finite = _finite_norms(grads, float("inf"))
        if not bool(finite.all()):
            first = named[int((~finite).nonzero()[0])][0]
            self._fail(net, f"a non-finite gradient (first in {first!r})", training=True)

    def on_batch_end(self, net, training=False, loss=None, **kwargs):
        """Check the batch loss, or keep it for :meth:`check_pending` (skorch hook)."""
        loss = None if loss is None else torch.as_tensor(loss).detach()
        if loss is None:
            return
        if self.deferred_:
            self.pending_losses_[bool(training)].append(loss)
        elif not bool(torch.isfinite(loss).all()):
            self._fail(net, f"a non-finite {'training' if training else 'validation'} loss ({float(loss)})", training)

    def check_pending(self, net, training=None, interrupted=False):
        """Check the losses kept back since the last check (deferred mode) in one read-back;
        after training batches, also the weights.

        The estimators call it at the end of each phase, before any epoch-end callback
        reads the history; :meth:`on_epoch_end` calls it too, for other nets.

        Parameters
        ----------
        net : skorch NeuralNet
        training : bool or None, default=None
            Which phase's losses; ``None``: both.
        interrupted : bool, default=False
            The fit has already ended (a ``KeyboardInterrupt`` mid-phase): restore and
            warn, whatever ``action`` says.
        """
        for phase in (True, False) if training is None else (bool(training),):
            losses = getattr(self, "pending_losses_", {}).get(phase)
            if not losses:
                continue
            self.pending_losses_[phase] = []
            values = torch.stack([loss.double().reshape(-1).sum() for loss in losses])
            checks = [torch.isfinite(values)]
            if phase:  # a non-finite gradient of the last batch shows in no loss yet
                weights = [p.detach() for p in net.module_.parameters() if p.numel()]  # no max of nothing
                # The max norm: an L2 norm can overflow on huge but finite weights.
                if weights:
                    checks.append(_finite_norms(weights, float("inf")).all().reshape(1).to(values.device))
            finite = torch.cat(checks).cpu()  # the one read-back
            name = "training" if phase else "validation"
            if not bool(finite[: len(losses)].all()):
                first = int((~finite[: len(losses)]).nonzero()[0])
                self._fail(net, f"a non-finite {name} loss ({float(values[first])})", phase, first + 1, interrupted)
            elif not bool(finite.all()):
                self._fail(
                    net, "non-finite weights after the last training batch (a non-finite gradient)", phase, None, interrupted
                )

    def on_epoch_end(self, net, **kwargs):
        """Every batch was finite: these weights are the new last good ones (skorch hook)."""
        self.check_pending(net)
        self._snapshot(net)

    def _snapshot(self, net):
        # On the CPU, so a guard on a big model does not double its GPU memory. The buffers are
        # kept from one snapshot to the next; from a GPU they are pinned and filled with
        # non-blocking copies, in stream order, so an epoch's end does not wait for the GPU
        # (the restore, load_state_dict, is a blocking copy queued after them).
        state = net.module_.state_dict()
        good = self.good_state_
        if good is None or list(good) != list(state) or any(_mismatch(good[key], value) for key, value in state.items()):
            good = OrderedDict(
                (key, torch.empty(value.shape, dtype=value.dtype, pin_memory=value.is_cuda)) for key, value in state.items()
            )
        for key, value in state.items():
            good[key].copy_(value, non_blocking=value.is_cuda)
        self.good_state_ = good

    def _fail(self, net, what: str, training: bool, batch=None, interrupted=False):
        epoch = len(net.history)
        batch = self.batch_counts_[bool(training)] if batch is None else batch
        lr = net.optimizer_.param_groups[0]["lr"] if getattr(net, "optimizer_", None) is not None else None
        lr_text = "" if lr is None else f"; the learning rate was {lr:g}"
        message = (
            f"{type(net).__name__}: {what} at epoch {epoch}, {'training' if training else 'validation'} batch {batch}"
            f"{lr_text}. Training stopped and the weights were restored to "
            f"{'the end of epoch ' + str(epoch - 1) if epoch > 1 else 'their initial values'}. Try a lower lr (e.g. 10x lower), "
            "check the inputs and targets for extreme values, or use callbacks__nonfinite__action='warn' to keep "
            "the restored model."
        )
        if self.good_state_ is not None:
            net.module_.load_state_dict(self.good_state_)
        _forget_non_finite_moments(getattr(net, "optimizer_", None))
        self.failure_ = message
        if interrupted:
            warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())
            return
        if self.action == "raise":
            raise NonFiniteTrainingError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())
        # skorch ends fit quietly on KeyboardInterrupt (that is how EarlyStopping stops it).
        raise KeyboardInterrupt


def _mismatch(buffer: torch.Tensor, value: torch.Tensor) -> bool:
    return buffer.shape != value.shape or buffer.dtype != value.dtype or buffer.is_pinned() != value.is_cuda


def _forget_non_finite_moments(optimizer) -> None:
    # A deferred check (or check_gradients=False) lets a non-finite step through: Adam's
    # moments would turn the restored weights non-finite again at the next step. Such a
    # parameter's state is dropped, so the optimizer starts it afresh.
    if optimizer is None:
        return
    for param in list(optimizer.state):
        state = optimizer.state[param]
        tensors = [value for value in state.values() if torch.is_tensor(value) and value.is_floating_point() and value.numel()]
        if tensors and not bool(_finite_norms(tensors, float("inf")).all()):
            del optimizer.state[param]


def _finite_norms(grads: list, order: float) -> torch.Tensor:
    """Bool tensor, one per gradient: is its ``order``-norm finite."""
    return torch.isfinite(torch.stack([norm.float() for norm in torch._foreach_norm(grads, order)]))


def _scales_losses(net) -> bool:
    # Under fp16 loss scaling an overflowing gradient is expected now and then: the
    # scaler skips that step and lowers the scale, so it is no failure.
    # _scaler(): the one this step scales with (an fp16 fit continued in fp32 keeps an enabled grad_scaler_)
    scaler = net._scaler() if hasattr(net, "_scaler") else getattr(net, "grad_scaler_", None)
    accelerator = getattr(net, "accelerator_", None)
    return bool(scaler is not None and scaler.is_enabled()) or getattr(accelerator, "scaler", None) is not None
