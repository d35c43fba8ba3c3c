"""Folders written whole: filled under a temporary name beside their place, then renamed in.

A process killed (or a disk that fills) while the files are written leaves the previous
folder as it was, never a mix of old and new files. ``TrainingCheckpoint`` writes its epoch
folders so, and ``save`` its model folders.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["sibling", "swap_in", "write_file"]


def sibling(target: Path, tag: str) -> Path:
    """A hidden name beside ``target`` for this process: ``.<name>.<tag>-<pid>``.

    Parameters
    ----------
    target : pathlib.Path
        The folder the temporary one stands beside.
    tag : str
        What it is for (``"tmp"``, ``"old"``).

    Returns
    -------
    pathlib.Path
    """
    return target.with_name(f".{target.name}.{tag}-{os.getpid()}")


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and flush it to the disk (a rename after it then never shows an empty file).

    Parameters
    ----------
    path : pathlib.Path
    data : bytes
    """
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def swap_in(tmp: Path, target: Path) -> None:
    """Put the complete folder ``tmp`` at ``target``: an existing ``target`` is renamed aside, ``tmp``
    renamed in, and only then the old one removed. If ``tmp`` cannot be renamed in, the old one is put back.

    Parameters
    ----------
    tmp : pathlib.Path
        The new folder, complete, beside ``target`` (on the same file system).
    target : pathlib.Path
        Where it goes.

    Raises
    ------
    OSError
        ``target`` cannot be renamed (a mount point, a folder in use on Windows) or ``tmp`` cannot take its
        place; ``target`` is then as it was.
    """
    aside = None
    if os.path.lexists(target):
        aside = sibling(target, "old")
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(target, aside)
    try:
        os.rename(tmp, target)
    except BaseException:
        if aside is not None:
            os.rename(aside, target)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
