"""ONNX export of a fitted estimator's module; tokenization stays in Python.

The graph's inputs are the tokenizer's arrays, under the tokenizer's own names and dtypes
(``cat_ids``, ``num_values``, ``num_missing``; ``input_ids``, ``attention_mask``,
``token_type_ids``; ``pixels``; mixed: ``"<segment>/<array>"``), with a dynamic batch
axis and a dynamic length axis for every text array, so a server runs::

    session.run(None, onnx_inputs(estimator, X))    # or {name: tokenizer_.transform(X)[name]}

The output is what the estimator returns: ``probabilities`` (classifier: (B, K) in
``classes_`` order; tagger: (B, T, K) per sub-word), ``predictions`` (regressor: (B, k) on
the target's scale) or ``embeddings`` (pretrainer: its ``pooling``). The model's metadata
(``metadata_props``) holds the estimator, the inputs and outputs and ``classes_`` as JSON.
A regressor's ``predictions`` are float64, its output mapped to the target's scale in float64 as ``predict`` does
(in float32, a target with a large offset, 1.7e9 seconds, lost its last 7 bits).

The module is traced in eval mode (the text embedder cuts padding in training only)
with the TorchScript-based exporter (``torch.onnx.export(dynamo=False)``), which needs
no package beyond ``onnx``; the trace is taken on inputs with padding, so the attention
masks are part of the graph.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import warnings

import numpy as np
import torch
from torch import nn

from ._version import __version__
from ._warnings import user_stacklevel
from .nn.embedders.mixed import SEPARATOR
from .nn.heads import mean_pool

__all__ = ["export_onnx", "onnx_inputs", "input_layout"]

#: the first ONNX opset with scaled_dot_product_attention (torch's exporter: "added in version 14")
MIN_OPSET = 14

BATCH = "batch"
#: dtypes of each known embedder kind's arrays, and which of them have a length axis
_ARRAYS = {
    "tabular": {"cat_ids": (np.int64, False), "num_values": (np.float32, False), "num_missing": (np.bool_, False)},
    "text": {"input_ids": (np.int64, True), "attention_mask": (np.bool_, True), "token_type_ids": (np.int64, True)},
    "patch": {"pixels": (np.float32, False)},
    "hybrid": {"pixels": (np.float32, False)},
}


def input_layout(spec: dict, prefix: str = "") -> list:
    """``[(name, dtype, per-row shape with None for the length, length axis name)]`` of the
    arrays an embedder built from ``spec`` reads, in a fixed order.

    Raises
    ------
    ValueError for an embedder kind this module does not know (a user-registered one):
    pass ``example=`` to :func:`export_onnx` instead.
    """
    kind = spec.get("kind")
    if kind == "mixed":
        layout = []
        for key, name, column in spec["segments"]:
            layout += input_layout(spec["embedders"][name], f"{key}{SEPARATOR}")
            if column is not None:
                layout.append((f"{key}{SEPARATOR}present", np.bool_, (), None))
        return layout
    if kind == "sentence":  # the words, and the pretrained ids over their mask with a length of their own
        return input_layout({"kind": "text"}, prefix) + [(f"{prefix}stem_rows", np.int64, (2, None), f"{prefix}stem_length")]
    if kind not in _ARRAYS:
        raise ValueError(f"no ONNX input layout for embedder kind {kind!r}; pass example=X[:2] to export_onnx")
    shapes = {
        "tabular": {"cat_ids": (len(spec.get("cardinalities", ())),), "num_values": (spec.get("n_numeric", 0),)},
        "patch": {"pixels": (spec.get("n_channels", 3), *spec.get("image_size", (0, 0)))},
        "hybrid": {"pixels": (spec.get("n_channels", 3), *spec.get("image_size", (0, 0)))},
    }.get(kind, {})
    shapes.setdefault("num_missing", shapes.get("num_values"))
    unread = set()
    if kind == "tabular":  # an array of width 0 is no graph input: the exporter drops it, so onnx_inputs must too
        unread = {"cat_ids"} if not spec.get("cardinalities") else set()
        unread |= {"num_values", "num_missing"} if not spec.get("n_numeric", 0) else set()
    layout = []
    for array, (dtype, has_length) in _ARRAYS[kind].items():
        if array in unread:
            continue
        shape = (None,) if has_length else shapes[array]
        layout.append((prefix + array, dtype, shape, f"{prefix}length" if has_length else None))
    return layout


def _example(layout, spec_vocab: int, rows: int = 3, length: int = 7) -> dict:
    """Arrays of ``layout`` with some padding and some absent segments, so the traced graph
    keeps the mask paths (an all-real batch would let the encoder skip them)."""
    batch = {}
    for name, dtype, shape, _ in layout:
        shape = tuple(length if s is None else s for s in shape)
        array = np.zeros((rows, *shape), dtype=dtype)
        if name.endswith("input_ids"):
            array[:] = min(5, spec_vocab - 1)
        elif name.endswith("stem_rows"):
            array[:, 0], array[:, 1], array[-1, :, length - 2 :] = 5, 1, 0
        elif name.endswith(("attention_mask", "present")):
            array[:] = True
            array[-1, ...] = False if name.endswith("present") else array[-1, ...]
            if name.endswith("attention_mask"):
                array[-1, length - 2 :] = False
        batch[name] = array
    return batch


def _vocab(spec) -> int:
    if spec.get("kind") == "text":
        return int(spec["vocab_size"])
    sizes = [_vocab(sub) for sub in spec.get("embedders", {}).values()]
    return min(sizes) if sizes else 6


class _Exported(nn.Module):
    """``forward(*arrays)``: the module on the named arrays, and the estimator's output."""

    def __init__(self, module, names, output, mean=None, scale=None, pooling="cls", multilabel=False):
        super().__init__()
        self.module, self.names, self.output, self.pooling = module, list(names), output, pooling
        self.multilabel = multilabel
        if mean is not None:  # float64, as predict: in float32, a target near 1.7e9 came back in steps of 128
            self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float64))
            self.register_buffer("scale", torch.as_tensor(np.asarray(scale), dtype=torch.float64))

    def forward(self, *arrays):
        batch = dict(zip(self.names, arrays))
        if self.output == "embeddings":
            hidden, mask = self.module.encode(**batch)
            parts = [hidden[:, 0]] if self.pooling != "mean" else []
            if self.pooling != "cls":
                parts.append(mean_pool(hidden, mask))
            return torch.cat(parts, dim=1)
        out = self.module(**batch).float()
        if self.output == "predictions":
            return out.double() * self.scale + self.mean
        proba = torch.sigmoid(out) if self.multilabel else torch.softmax(out, dim=-1)
        if proba.dim() == 3 and "attention_mask" in batch:  # a tagger's (B, T, K): 0 at padding, as its predict_subword_proba
            proba = proba * batch["attention_mask"][:, :, None].to(proba.dtype)
        return proba


