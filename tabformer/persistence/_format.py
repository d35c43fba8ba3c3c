"""The folder format's building blocks: file names, version header, errors, and the names
of classes and functions (no pickle anywhere; values are encoded in ``_codec.py``, files
written and read in ``_files.py``).

Classes and functions are written as ``"module:qualname"`` and, on load, imported only
from :data:`ALLOWED_MODULES` (or names the caller passes as ``trusted``): a config cannot
make ``load`` import, let alone call, anything else.
"""

from __future__ import annotations

import importlib
import platform
import re
from pathlib import Path

import numpy as np
import sklearn
import skorch
import torch

from .._version import __version__

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "CONFIG_FILE",
    "WEIGHTS_FILE",
    "ARRAYS_FILE",
    "ALLOWED_MODULES",
    "REFUSED_CLASSES",
    "PersistenceError",
    "MissingFileError",
    "UntrustedTypeError",
    "header",
    "check_header",
    "newer_tabformer",
    "qualified_name",
    "resolve",
]

FORMAT = "tabformer"
#: the folder layout version this code writes; it reads this one and every older one
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
ARRAYS_FILE = "arrays.safetensors"

#: modules whose classes (and, for tabformer, functions) a saved config may name
ALLOWED_MODULES = ("tabformer", "torch.nn", "torch.optim", "torch.utils.data", "skorch", "sklearn.preprocessing")
#: functions outside tabformer a config may name: skorch callbacks' defaults (their sink, and
#: ``EpochScoring``/``BatchScoring``'s ``target_extractor``), which read no file and run no code of the folder's;
#: ``skorch.utils.noop`` is the sink of ``Checkpoint`` and ``TrainEndCheckpoint`` (which a load still refuses
#: unless trusted, see :data:`REFUSED_CLASSES`) and ``ParamMapper``'s default ``fn``. ``Freezer``/``Unfreezer``'s
#: ``fn`` only set a parameter's ``requires_grad``; the ``torch.nn.init`` functions below (an ``Initializer``'s
#: ``fn``) only fill the tensor they are given with numbers, using their defaults (a ``partial`` is never saved)
ALLOWED_FUNCTIONS = frozenset(
    {
        "builtins:print",
        "skorch.utils:to_numpy",
        "skorch.utils:noop",
        "skorch.utils:freeze_parameter",
        "skorch.utils:unfreeze_parameter",
        *(
            f"torch.nn.init:{name}"
            for name in (
                "uniform_",
                "normal_",
                "trunc_normal_",
                "xavier_uniform_",
                "xavier_normal_",
                "kaiming_uniform_",
                "kaiming_normal_",
                "orthogonal_",
                "zeros_",
                "ones_",
            )
        ),
    }
)
#: classes of the allowed modules that a config still may not name: skorch's checkpoint
#: callbacks read files with ``torch.load`` (a pickle, with the net's ``torch_load_kwargs``)
#: from wherever the config points, as a fit begins or ends; tabformer's ``TrainingCheckpoint``
#: writes into its ``dirname``, deletes older ``epoch-*`` folders there and resumes from what it
#: finds. skorch.hf and skorch.llm load Hugging Face tokenizers and models by name (files or
#: downloads); skorch.hf also uploads to the Hub. A folder naming them loads only when trusted.
REFUSED_CLASSES = frozenset(
    {
        "skorch.callbacks.training:Checkpoint",
        "skorch.callbacks.training:TrainEndCheckpoint",
        "skorch.callbacks.training:LoadInitState",
        "tabformer._checkpoint:TrainingCheckpoint",
    }
)
REFUSED_MODULES = ("skorch.hf", "skorch.llm")


class PersistenceError(ValueError):
    """A model cannot be saved as it is, or a saved folder cannot be loaded (says which file and why)."""


class MissingFileError(PersistenceError, FileNotFoundError):
    """A saved folder lacks a file its config.json lists."""


class UntrustedTypeError(PersistenceError):
    """A saved config names a class or function outside the allowed modules; it was not imported."""


# ----------------------------------------------------------------------------- header
def _versions() -> dict:
    return {
        "tabformer": __version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "skorch": skorch.__version__,
        "python": platform.python_version(),
    }


