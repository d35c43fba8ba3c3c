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

from ._files import Reader
from ._format import ALLOWED_MODULES, CONFIG_FILE, FORMAT, FORMAT_VERSION, MissingFileError, PersistenceError, UntrustedTypeError
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
    device : str or None, default=None
        Where the model runs (``"cpu"``, ``"cuda"``); sets the estimator's ``device``.
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
    reader = Reader(os.fspath(path), trusted)
    config, kind = reader.open()
    try:
        if kind == "estimator":
            return load_estimator(reader, config, device)
        if kind in ("pretrained_encoder", "transformer_encoder"):
            with torch.random.fork_rng(devices=[]):
                return encoder_from_folder(reader, config, kind).to(device or "cpu")
    except PersistenceError:
        raise
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as error:
        # A config whose structure is not what tabformer writes (edited by hand, truncated):
        # the same error type as every other load failure, naming the folder.
        raise PersistenceError(
            f"{reader.folder} does not hold a model tabformer can read: {type(error).__name__}: {error} "
            "(was a file edited or copied from another version?)"
        ) from error
    raise PersistenceError(f"{reader.path(CONFIG_FILE)} holds a {kind!r}, which this tabformer cannot load")


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