def _output(estimator) -> tuple[str, dict]:
    """The estimator's output name and what the wrapper needs, read from its fitted state."""
    if hasattr(estimator, "target_scale_"):
        criterion = getattr(estimator, "criterion_", None)
        if isinstance(criterion, torch.nn.PoissonNLLLoss) and criterion.log_input:  # its predict is exp(output)
            raise ValueError("export does not take a PoissonNLLLoss(log_input=True) regressor: its graph would give log-rates")
        return "predictions", {"mean": estimator.target_mean_, "scale": estimator.target_scale_}
    if hasattr(estimator, "objective_"):
        return "embeddings", {"pooling": estimator.pooling}
    # a multi-label classifier's probabilities are one sigmoid per label
    return "probabilities", {"multilabel": True} if getattr(estimator, "multilabel_", False) else {}


def _layout(estimator, example):
    try:
        return input_layout(estimator.tokenizer_.embedder_spec())
    except ValueError:
        if example is None:
            raise
        tokens = estimator.tokenize(example)
        return [(name, array.dtype.type, array.shape[1:], None) for name, array in tokens.items()]


def onnx_inputs(estimator, X) -> dict:
    """The tokens of ``X`` an exported graph reads: ``tokenizer_.transform(X)`` restricted to its inputs."""
    names = [name for name, *_ in _layout(estimator, X)]
    tokens = estimator.tokenize(X)
    return {name: np.ascontiguousarray(tokens[name]) for name in names}


