"""Saving and loading models as folders: JSON, safetensors and the tokenizer's own files,
never pickle. The format is described in ``docs/persistence.md``.

- :func:`load`: any folder written by an estimator's ``save`` (a fitted estimator) or by
  ``PretrainedEncoder.save`` (a :class:`~tabformer.nn.PretrainedEncoder`);
- :func:`is_saved_folder`: whether a path is such a folder (and not, say, a BERT folder).
"""

from __future__ import annotations

import json
import os

import torch

from .._version import __version__
from ._files import Reader
from ._format import (
    ALLOWED_MODULES,
    CONFIG_FILE,
    FORMAT,
    FORMAT_VERSION,
    MissingFileError,
    PersistenceError,
    UntrustedTypeError,
    newer_tabformer,
)
from .encoders import encoder_from_folder, load_encoder, load_pretrained_encoder, save_pretrained_encoder
from .estimators import load_estimator, save_estimator

__all__ = [
    "load",
    "save_estimator",
    "save_pretrained_encoder",
    "load_pretrained_encoder",
    "load_encoder",
    "is_saved_folder",
    "PersistenceError",
    "MissingFileError",
    "UntrustedTypeError",
    "FORMAT_VERSION",
    "ALLOWED_MODULES",
]


def load(path, device=None, trusted=()):
    """Load a model saved by tabformer: fitted and ready to predict. Nothing is unpickled.

    Parameters
    ----------
    path : str or os.PathLike
        A folder written by an estimator's ``save`` or by ``PretrainedEncoder.save``.
    device : str, torch.device or None, default=None
        Where the model runs (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"auto"``: the GPU when there is
        one); sets the estimator's ``device``. A device this machine lacks is refused, naming it.
        ``None`` keeps the saved device, or falls back to the CPU (with a warning) when
        the model was saved on CUDA and no GPU is available here.
    trusted : str or list of str, default=()
        Classes outside tabformer, torch, skorch and sklearn.preprocessing that the folder
        may name (``"mypackage.MyTokenizer"``), e.g. a tokenizer or estimator subclass
        of your own. Any other name is refused before it is imported.

    Returns
    -------
    a fitted estimator (``TabFormerClassifier``...) or a ``PretrainedEncoder`` (CPU, eval mode,
    or on ``device``) or a ``TransformerEncoder``.

    Raises
    ------
    PersistenceError (a ValueError) naming the file and the problem: a newer format
    version, weights whose names or shapes do not match the config, a class outside the
    allowed modules or one that reads files with ``torch.load`` (:class:`UntrustedTypeError`),
    a missing file (:class:`MissingFileError`, also a FileNotFoundError), a path that is a
    file rather than a folder, or a config whose structure tabformer did not write.
    """
    device = _checked_device(device)
    reader = Reader(os.fspath(path), trusted)
    config, kind = reader.open()
    try:
        if kind == "estimator":
            return load_estimator(reader, config, device)
        if kind in ("pretrained_encoder", "transformer_encoder"):
            if device == "auto":  # as an estimator's device="auto": the GPU when there is one
                device = "cuda" if torch.cuda.is_available() else "cpu"
            with torch.random.fork_rng(devices=[]):
                return encoder_from_folder(reader, config, kind).to(device or "cpu")
    except PersistenceError:
        raise
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as error:
        # A config whose structure is not what tabformer writes (edited by hand, truncated):
        # the same error type as every other load failure, naming the folder.
        newer = newer_tabformer(config)
        if newer:  # a newer tabformer's folder (a new parameter, a new setting) in the same format version
            raise PersistenceError(
                f"{reader.folder} was saved by tabformer {newer}, this is {__version__}: upgrade tabformer to load it "
                f"({type(error).__name__}: {error})"
            ) from error
        raise PersistenceError(
            f"{reader.folder} does not hold a model tabformer can read: {type(error).__name__}: {error} "
            "(was a file edited or copied from another version?)"
        ) from error
    raise PersistenceError(f"{reader.path(CONFIG_FILE)} holds a {kind!r}, which this tabformer cannot load")


def _checked_device(device):
    """``load``'s ``device``, checked before anything is read: torch's own errors named neither the
    parameter nor what to pass instead ("Found no NVIDIA driver", a list of every device type)."""
    if device is None or (isinstance(device, str) and device == "auto"):
        return device
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise PersistenceError(
            f"load(device={device!r}): not a device torch knows; pass device='cpu', 'cuda', 'cuda:1', "
            "'mps' or 'auto' (the GPU when there is one), or leave device=None for the saved one"
        ) from None
    available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}.get(parsed.type)
    if available is not None and not available():
        raise PersistenceError(
            f"load(device={device!r}): {parsed.type.upper()} is not available on this machine; pass device='cpu' to load "
            "the model on the CPU (or device='auto': the GPU when there is one)"
        )
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise PersistenceError(
            f"load(device={device!r}): this machine has {torch.cuda.device_count()} GPU(s), cuda:0 to "
            f"cuda:{torch.cuda.device_count() - 1}; pass one of those, or device='cpu'"
        )
    return device


def is_saved_folder(path) -> bool:
    """Whether ``path`` is a folder whose config.json tabformer wrote."""
    config = os.path.join(os.fspath(path), CONFIG_FILE)
    if not os.path.isfile(config):
        return False
    try:
        with open(config, encoding="utf-8") as handle:
            return json.load(handle).get("format") == FORMAT
    except (ValueError, OSError, AttributeError):
        return False
