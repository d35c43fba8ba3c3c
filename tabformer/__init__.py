"""tabformer: one Transformer encoder for tables, text and images, as scikit-learn estimators."""

from .encoder import TransformerEncoder
from .estimators import TabFormerClassifier, TabFormerRegressor
from .model import PretrainedEncoder, TabFormerModel
from .tokenizers import TabularTokenizer

__version__ = "0.1.0"

__all__ = [
    "TabFormerClassifier",
    "TabFormerRegressor",
    "TabFormerModel",
    "PretrainedEncoder",
    "TransformerEncoder",
    "TabularTokenizer",
    "__version__",
]