def header(kind: str) -> dict:
    """The first keys of every config.json: format, version, what it holds, library versions."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "object": kind, "versions": _versions()}


def check_header(config, where) -> str:
    """The ``object`` a config holds, after checking that tabformer wrote it in a version it reads."""
    if isinstance(config, dict) and config.get("format") is None and ("model_type" in config or "architectures" in config):
        folder = str(Path(where).parent)
        raise PersistenceError(
            f"{where} is a Hugging Face model's config (model_type {config.get('model_type')!r}), not a folder tabformer "
            f"saved. Fine-tune it with "
            f"TabFormerClassifier.from_pretrained({folder!r}) or TabFormerClassifier(encoder={folder!r}), or read its "
            f"encoder with tabformer.hub.load_pretrained({folder!r})"
        )
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise PersistenceError(f'{where} is not a tabformer config.json (no "format": "tabformer")')
    version = config.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise PersistenceError(f"{where} has an invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        written_by = config.get("versions", {}).get("tabformer", "a newer tabformer")
        raise PersistenceError(
            f"{where} has format version {version}, written by tabformer {written_by}; this tabformer reads "
            f"versions up to {FORMAT_VERSION}: upgrade tabformer to load it"
        )
    return config.get("object")


def newer_tabformer(config) -> str | None:
    """The tabformer version a config records when it is newer than this one (its folder may use what this lacks).

    Parameters
    ----------
    config : dict
        A folder's config.json.

    Returns
    -------
    str or None
    """
    saved = (config.get("versions") or {}).get("tabformer") if isinstance(config, dict) else None
    if not isinstance(saved, str):
        return None
    return saved if _release(saved) > _release(__version__) else None


def _release(version: str) -> tuple:
    """``"0.3.0rc1"`` -> ``(0, 3, 0)``: the release numbers, compared as numbers."""
    match = re.match(r"\d+(\.\d+)*", version.strip().lstrip("v"))
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


# ----------------------------------------------------------------------------- names
def _allowed_module(module: str) -> bool:
    return any(module == allowed or module.startswith(allowed + ".") for allowed in ALLOWED_MODULES)


def qualified_name(obj, where: str) -> str:
    """``"module:qualname"`` of a class or function, checked to import back to ``obj``."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise PersistenceError(
            f"{where} = {obj!r} cannot be saved: a {type(obj).__name__} defined inside a function (or a lambda) "
            "cannot be named; define it at module level"
        )
    try:
        found = _walk(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        found = None
    if found is not obj:
        raise PersistenceError(f"{where} = {obj!r} cannot be saved: {module}:{qualname} does not import back to it")
    return f"{module}:{qualname}"


def _walk(module, qualname: str):
    obj = module
    for part in qualname.split("."):
        if part.startswith("__"):
            raise AttributeError(part)
        obj = getattr(obj, part)
    return obj


def _spellings(name: str) -> set:
    module, _, qualname = name.partition(":")
    return {name, f"{module}.{qualname}"}


def resolve(name, where: str, trusted=(), kind: str = "class"):
    """The class (``kind="class"``) or callable named ``"module:qualname"``, imported only from
    the allowed modules or from ``trusted`` names.

    Raises
    ------
    UntrustedTypeError
        The name is outside both; nothing was imported.
    """
    if not isinstance(name, str) or name.count(":") != 1:
        raise PersistenceError(f"{where}: {name!r} is not a 'module:qualname' name")
    module, qualname = name.split(":")
    is_trusted = bool(_spellings(name) & set(trusted or ()))
    allowed = is_trusted or _allowed_module(module) or (kind != "class" and name in ALLOWED_FUNCTIONS)
    refused = name in REFUSED_CLASSES or any(module == m or module.startswith(m + ".") for m in REFUSED_MODULES)
    if refused and not is_trusted:
        raise UntrustedTypeError(
            f"{where} names {module}.{qualname}, which reads files (torch.load unpickles them), writes or deletes "
            f"them where the config points, or loads models by name when a fit starts or ends; it was not imported. "
            f"If you trust this folder, pass "
            f"trusted=[{module + '.' + qualname!r}]"
        )
    if not allowed:
        raise UntrustedTypeError(
            f"{where} names {module}.{qualname}, which is outside the modules a saved model may use "
            f"({', '.join(ALLOWED_MODULES)}); it was not imported. If you trust this folder, "
            f"pass trusted=[{module + '.' + qualname!r}] to load it"
        )
    try:
        obj = _walk(importlib.import_module(module), qualname)
    except (ImportError, AttributeError) as error:
        raise PersistenceError(f"{where} names {module}.{qualname}, which cannot be imported here ({error})") from None
    if getattr(obj, "__module__", None) != module or getattr(obj, "__qualname__", None) != qualname:
        raise UntrustedTypeError(f"{where}: {module}.{qualname} is an alias of something else; it was not used")
    if kind == "class" and not isinstance(obj, type):
        raise UntrustedTypeError(f"{where}: {module}.{qualname} is not a class")
    if kind != "class" and not (
        isinstance(obj, type) or is_trusted or name in ALLOWED_FUNCTIONS or module.startswith("tabformer")
    ):
        raise UntrustedTypeError(f"{where}: {module}.{qualname} is a function outside tabformer; it was not used")
    return obj
