"""Reading tensor files without running code: ``torch.load(weights_only=True)`` with errors
that say what went wrong.

Unpickling an arbitrary file can run arbitrary code (a pickle may name any importable
callable, ``os.system`` included, and ask for it to be called). ``weights_only=True``
restricts the unpickler to tensors and plain containers; a file that needs more is
refused here, before any of its objects is built, with an error naming the file and the
first object torch refused.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
import re

import torch

__all__ = ["UnsafeFileError", "load_tensors"]

# torch 2.6+ words a refused import two ways: "Unsupported global: GLOBAL posix.system was not an
# allowed global" and, for blocked modules, "Trying to load unsupported GLOBAL posix.system whose ...".
_REFUSED_GLOBAL = re.compile(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)")


class UnsafeFileError(ValueError):
    """A file that only unpickling arbitrary Python objects could read; it was not read."""


def load_tensors(path, map_location="cpu", what: str = "a tensor file"):
    """``torch.load(path, weights_only=True)``, or a clear error; never unpickles other objects.

    Parameters
    ----------
    path : str, os.PathLike or file-like
    map_location : str or torch.device, default="cpu"
    what : str
        What the file should be, for the error message (``"a TransformerEncoder.save file"``).

    Raises
    ------
    UnsafeFileError (a ValueError)
        The file holds pickled objects other than tensors and plain containers; the message
        names the first import the pickle asks for where it can.
    ValueError
        The file is not a ``torch.save`` file at all (nor a pickle).
    """
    start = path.tell() if hasattr(path, "tell") and hasattr(path, "seek") else 0
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        head = _read(path, start, 16)
        found = _REFUSED_GLOBAL.search(str(error))
        name = found.group(1) if found else _first_global(path, start, head)
        if name is None and head is not None and not _is_torch_or_pickle(head):
            raise ValueError(f"{path} is not {what}: {_not_torch(head)}") from None
        # torch's own message opens by suggesting weights_only=False: it is never quoted.
        detail = f"it imports {name}, which torch's safe unpickler refuses" if name else _reason(str(error))
        raise UnsafeFileError(
            f"{path} was not loaded: {what} holds only tensors, but this file holds pickled Python objects ({detail}). "
            "tabformer reads tensor files with torch.load(weights_only=True) and never unpickles other objects, "
            "because unpickling can run arbitrary code. If the file is yours, save only its tensors where it was "
            "made (e.g. safetensors.torch.save_file(model.state_dict(), path))."
        ) from None
    except (RuntimeError, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        head = _read(path, start, 16)
        reason = _not_torch(head) if head is not None and not head.startswith(b"PK") else None
        reason = reason or f"torch.load cannot read it ({str(error).strip()[:200]})"
        raise ValueError(f"{path} is not {what}: {reason}") from None


def _read(path, start: int, size: int) -> bytes | None:
    """The first ``size`` bytes of the file (from ``start`` for a file object), or None if unreadable."""
    try:
        if hasattr(path, "read") and hasattr(path, "seek"):
            path.seek(start)
            return path.read(size)
        with open(os.fspath(path), "rb") as file:
            return file.read(size)
    except (OSError, TypeError, ValueError):
        return None


def _is_torch_or_pickle(head: bytes) -> bool:
    # torch.save writes a zip archive, or (legacy format) a pickle opening with the PROTO opcode.
    return head.startswith((b"PK\x03\x04", b"\x80"))


def _not_torch(head: bytes) -> str:
    if not head:
        return "the file is empty"
    size = int.from_bytes(head[:8], "little")
    if len(head) > 8 and head[8:9] == b"{" and size > 1:  # an 8-byte header length, then its JSON
        return "it is a safetensors file, not a torch.save file"
    return f"it is neither a torch.save file nor a safetensors file (it begins with {head!r})"


def _first_global(path, start: int, head: bytes | None) -> str | None:
    """The first import torch would refuse in a plain pickle, read with pickletools (which builds no object).

    torch names the imports it refuses as it reads; a pickle of protocol 4 or 5
    (``pickle.dump``'s default) stops it earlier, at an opcode it does not support.
    """
    if head is None or not head.startswith(b"\x80"):
        return None
    try:
        from torch._weights_only_unpickler import _get_allowed_globals

        allowed = set(_get_allowed_globals())
    except (ImportError, AttributeError):  # private to torch: without it, the first import is named
        allowed = set()
    strings = []
    try:
        for opcode, argument, _ in pickletools.genops(io.BytesIO(_read(path, start, 1 << 20) or b"")):
            name = None
            if opcode.name == "GLOBAL":
                name = str(argument).replace(" ", ".")
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                name = f"{strings[-2]}.{strings[-1]}"
            elif isinstance(argument, str):
                strings.append(argument)
            if name is not None and name not in allowed:
                return name
    except Exception:  # a truncated or damaged pickle: nothing named
        return None
    return None


def _reason(message: str) -> str:
    """torch's reason for refusing, without its advice to turn weights_only off."""
    for line in message.splitlines():
        line = line.strip().removeprefix("WeightsUnpickler error:").strip()
        if line and "weights_only" not in line and not line.startswith(("Weights only load failed", "Check the doc")):
            return f"torch's safe unpickler: {line[:200]}"
    return "torch's safe unpickler refused it"
