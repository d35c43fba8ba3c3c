"""Training on several processes (GPUs, or CPU processes over gloo) through Hugging Face Accelerate.

The same estimator runs under ``torchrun`` or ``accelerate launch``: with
``distributed="auto"`` (the default) a launched script (``WORLD_SIZE`` > 1) trains with
an ``accelerate.Accelerator`` and a single process trains as before, without importing
Accelerate. What changes when it is on:

- each process reads its own shard of every training epoch (``prepare_data_loader``):
  ``batch_size`` is per process, the global batch ``batch_size x num_processes``;
- the forward pass of training goes through a ``DistributedDataParallel`` wrapper, which
  averages gradients across processes; ``module_`` itself stays the plain module, so
  callbacks, early stopping and ``save`` see the usual names;
- the optimizer is Accelerate's (gradient accumulation, fp16 loss scaling);
- validation and prediction run unsharded in every process (every process ends with the
  same, complete model and history), and only the main process prints.

Unlike skorch's ``AccelerateMixin``, autocast covers the forward pass and the loss only
(the estimator's ``precision``), and the module is never replaced by its wrapper.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import torch
from skorch.callbacks import PrintLog
from skorch.utils import to_tensor

from ._precision import resolve_device

__all__ = ["DistributedMixin", "launched_world_size"]

_MIXED_PRECISION = {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}


def launched_world_size() -> int:
    """Processes in the job this one was launched in (1 when not launched by torchrun/accelerate)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


