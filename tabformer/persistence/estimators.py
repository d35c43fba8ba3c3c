"""Saving a fitted estimator as a folder, and loading it back fitted, without pickle.

``config.json`` (``"object": "estimator"``) holds the estimator's class and every
parameter, its fitted attributes (``classes_``/``label_encoder_``, ``target_mean_``,
``feature_names_in_``...), the tokenizer's state, the columns with their kinds and dtypes,
the module's architecture, and a summary of the training history; ``model.safetensors``
holds ``module_``'s tensors, ``history.json`` skorch's history, and the tokenizer writes
its own files. An ``encoder`` parameter that is a module (the warm start) is saved as a
folder of its own, ``encoder/``, so ``clone(loaded).fit`` warm-starts as the original did.

Loading builds the estimator from its parameters, sets the fitted attributes back, lets
the estimator build its module as ``fit`` does (``initialize``) and loads the tensors
strictly. The optimizer's moments are not saved (as in Hugging Face's ``save_pretrained``),
only its parameter groups' settings (learning rates, the schedule's ``initial_lr``):
``partial_fit`` on a loaded model continues the schedule with fresh moments.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import torch
from sklearn.exceptions import NotFittedError
from skorch import NeuralNet
from skorch.history import History

from .._strict_json import dumps as strict_dumps
from .._strict_json import untag_nonfinite
from .._warnings import user_stacklevel
from ..nn.embedders import build_embedder
from ..nn.encoder import TransformerEncoder
from ..nn.models import PretrainedEncoder
from ..nn.positions import SinusoidalPositions, saved_encoder_config
from ..tokenizers import BaseTokenizer
from ._codec import decode, encode, fitted_attributes, set_fitted
from ._files import Reader, Writer
from ._format import CONFIG_FILE, WEIGHTS_FILE, PersistenceError, header, qualified_name, resolve
from .encoders import encoder_from_folder, encoder_to_folder, load_weights, offline_spec
from .tokenizers import tokenizer_from_json, tokenizer_to_json

__all__ = ["save_estimator", "load_estimator", "describe_columns"]

HISTORY_FILE = "history.json"
ENCODER_FOLDER = "encoder/"
#: skorch's run-time state: rebuilt by ``initialize`` or saved on its own (history, weights)
_RUNTIME = frozenset(
    {
        "accelerator_",  # this run's process group (distributed=...); a loaded model has none
        "history_",
        "initialized_",
        "virtual_params_",
        "init_context_",
        "callbacks_",
        "prefixes_",
        "cuda_dependent_attributes_",
        "grad_scaler_",
    }
)


#: module classes that moved since a folder may have been saved: old name -> new name
_MOVED = {"tabformer.nn.models:LateFusionModel": "tabformer.nn.late_fusion:LateFusionModel"}


# ----------------------------------------------------------------------------- saving
def _hooks(writer: Writer):
    def modules(value, where):
        if isinstance(value, (PretrainedEncoder, TransformerEncoder)):
            if writer.name(ENCODER_FOLDER) in {name.split("/")[0] + "/" for name in writer.files}:
                raise PersistenceError(f"{where}: only one encoder module can be saved per estimator")
            encoder_to_folder(value, writer.nested(ENCODER_FOLDER))
            return {"__type__": "encoder_folder", "folder": ENCODER_FOLDER}
        if isinstance(value, BaseTokenizer):
            return tokenizer_to_json(value, writer, where, fitted=False)
        return None

    return (modules,)


def describe_columns(estimator) -> list:
    """``[{"name", "kind", "dtype"}]`` of the input columns seen in fit (kinds as the tokenizer read them)."""
    tokenizer = estimator.tokenizer_
    dtypes = getattr(estimator, "feature_dtypes_in_", None) or {}
    kinds = getattr(tokenizer, "column_kinds_", None)
    if kinds is None and hasattr(tokenizer, "categorical_columns_"):
        kinds = {
            **{c: "numeric" for c in tokenizer.numeric_columns_},
            **{c: "categorical" for c in tokenizer.categorical_columns_},
            **dict.fromkeys(getattr(tokenizer, "datetime_parts_", None) or {}, "datetime"),  # they read as table tokens
        }
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        count = getattr(estimator, "n_features_in_", None) or 1
        names = list(kinds) if kinds is not None and len(kinds) == count else [None] * count
    kinds = kinds or {}
    return [
        {"name": None if n is None else str(n), "kind": kinds.get(n, tokenizer.kind), "dtype": dtypes.get(str(n))} for n in names
    ]


def _metrics(history) -> dict:
    rows = history.to_list() if history is not None else []
    if not rows:
        return {"epochs": 0}
    out = {"epochs": len(rows)}
    for key in ("train_loss", "valid_loss", "valid_acc"):
        if isinstance(rows[-1].get(key), (int, float)):  # a NaN or infinite one: null (config.json is strict JSON)
            out[key] = float(rows[-1][key]) if math.isfinite(rows[-1][key]) else None
    losses = [
        (float(row["valid_loss"]), row["epoch"])
        for row in rows
        if isinstance(row.get("valid_loss"), (int, float)) and math.isfinite(row["valid_loss"])
    ]
    if losses:
        out["best_valid_loss"], out["best_epoch"] = min(losses)
    return out


def _plain(value):
    """A history value JSON has no type for: a number or an array (a per-class metric) as Python's; else its text."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):  # .item() of a 2-element array raised "can only convert an array of size 1"
        return value.tolist()
    return value.item() if hasattr(value, "item") else str(value)


