"""Where tabformer's warnings point: the user's line that called into tabformer.

``warnings.warn(..., stacklevel=n)`` counts frames from the warning; a fixed ``n`` points
inside tabformer as soon as the warning sits one call deeper than it was written for (a
chunked predict, a skorch callback, a generator). :func:`user_stacklevel` counts the frames
up to the first one outside tabformer and the libraries it calls back through, so the
warning names the user's file and line (as Python 3.12's ``skip_file_prefixes`` does).
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["user_stacklevel"]

#: libraries whose frames sit between the user's call and a tabformer warning (skorch's fit
#: loop, scikit-learn's wrappers and pipelines, torch's module calls, joblib's ``Parallel``,
#: through which cross_val_score and the searches call fit and score even with n_jobs=None)
_LIBRARIES = ("skorch", "sklearn", "torch", "joblib")


def _internal_prefixes() -> tuple:
    folders = [os.path.dirname(os.path.abspath(__file__))]
    loaded = [getattr(sys.modules.get(name), "__file__", None) for name in _LIBRARIES]
    folders += [os.path.dirname(file) for file in loaded if file]
    return tuple(folder + os.sep for folder in folders) + (contextlib.__file__,)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes the caller's ``warnings.warn`` point at the first frame outside tabformer.

    Frames of skorch, scikit-learn, torch, joblib and ``contextlib`` are skipped too: they only
    relay the user's call (``Pipeline.predict``, skorch's training loop, ``cross_val_score``).

    Returns
    -------
    stacklevel : int
        For a ``warnings.warn`` called in the function that calls this one; 1 names that function's line.
    """
    prefixes = _internal_prefixes()
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(prefixes):
        frame, level = frame.f_back, level + 1
    return level