class DistributedMixin:
    """``distributed`` for a skorch net with :class:`~._precision.PrecisionMixin`."""

    def _make_accelerator(self):
        """The ``accelerate.Accelerator`` this fit uses, or ``None`` for a single process."""
        setting = self.distributed
        if setting is None or setting is False or (isinstance(setting, str) and launched_world_size() <= 1):
            return None
        if not isinstance(setting, (str, bool, dict)):
            return setting  # an Accelerator the user built
        try:
            from accelerate import Accelerator
            from accelerate.utils import DistributedDataParallelKwargs
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("distributed training needs Hugging Face Accelerate: pip install accelerate") from None
        kwargs = dict(setting) if isinstance(setting, dict) else {}
        device = resolve_device(self.__dict__.get("device", "auto"))
        kwargs.setdefault("cpu", torch.device(device).type == "cpu")
        precision = super()._resolve_precision_setting()
        kwargs.setdefault("mixed_precision", _MIXED_PRECISION[precision])
        # Parts of a model can stay unused in a step (segment embeddings of a table, a
        # modality absent from a batch); DDP refuses that unless told to look for them.
        kwargs.setdefault("kwargs_handlers", [DistributedDataParallelKwargs(find_unused_parameters=True)])
        return Accelerator(**kwargs)

    def _start_accelerator(self) -> None:
        """Set ``accelerator_`` for a new fit: this run's Accelerator, or None in a single process.

        Every estimator's ``fit`` calls it first (the pretrainer and the tagger skipped it and
        trained unsharded, without DDP, in every process of a launched job).
        """
        self.accelerator_ = None  # a previous fit's must not answer the precision check _make_accelerator runs
        self.accelerator_ = self._make_accelerator()

    def _resume_accelerator(self) -> None:
        """For a continued fit (``partial_fit``, ``warm_start``): this run's Accelerator where the model has none.

        A loaded or unpickled model has none (``accelerator_`` is never saved); without one, a
        continued fit in a launched job trained every row in every process, without DDP.
        """
        if self._accelerator() is None:
            self._start_accelerator()

    def _accelerator(self):
        return self.__dict__.get("accelerator_")

    def _shared_seed(self):
        """With ``random_state=None`` in a job of several processes: a fresh seed the main process draws for all, else None.

        Each process drawing its own made the pretrainer's validation masks differ between
        processes: their validation losses differed, early stopping stopped them at different
        epochs, and the processes left training waited forever for the one that had stopped.
        """
        accelerator = self._accelerator()
        if self.random_state is not None or accelerator is None or accelerator.num_processes <= 1:
            return None
        from accelerate.utils import broadcast_object_list

        return int(broadcast_object_list([int(np.random.SeedSequence().generate_state(1)[0] >> 1)], from_process=0)[0])

    def __getstate__(self):
        # An Accelerator holds process-group state: it is this run's, never pickled.
        state = super().__getstate__()
        state["accelerator_"] = None
        return state

    def _resolve_precision_setting(self) -> str:
        accelerator = self._accelerator()
        if accelerator is None:
            return super()._resolve_precision_setting()
        ran = {value: key for key, value in _MIXED_PRECISION.items()}[str(accelerator.mixed_precision)]
        if self.precision not in ("auto", ran):
            if not torch.is_grad_enabled():
                # A prediction (after the fit, or set_params(precision=...) since): the accelerator's mixed precision
                # governs training steps only, so the user's setting applies, as in one process. Raised here, it
                # refused every prediction of a model trained in a launched job once its precision was changed.
                return super()._resolve_precision_setting()
            raise ValueError(
                f"precision={self.precision!r} contradicts the accelerator's mixed_precision="
                f"{accelerator.mixed_precision!r}; leave precision='auto' or build the Accelerator to match"
            )
        return ran

    def _resolved_device(self):
        accelerator = self._accelerator()
        return accelerator.device if accelerator is not None else super()._resolved_device()

    # -------------------------------------------------------------- training
    def get_default_callbacks(self):
        """skorch's callbacks; outside the main process the epoch table is not printed."""
        callbacks = list(super().get_default_callbacks())
        accelerator = self._accelerator()
        if accelerator is not None and not accelerator.is_main_process:
            callbacks = [(name, PrintLog(sink=_silent) if name == "print_log" else cb) for name, cb in callbacks]
        return callbacks

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Wrap the module for DDP and the optimizer for Accelerate (skorch hook)."""
        super().on_train_begin(net, X=X, y=y, **kwargs)
        accelerator = self._accelerator()
        if accelerator is not None:
            # Set through __dict__: skorch refuses new torch attributes outside initialize().
            self.__dict__["_ddp_module"] = accelerator.prepare_model(self.module_)
            self.__dict__["optimizer_"] = accelerator.prepare_optimizer(self.optimizer_)

    def on_train_end(self, net, X=None, y=None, **kwargs):
        """Drop the wrappers again: what is left is a plain module and optimizer (skorch hook)."""
        accelerator = self._accelerator()
        if accelerator is not None:
            accelerator.wait_for_everyone()
            self.__dict__["_ddp_module"] = None
            wrapped, plain = self.optimizer_, getattr(self.optimizer_, "optimizer", self.optimizer_)
            for _, callback in self.callbacks_:  # a scheduler built on the wrapper: its patched step cannot be pickled
                for value in vars(callback).values():
                    if getattr(value, "optimizer", None) is wrapped:
                        value.optimizer = plain
            self.__dict__["optimizer_"] = plain
        super().on_train_end(net, X=X, y=y, **kwargs)

    def infer(self, x, **fit_params):
        """skorch's ``infer``; a training forward goes through the DDP wrapper when there is one.

        Parameters
        ----------
        x : dict of tensors (a batch's tokens)
        **fit_params : passed to the module's forward

        Returns
        -------
        the module's output
        """
        ddp = getattr(self, "_ddp_module", None)
        if ddp is None or not self.module_.training:
            return super().infer(x, **fit_params)
        x = to_tensor(x, device=self.device)
        if isinstance(x, Mapping):
            return ddp(**self._merge_x_and_fit_params(x, fit_params))
        return ddp(x, **fit_params)

    def train_step(self, batch, **fit_params):
        """skorch's step, inside ``accelerator.accumulate`` (gradient accumulation) when distributed.

        Parameters
        ----------
        batch : (X, y) from the training DataLoader
        **fit_params : passed to the module's forward

        Returns
        -------
        dict with ``"loss"`` (distributed: the mean over the processes) and ``"y_pred"``
        """
        accelerator = self._accelerator()
        if accelerator is None or getattr(self, "_ddp_module", None) is None:
            return super().train_step(batch, **fit_params)
        with accelerator.accumulate(self._ddp_module):
            step = super().train_step(batch, **fit_params)
        # Each process's loss is its own shard's: averaged over the processes (whose batches are
        # equal, Accelerate's even_batches), every process records the global batch's train_loss,
        # not one shard's, and a non-finite loss stops them all alike.
        step["loss"] = accelerator.reduce(step["loss"].detach(), reduction="mean")
        return step

    def _backward(self, loss):
        accelerator = self._accelerator()
        if accelerator is None:
            return super()._backward(loss)
        accelerator.backward(loss)
        if accelerator.sync_gradients and accelerator.scaler is not None:
            accelerator.unscale_gradients()  # callbacks (gradient clipping) see true gradients
        return None

    def _step_optimizer(self, step_fn):
        accelerator = self._accelerator()
        if accelerator is None:
            return super()._step_optimizer(step_fn)
        step_fn()  # Accelerate's optimizer takes no closure; it skips steps while accumulating
        for name in self._optimizers:
            optimizer = getattr(self, name + "_")
            optimizer.step()
            optimizer.zero_grad()  # a no-op between accumulated batches, as the step is
        return None

    def _zero_grad_optimizer(self, set_to_none=None):
        # skorch clears gradients before each batch's backward; while Accelerate accumulates,
        # that would drop the batches before the last. Gradients are cleared after each real
        # step instead (_step_optimizer).
        if self._accelerator() is None:
            super()._zero_grad_optimizer(set_to_none)

    def _shard(self, loader, training: bool):
        """This process's shard of a training DataLoader when distributed; ``loader`` otherwise."""
        accelerator = self._accelerator()
        if accelerator is None or not training:
            return loader
        return accelerator.prepare_data_loader(loader)


def _silent(*args, **kwargs):
    return None