def save_estimator(estimator, path) -> None:
    """Write a fitted estimator to the folder ``path`` (created if needed; its files are overwritten).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    PersistenceError
        A parameter or fitted attribute cannot be written without pickle (a lambda, a
        function outside tabformer, an object of a class defined in a function...); the
        message names it. Nothing is written then. Or a setting the module is built from
        (``encoder__*``, ``head__*``, ``fusion``) changed since the fit that built it.
    """
    name = type(estimator).__name__
    if not estimator.__sklearn_is_fitted__():
        raise NotFittedError(f"This {name} is not fitted yet: save writes a fitted model; call fit first")
    stale = estimator.stale_module_settings() if hasattr(estimator, "stale_module_settings") else {}
    if stale:  # load builds the module from the saved settings: the weights would not fit it
        changed = ", ".join(f"{key}={now!r} (the module was built with {built!r})" for key, (built, now) in stale.items())
        raise PersistenceError(
            f"{name}: {changed} {'was' if len(stale) == 1 else 'were'} set after fit, and the fitted module is only "
            "rebuilt by the next fit, so the "
            "saved folder could not be loaded. Fit again before saving, or set it back"
        )
    writer = Writer()
    hooks = _hooks(writer)
    config = header("estimator")
    params = encode(estimator.get_params(deep=False), name, writer, hooks)
    config["estimator"] = {"class": qualified_name(type(estimator), name), "params": params}
    output = getattr(estimator, "_sklearn_output_config", None)  # set_output(transform=...): no parameter; pickle keeps it
    if output:
        config["estimator"]["output"] = dict(output)
    auto = getattr(estimator, "_auto_validation_fraction", None)  # a small table's holdout, for set_params("auto") later
    if auto is not None:
        config["estimator"]["auto_validation_fraction"] = float(auto)
    skipped = _RUNTIME | {f"{part}_" for part in estimator._modules + estimator._criteria + estimator._optimizers}
    fitted = {key: value for key, value in fitted_attributes(estimator).items() if key not in skipped}
    tokenizer = fitted.pop("tokenizer_")
    config["fitted"] = encode(fitted, name, writer, hooks)
    config["tokenizer"] = tokenizer_to_json(tokenizer, writer, "tokenizer_")
    config["columns"] = describe_columns(estimator)
    module = estimator.module_
    encoders = list(module.encoders) if hasattr(module, "encoders") else [module.encoder]
    config["module"] = {
        "class": qualified_name(type(module), "module_"),
        "embedder": encode(tokenizer.embedder_spec(), "embedder", writer),
        "encoders": [encode(dict(encoder.config), "encoder", writer) for encoder in encoders],
        "n_parameters": sum(p.numel() for p in module.parameters()),
        "trained_on": str(next(module.parameters()).device),
        # a Freezer (or set_params(freeze_encoder=...)) froze them during the fit; partial_fit keeps them so
        "frozen": [name for name, parameter in module.named_parameters() if not parameter.requires_grad],
    }
    config["metrics"] = _metrics(getattr(estimator, "history_", None))
    groups = [{k: v for k, v in group.items() if k != "params"} for group in estimator.optimizer_.param_groups]
    config["optimizer_param_groups"] = encode(groups, "optimizer_.param_groups", writer)
    writer.tensors(WEIGHTS_FILE, module.state_dict())
    # strict JSON: a NaN or infinite value (a diverged loss, a metric of one class) is tagged, as in config.json
    writer.text(HISTORY_FILE, strict_dumps(estimator.history_.to_list(), default=_plain) + "\n")
    writer.finish_arrays()
    config["files"] = writer.listed()
    writer.json(CONFIG_FILE, config)
    writer.commit(path)


