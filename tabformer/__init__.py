"""tabformer: one Transformer encoder for tables, text and images, as scikit-learn estimators."""

from ._version import __version__
from .estimators import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger
from .nn import PretrainedEncoder, TabFormerModel, TransformerEncoder
from .persistence import load
from .pretraining import mlm as _mlm  # noqa: F401  (registers objective='mlm')
from .pretraining import simclr as _simclr  # noqa: F401  (registers objective='simclr')
from .tokenizers import PatchTokenizer, TabularTokenizer, WordPieceTokenizer

__all__ = [
    "TabFormerClassifier",
    "TabFormerRegressor",
    "TabFormerTagger",
    "TabFormerPretrainer",
    "TabFormerModel",
    "PretrainedEncoder",
    "TransformerEncoder",
    "TabularTokenizer",
    "WordPieceTokenizer",
    "PatchTokenizer",
    "load",
    "__version__",
]
