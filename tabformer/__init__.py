"""tabformer: one Transformer encoder for tables, text and images, as scikit-learn estimators."""

from .estimators import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger
from .nn import PretrainedEncoder, TabFormerModel, TransformerEncoder
from .pretraining import mlm as _mlm  # noqa: F401  (registers objective='mlm')
from .pretraining import simclr as _simclr  # noqa: F401  (registers objective='simclr')
from .tokenizers import PatchTokenizer, TabularTokenizer, WordPieceTokenizer

__version__ = "0.1.0"

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
    "__version__",
]
