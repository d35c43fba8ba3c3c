"""Reading tensor files without running code: ``torch.load(weights_only=True)`` with errors
that say what went wrong.

Unpickling an arbitrary file can run arbitrary code (a pickle may name any importable
callable, ``os.system`` included, and ask for it to be called). ``weights_only=True``
restricts the unpickler to tensors and plain containers; a file that needs more is
refused here, before any of its objects is built, with an error naming the file and the
first object torch refused.
"""

from __future__ import annotations

import pickle
import re

import torch

__all__ = ["UnsafeFileError", "load_tensors"]


class UnsafeFileError(ValueError):
    """A file that only unpickling arbitrary Python objects could read; it was not read."""


def load_tensors(path, map_location="cpu", what: str = "a tensor file"):
    """``torch.load(path, weights_only=True)``, or a clear error; never unpickles other objects.

    Parameters
    ----------
    path : str or os.PathLike
    map_location : str or torch.device, default="cpu"
    what : str
        What the file should be, for the error message (``"a TransformerEncoder.save file"``).

    Raises
    ------
    UnsafeFileError (a ValueError)
        The file holds pickled objects other than tensors and plain containers.
    ValueError
        The file is not a ``torch.save`` file at all.
    """
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        found = re.search(r"Unsupported (global: GLOBAL [\w.]+|operand \d+)", str(error))
        detail = f"torch's unpickler: unsupported {found.group(1)}" if found else str(error).strip().splitlines()[0][:200]
        raise UnsafeFileError(
            f"{path} was not loaded: {what} holds only tensors, but this file holds pickled Python objects ({detail}). "
            "tabformer reads tensor files with torch.load(weights_only=True) and never unpickles other objects, "
            "because unpickling can run arbitrary code. If you trust the file, unpickle it yourself "
            "(torch.load with weights_only off) and re-save what you need in a safe format."
        ) from None
    except (RuntimeError, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError(f"{path} is not {what}: torch.load cannot read it ({str(error).strip()[:200]})") from None
