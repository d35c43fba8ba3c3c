"""What a :class:`~tabformer._checkpoint.TrainingCheckpoint` compares and restores besides the training state: the fit's
configuration and data (a checkpoint of another fit is refused), its train/validation split, and the generators a
pretraining dataset draws its masks or views from."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Subset

from .nn.ensemble import FOLD

#: Parameters a resumed fit may change: they do not change what is trained.
FREE_PARAMS = frozenset({"verbose", "device", "warm_start", "memory_limit"})
#: resolved settings that follow a free parameter (the fused optimizer step follows the device), or that the split check
#: compares in its own words (an ensemble's fold seed: its folds are part of the split hash)
FREE_RESOLVED = frozenset({"optimizer__fused", "fold_seed"})


def _describe(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_describe(item)}" for key, item in sorted(value.items(), key=str)) + "}"
    if isinstance(value, torch.nn.Module):  # by its weights: by type, other pretrained weights resumed the first's fit
        return f"{type(value).__qualname__}(weights sha256 {_data_hash(dict(value.state_dict()), None)['sha256'][:16]})"
    if isinstance(value, type) or callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    return type(value).__qualname__


def _config(net) -> dict:
    params = {key: value for key, value in net.get_params(deep=False).items() if not key.startswith("callbacks")}
    config = {key: _describe(value) for key, value in params.items() if key not in FREE_PARAMS}
    encoder = params.get("encoder")
    if isinstance(encoder, (str, os.PathLike)) and os.path.exists(encoder):
        config["encoder"] += f" (contents sha256 {_path_digest(encoder)})"
    for key, value in (getattr(net, "resolved_params_", None) or {}).items():
        if key not in FREE_RESOLVED:
            config[f"resolved:{key}"] = _describe(value)
    return config


def _hash_arrays(hasher, name, value, shapes):
    if isinstance(value, dict):
        for key in sorted(value):
            _hash_arrays(hasher, f"{name}.{key}", value[key], shapes)
        return
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = (value.view(torch.int16) if value.dtype == torch.bfloat16 else value).numpy()  # numpy has no bfloat16
    if isinstance(value, np.ndarray) and value.dtype != object:
        array = np.ascontiguousarray(value)
        hasher.update(f"{name}:{array.dtype}:{array.shape}".encode())
        hasher.update(array.tobytes())
        shapes[name] = list(array.shape)
    elif value is not None:
        # A dataset (streamed, custom, a pretrainer's): type, length and the arrays it holds (by type and length alone,
        # a pretrainer's other rows of the same length resumed the first fit's checkpoint, or returned its model).
        length = len(value) if hasattr(value, "__len__") else None
        hasher.update(f"{name}:{type(value).__qualname__}:{length}".encode())
        shapes[name] = [length]
        for key, item in sorted(getattr(value, "__dict__", {}).items()):
            if _is_arrays(item):
                _hash_arrays(hasher, f"{name}.{key}", item, shapes)


def _is_arrays(value) -> bool:
    """An array or tensor, or a dict of them (a tokenizer's output)."""
    if isinstance(value, dict):
        return bool(value) and all(_is_arrays(item) for item in value.values())
    return isinstance(value, torch.Tensor) or (isinstance(value, np.ndarray) and value.dtype != object)


def _data_hash(X, y) -> dict:
    hasher, shapes = hashlib.sha256(), {}
    _hash_arrays(hasher, "X", X, shapes)
    _hash_arrays(hasher, "y", None if y is None else np.asarray(y) if not isinstance(y, torch.Tensor) else y, shapes)
    return {"sha256": hasher.hexdigest(), "shapes": shapes}


def _data_rngs(X) -> list:
    """``(name, generator)`` of the generators a dataset draws per batch (a pretraining objective's masks or views).
    Rebuilt from the seed at every fit, so unsaved, the resumed epochs drew the first epochs' masks again."""
    items = [] if isinstance(X, dict) else sorted(getattr(X, "__dict__", {}).items())
    return [(name, value) for name, value in items if isinstance(value, (torch.Generator, np.random.Generator))]


def _collect_data_rngs(rngs, tensors: dict) -> dict:
    """The state of each generator: a torch one's into ``tensors``, a NumPy one's returned (JSON)."""
    torch_rngs = {name: rng for name, rng in rngs if isinstance(rng, torch.Generator)}
    tensors.update({f"data_rng.{name}": rng.get_state() for name, rng in torch_rngs.items()})
    return {name: rng.bit_generator.state for name, rng in rngs if name not in torch_rngs}


def _restore_data_rngs(rngs, meta: dict, tensors: dict) -> None:
    """Put the dataset's generators where they were at the checkpoint (a checkpoint without them leaves them)."""
    states = meta.get("data_rngs") or {}
    for name, rng in rngs:
        if isinstance(rng, torch.Generator) and f"data_rng.{name}" in tensors:
            rng.set_state(tensors[f"data_rng.{name}"])
        elif isinstance(rng, np.random.Generator) and name in states:
            rng.bit_generator.state = states[name]


def _split_hash(dataset):
    if dataset is None:
        return None
    indices = np.asarray(dataset.indices) if isinstance(dataset, Subset) else np.arange(len(dataset))
    hasher = hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes())
    data = getattr(dataset, "X", None)
    folds = data.get(FOLD) if isinstance(data, dict) else None
    if folds is not None:  # an ensemble's members train and validate on folds: those are the split
        hasher.update(np.ascontiguousarray(np.asarray(folds), dtype=np.int64).tobytes())
    return hasher.hexdigest()


def _path_digest(path) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (names and bytes). A warm start's folder by its path alone:
    fine-tuning from weights re-saved there resumed (or returned) the model the old weights had started."""
    hasher, root = hashlib.sha256(), Path(path)
    for file in sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file()):
        hasher.update(file.relative_to(root).as_posix().encode())
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 24), b""):
                hasher.update(chunk)
    return hasher.hexdigest()[:16]
