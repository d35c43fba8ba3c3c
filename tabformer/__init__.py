"""tabformer: one Transformer encoder for tables, text and images, as scikit-learn estimators.

The public names load on first use: ``import tabformer`` costs about what ``import
sklearn`` does, and torch, skorch and the estimators are imported when a name such as
``tabformer.TabFormerClassifier`` (or a submodule such as ``tabformer.datasets``) is first
read.
"""

import importlib
import importlib.util

from ._version import __version__

#: public name -> the submodule that defines it
_EXPORTS = {
    "TabFormerClassifier": ".estimators",
    "TabFormerRegressor": ".estimators",
    "TabFormerTagger": ".estimators",
    "TabFormerPretrainer": ".estimators",
    "TabFormerModel": ".nn",
    "PretrainedEncoder": ".nn",
    "TransformerEncoder": ".nn",
    "load": ".persistence",
    "TabularTokenizer": ".tokenizers",
    "WordPieceTokenizer": ".tokenizers",
    "PatchTokenizer": ".tokenizers",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name):
    """Import a public name or a submodule the first time it is read (PEP 562)."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
