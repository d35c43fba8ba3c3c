"""Loaders for real datasets that ship inside packages (no network needed).

Each loader reads the files of an installed package and raises
:class:`MissingDatasetError` (an ``ImportError``) naming the exact install command when
that package is missing. The data is never copied into this repository. The fixed
train/test splits the benchmarks report on live in ``benchmarks/splits.py``.
"""

from ._files import MissingDatasetError
from .icons import load_icons
from .images import FASHION_MNIST_CLASSES, load_fashion_mnist
from .multimodal import load_emoji, load_lending_club
from .tabular import load_adult, load_diamonds
from .text import load_conll2003, load_fortunes, load_rotten_tomatoes

__all__ = [
    "MissingDatasetError",
    "load_adult",
    "load_diamonds",
    "load_fashion_mnist",
    "FASHION_MNIST_CLASSES",
    "load_lending_club",
    "load_emoji",
    "load_icons",
    "load_rotten_tomatoes",
    "load_fortunes",
    "load_conll2003",
]
