"""Where and in which precision an estimator computes: ``device="auto"`` and ``precision``.

Mixed precision follows PyTorch's AMP recipe (and Hugging Face's ``Trainer``): autocast
wraps the forward pass and the loss only; ``backward`` and the optimizer step run
outside it on float32 weights; float16 scales the loss with a ``GradScaler`` so small
gradients do not underflow, and unscales the gradients before callbacks see them
(gradient clipping reads true norms). Validation and every prediction run under the same
autocast, and outputs come back as float32.
"""

from __future__ import annotations

import contextlib

import torch
from skorch.dataset import unpack_data

__all__ = ["PrecisionMixin", "fuses_optimizer_step", "resolve_device", "resolve_precision", "PRECISIONS"]

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(device) -> str | torch.device:
    """``"auto"`` is CUDA when a GPU is visible, else the CPU; any other value is kept."""
    if isinstance(device, str) and device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_precision(precision: str, device) -> str:
    """``"auto"`` is bf16 on a GPU that supports it, else fp32; any other value is kept.

    The CPU stays in fp32 by default: autocast there is slower than fp32 matmuls on CPUs
    without AMX, and most of this library's CPU users have none.
    """
    if precision != "auto":
        return precision
    on_cuda = torch.device(resolve_device(device)).type == "cuda"
    return "bf16" if on_cuda and torch.cuda.is_bf16_supported() else "fp32"


def _to_float32(output):
    if isinstance(output, torch.Tensor):
        return output.float() if output.is_floating_point() else output
    if isinstance(output, (tuple, list)):
        return type(output)(_to_float32(item) for item in output)
    if isinstance(output, dict):
        return {key: _to_float32(value) for key, value in output.items()}
    return output


class PrecisionMixin:
    """skorch's training and validation steps under autocast, with a GradScaler for fp16.

    ``device`` is skorch's parameter. Its value ``"auto"`` stays what ``get_params`` and
    pickles show (``clone`` must not freeze a machine's choice), while skorch's own code,
    which reads ``self.device`` to move modules and tensors, sees the resolved device.
    """

    @property
    def device(self):
        """The device skorch moves modules and tensors to: ``"auto"`` resolved on this machine."""
        return self._resolved_device()

    @device.setter
    def device(self, value):
        self.__dict__["device"] = value

    def _resolved_device(self):
        return resolve_device(self.__dict__.get("device", "cpu"))

    def get_params(self, deep=True):
        """skorch's ``get_params``, with ``device`` as the user set it (``"auto"`` unresolved).

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of nested estimators.

        Returns
        -------
        dict
        """
        params = super().get_params(deep=deep)
        if "device" in params:
            params["device"] = self.__dict__.get("device", params["device"])
        return params

    def __setstate__(self, state):
        # skorch maps the stored tensors onto state["device"]; give it a real device.
        raw = state.get("device")
        if isinstance(raw, str) and raw == "auto":
            state = dict(state, device=resolve_device(raw))
        super().__setstate__(state)
        if isinstance(raw, str) and raw == "auto":
            self.__dict__["device"] = raw

    # ----------------------------------------------------------- precision
    @property
    def _precision(self) -> str:
        # The setting as it is now, not resolved_params_ (what the fit ran): read from there,
        # set_params(precision="fp32") after fit was ignored, and an "auto" model trained in bf16
        # on a GPU kept predicting under bf16 autocast once loaded onto the CPU.
        return self._resolve_precision_setting()

    def _resolve_precision_setting(self) -> str:
        return resolve_precision(self.precision, self.device)

    def autocast(self):
        """The context the forward pass and loss run in: ``torch.autocast`` or a no-op for fp32."""
        precision = self._precision
        if precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(self.device).type, dtype=_DTYPES[precision])

    def initialize(self):
        """skorch's ``initialize``, plus a fresh ``grad_scaler_`` (enabled for fp16 only)."""
        super().initialize()
        device_type = torch.device(self.device).type
        # Under Accelerate, its optimizer and backward scale fp16 losses instead.
        own_scaler = self._precision == "fp16" and self.__dict__.get("accelerator_") is None
        self.grad_scaler_ = torch.amp.GradScaler(device_type, enabled=own_scaler)
        return self

    def _scaler(self):
        if self._precision != "fp16" or self.__dict__.get("accelerator_") is not None:
            return None
        scaler = getattr(self, "grad_scaler_", None)
        if scaler is None or not scaler.is_enabled():
            # set_params(precision="fp16") before partial_fit: initialize built this one disabled,
            # and the continued fit would have run fp16 autocast without loss scaling.
            scaler = self.grad_scaler_ = torch.amp.GradScaler(torch.device(self.device).type)
        return scaler

    def train_step_single(self, batch, **fit_params):
        """Forward and loss under autocast; ``backward`` outside it, on the scaled loss for fp16.

        Parameters
        ----------
        batch : (X, y) from the training DataLoader
        **fit_params : passed to the module's forward

        Returns
        -------
        dict with ``"loss"`` (unscaled) and ``"y_pred"`` (float32)
        """
        self._set_training(True)
        Xi, yi = unpack_data(batch)
        with self.autocast():
            y_pred = self.infer(Xi, **fit_params)
            loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        self._backward(loss)
        return {"loss": loss, "y_pred": _to_float32(y_pred)}

    def _backward(self, loss):
        scaler = self._scaler()
        if scaler is None:
            loss.backward()
            return
        scaler.scale(loss).backward()
        for name in self._optimizers:
            scaler.unscale_(getattr(self, name + "_"))  # callbacks see true gradients

    def _step_optimizer(self, step_fn):
        scaler = self._scaler()
        if scaler is None:
            return super()._step_optimizer(step_fn)
        # GradScaler takes no closure: compute the gradients once, then step every optimizer.
        step_fn()
        for name in self._optimizers:
            scaler.step(getattr(self, name + "_"))
        scaler.update()
        return None

    def validation_step(self, batch, **fit_params):
        """skorch's validation step under the training autocast; predictions in float32.

        Parameters
        ----------
        batch : (X, y) from the validation DataLoader
        **fit_params : passed to the module's forward

        Returns
        -------
        dict with ``"loss"`` and ``"y_pred"`` (float32)
        """
        self._set_training(False)
        Xi, yi = unpack_data(batch)
        with torch.no_grad(), self.autocast():
            y_pred = self.infer(Xi, **fit_params)
            loss = self.get_loss(y_pred, yi, X=Xi, training=False)
        return {"loss": loss, "y_pred": _to_float32(y_pred)}


def fuses_optimizer_step(estimator, user: set) -> bool:
    """Adam(W) steps with its fused kernel: the foreach step was 9% of a MiniLM-shaped step on an
    H200; on 2 CPU cores the table default's 49 tensors step in 0.29 ms against 1.40 unfused."""
    chosen = {"optimizer__fused", "optimizer__foreach", "optimizer__differentiable"}  # fused takes none of them
    if estimator.optimizer not in (torch.optim.Adam, torch.optim.AdamW) or user & chosen:
        return False
    return torch.device(resolve_device(estimator.device)).type in ("cuda", "cpu")