# ----------------------------------------------------------------------------- loading
def _tokenizers(tokenizer):
    yield tokenizer
    for _, sub, _ in getattr(tokenizer, "transformers_", None) or []:
        yield from _tokenizers(sub)


@contextlib.contextmanager
def _stem_weights_not_read(tokenizer):
    """Hybrid image tokenizers describe their stem with its weights file; model.safetensors
    holds those tensors, so the file (and the package shipping it) is not needed to load."""
    changed = [t for t in _tokenizers(tokenizer) if getattr(t, "backbone_weights", None) is not None]
    saved = [t.backbone_weights for t in changed]
    for t in changed:
        t.backbone_weights = None
    try:
        yield
    finally:
        for t, weights in zip(changed, saved):
            t.backbone_weights = weights


@contextlib.contextmanager
def _text_stem_not_read(estimator):
    """A text column's frozen MiniLM stem (``text_stem_weights_``) is copied in when the module
    is built; model.safetensors holds those tensors, so the folder is not read to load."""
    saved = getattr(estimator, "text_stem_weights_", None)
    estimator.text_stem_weights_ = None
    try:
        yield
    finally:
        estimator.text_stem_weights_ = saved


@contextlib.contextmanager
def _warm_start_stand_in(estimator, architecture):
    """A warm-started estimator builds its module from its ``encoder`` (or the default text
    weights, ``pretrained_weights_``); while it is rebuilt, a stand-in of the saved
    architecture takes that place, so the original (a path, perhaps absent here) is never
    read. Its weights come from model.safetensors right after."""
    original = estimator.encoder
    if original is None and not getattr(estimator, "pretrained_weights_", None):  # a fresh encoder: built from the config
        yield
        return
    encoder = TransformerEncoder(**saved_encoder_config(architecture["encoders"][0]))
    embedder = build_embedder(offline_spec(architecture["embedder"]), encoder.embedding_size)
    estimator.encoder = PretrainedEncoder(estimator.tokenizer_, embedder, encoder)
    try:
        yield
    finally:
        estimator.encoder = original


def _restore_positions_scale(module, architecture) -> None:
    """A fresh encoder is rebuilt from the estimator's parameters, not from the saved config, and
    the sinusoidal table's scale is a setting no saved tensor holds: set it back to the config's
    (1.0, the raw table, for a model saved before ``positions_scale`` existed)."""
    encoders = list(module.encoders) if hasattr(module, "encoders") else [module.encoder]
    for encoder, saved in zip(encoders, architecture["encoders"]):
        saved = saved_encoder_config(saved)
        if isinstance(getattr(encoder, "positions", None), SinusoidalPositions) and "positions_scale" in saved:
            encoder.positions.scale = encoder.config["positions_scale"] = saved["positions_scale"]


def _device(saved, requested):
    if requested is not None:
        return requested
    if saved == "auto":  # resolved on this machine, as at fit
        return saved
    if torch.device(saved).type == "cuda" and not torch.cuda.is_available():
        message = f"the model was saved with device={saved!r}, but CUDA is not available: loading it on the CPU"
        warnings.warn(message, stacklevel=user_stacklevel())
        return "cpu"
    return saved


