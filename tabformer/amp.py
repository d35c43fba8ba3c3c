"""Mixed precision for any tabformer estimator, as a skorch callback.

``TabFormerClassifier(device="cuda", callbacks=[MixedPrecision("bf16")])`` runs every
training batch under :func:`torch.autocast`: matrix products and
convolutions in bfloat16 (or float16), reductions and the weights in float32. Being a
callback, it works unchanged for the classifier, regressor, tagger and pretrainer, and
``clone``/``GridSearchCV`` carry it like any other parameter.
"""

from __future__ import annotations

import warnings

import torch
from skorch.callbacks import Callback

__all__ = ["MixedPrecision"]

_DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}


class MixedPrecision(Callback):
    """Autocast each training batch's forward, loss and backward.

    Validation batches and ``predict`` stay in float32: skorch caches validation
    outputs for its scores and converts them to numpy, which has no bfloat16.

    Parameters
    ----------
    dtype : {"bf16", "fp16"}, default="bf16"
        bfloat16 keeps float32's range and needs no loss scaling (preferred on
        Ampere/Hopper GPUs). float16 is applied *without* loss scaling, which a callback
        cannot insert before ``backward``: small gradients may underflow.
    enabled : bool, default=True

    Notes
    -----
    On CPU, autocast supports bfloat16 only and is usually slower than float32 on
    CPUs without AMX; the option is meant for ``device="cuda"``.
    """

    def __init__(self, dtype="bf16", enabled=True):
        self.dtype = dtype
        self.enabled = enabled

    def initialize(self):
        if self.dtype not in _DTYPES:
            raise ValueError(f"MixedPrecision dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        if _DTYPES[self.dtype] is torch.float16 and self.enabled:
            warnings.warn("MixedPrecision('fp16') runs without loss scaling; prefer 'bf16'", UserWarning, stacklevel=2)
        self._context = None
        return self

    def _exit(self):
        if getattr(self, "_context", None) is not None:
            context, self._context = self._context, None
            context.__exit__(None, None, None)

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        # A batch that raised never reached on_batch_end: close its context first.
        self._exit()
        if not (self.enabled and training):
            return
        device_type = torch.device(net.device).type
        self._context = torch.autocast(device_type=device_type, dtype=_DTYPES[self.dtype])
        self._context.__enter__()

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        self._exit()

    def on_train_end(self, net, X=None, y=None, **kwargs):
        self._exit()