def export_onnx(estimator, path, *, opset: int = 17, example=None):
    """Write ``estimator.module_`` as an ONNX model with dynamic batch and text-length axes.

    Parameters
    ----------
    estimator : a fitted tabformer estimator
    path : str or os.PathLike
        The ``.onnx`` file to write.
    opset : int >= 14, default=17
        The ONNX opset; attention (``scaled_dot_product_attention``) needs 14 or later.
    example : raw input, optional
        A few rows to trace with; only read for a tokenizer whose embedder kind this
        module does not know (a user-registered one), and then they should include
        padding (texts of different lengths) where the tokens have any (a mask array with
        every position real is warned about). Otherwise it is
        ignored: the trace runs on placeholder tokens of the fitted shapes, with padding.

    Returns
    -------
    str : ``path``

    Notes
    -----
    Needs ``onnx`` (``pip install onnx onnxruntime``, or the clone's ``[onnx]`` extra); run the model with ``onnxruntime``.
    """
    if not isinstance(opset, int) or opset < MIN_OPSET:  # else a 160-line TorchScript dump, then torch's advice of 12 or 13
        raise ValueError(
            f"opset={opset!r}: the encoder's attention (scaled_dot_product_attention) needs opset {MIN_OPSET} or later"
        )
    try:
        import onnx
    except ImportError:
        raise ImportError("export_onnx needs the onnx package: pip install onnx onnxruntime") from None
    if not estimator.__sklearn_is_fitted__():
        raise ValueError(f"This {type(estimator).__name__} is not fitted yet: export_onnx exports a fitted module")
    spec = estimator.tokenizer_.embedder_spec()
    try:
        # A known kind traces on placeholders with padding, example= or not: traced on rows without
        # any (one text, texts of one length), the graph dropped the attention mask and was wrong on padded rows.
        layout = input_layout(spec)
        batch = _example(layout, _vocab(spec))
    except ValueError:
        layout = _layout(estimator, example)
        tokens = estimator.tokenize(example)
        batch = {name: np.ascontiguousarray(tokens[name]) for name, *_ in layout}
        unpadded = [name for name, array in batch.items() if "mask" in name and array.size and array.all()]
        if unpadded:  # the tracer records one path: traced without padding, the graph may drop the masking
            warnings.warn(
                f"export_onnx traces on example=, whose {unpadded} mark every position real (no padding): the graph "
                "may ignore the mask and be wrong on padded rows. Pass rows of different lengths",
                UserWarning,
                stacklevel=2,
            )
    names = [name for name, *_ in layout]
    output, extra = _output(estimator)
    precision = getattr(estimator, "_precision", "fp32")  # what predict runs in now (the setting, for this device)
    if precision in ("bf16", "fp16"):  # tracing under autocast puts half-precision casts in the graph, which ORT's CPU lacks
        method = {"probabilities": "predict_proba", "predictions": "predict", "embeddings": "transform"}[output]
        warnings.warn(
            f"export_onnx: this {type(estimator).__name__} predicts under precision={precision!r} autocast, the graph "
            f"computes in float32: its {output} differ from {method}'s by about 1e-3 ({precision} rounding), not within "
            f"1e-4. They match {method} after set_params(precision='fp32')",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    # compile=True: skorch wraps module_ in torch.compile's OptimizedModule, which the tracer refuses;
    # the module it wraps holds the same weights.
    module = getattr(estimator.module_, "_orig_mod", estimator.module_)
    wrapper = _Exported(copy.deepcopy(module).cpu().eval(), names, output, **extra).eval()
    dynamic = {name: {0: BATCH, **({1 + shape.index(None): length} if length else {})} for name, _, shape, length in layout}
    if output == "probabilities" and hasattr(estimator, "default_tag_"):
        dynamic[output] = {0: BATCH, 1: "length"}
    else:
        dynamic[output] = {0: BATCH}
    arguments = dict(input_names=names, output_names=[output], dynamic_axes=dynamic, opset_version=opset)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        arguments["dynamo"] = False
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation notice and tracer warnings
        torch.onnx.export(wrapper, tuple(torch.from_numpy(batch[name]) for name in names), os.fspath(path), **arguments)
    model = onnx.load(os.fspath(path))
    onnx.checker.check_model(model)
    metadata = {
        "tabformer_version": __version__,
        "estimator": f"{type(estimator).__module__}.{type(estimator).__qualname__}",
        "inputs": json.dumps(
            [[name, np.dtype(dtype).name, [s if s is not None else "length" for s in shape]] for name, dtype, shape, _ in layout]
        ),
        "output": output,
    }
    classes = getattr(estimator, "classes_", None) if output == "probabilities" else None
    if classes is not None:
        metadata["classes"] = json.dumps([c.item() if hasattr(c, "item") else c for c in classes], default=str)
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, os.fspath(path))
    return os.fspath(path)
