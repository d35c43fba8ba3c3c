"""The version of tabformer (kept apart so that modules below the package can read it)."""

__version__ = "0.2.0"