def load_estimator(reader: Reader, config: dict, device=None):
    """The fitted estimator a folder holds (see :func:`tabformer.load`)."""
    cls = resolve(config["estimator"]["class"], "config.json: estimator", reader.trusted)
    if not issubclass(cls, NeuralNet):
        raise PersistenceError(f"{reader.path(CONFIG_FILE)}: {cls.__name__} is not a tabformer estimator")
    name = cls.__name__
    hooks = {
        "encoder_folder": lambda obj, where: _nested_encoder(reader, obj["folder"]),
        "tokenizer": lambda obj, where: tokenizer_from_json(obj, reader, where),
    }
    params = decode(config["estimator"]["params"], name, reader, hooks)
    torch_load = params.get("torch_load_kwargs")
    if torch_load is not None and not (isinstance(torch_load, dict) and torch_load.get("weights_only", True) is True):
        # skorch passes these to torch.load (load_params, LoadInitState): weights_only off unpickles.
        raise PersistenceError(
            f"{reader.path(CONFIG_FILE)}: torch_load_kwargs={torch_load!r} would let skorch unpickle files; a saved "
            "model may only leave it unset or keep weights_only=True (set it on the loaded model if you need it)"
        )
    params["device"] = _device(params.get("device", "cpu"), device)
    estimator = cls(**params)
    if isinstance(config["estimator"].get("auto_validation_fraction"), float):
        estimator._auto_validation_fraction = config["estimator"]["auto_validation_fraction"]
    if config["estimator"].get("output"):  # a pretrainer's transform answered a DataFrame before the save: it still does
        estimator.set_output(**config["estimator"]["output"])
    set_fitted(estimator, decode(config["fitted"], name, reader, hooks), "fitted", reader)
    estimator.tokenizer_ = tokenizer_from_json(config["tokenizer"], reader, "tokenizer_")
    architecture = decode(config["module"], "module", reader)
    with (
        torch.random.fork_rng(devices=[]),
        _stem_weights_not_read(estimator.tokenizer_),
        _text_stem_not_read(estimator),
        _warm_start_stand_in(estimator, architecture),
    ):
        estimator.initialize()
    saved_class = _MOVED.get(architecture["class"], architecture["class"])
    if qualified_name(type(estimator.module_), "module_") != saved_class:
        raise PersistenceError(
            f"{reader.folder}: the estimator built a {type(estimator.module_).__name__}, config.json a {architecture['class']}"
        )
    _restore_positions_scale(estimator.module_, architecture)
    load_weights(estimator.module_, reader)
    _restore_frozen(estimator.module_, architecture.get("frozen"), reader)
    estimator.history_ = History(untag_nonfinite(reader.json(HISTORY_FILE)))  # older folders' bare NaN reads too
    if hasattr(type(estimator), "_accelerator"):  # never saved: this run's, as after unpickling (docs/scale.md's guard reads it)
        estimator.accelerator_ = None
    groups = decode(config.get("optimizer_param_groups", []), "optimizer_.param_groups", reader)
    if len(groups) == len(estimator.optimizer_.param_groups):  # the learning-rate schedule's state
        for group, saved in zip(estimator.optimizer_.param_groups, groups):
            group.update(saved)
    return estimator


def _restore_frozen(module, frozen, reader: Reader) -> None:
    """Parameters frozen when saved (``requires_grad`` off) are frozen again; folders saved before this keep the module's."""
    if frozen is None:
        return
    parameters = dict(module.named_parameters())
    names = isinstance(frozen, list) and all(isinstance(name, str) for name in frozen)
    unknown = [name for name in frozen if name not in parameters] if names else [frozen]
    if unknown:
        raise PersistenceError(f"{reader.path(CONFIG_FILE)}: module.frozen names {unknown[:3]!r}, not parameters of the module")
    for name, parameter in parameters.items():
        parameter.requires_grad_(name not in frozen)


def _nested_encoder(reader: Reader, folder: str):
    nested = reader.nested(folder)
    config, kind = nested.open()
    with torch.random.fork_rng(devices=[]):
        return encoder_from_folder(nested, config, kind)
