"""The torch layer: attention, the shared encoder, positions, heads, per-kind embedders and
the models that compose them. It imports only torch and numpy (timm for backbones)."""

from .encoder import EncoderLayer, FeedForward, TransformerEncoder
from .ensemble import EnsembleModel
from .heads import ClassificationHead, RegressionHead, TokenClassificationHead
from .models import LateFusionModel, PretrainedEncoder, TabFormerModel

__all__ = [
    "TransformerEncoder",
    "EncoderLayer",
    "FeedForward",
    "ClassificationHead",
    "RegressionHead",
    "TokenClassificationHead",
    "TabFormerModel",
    "LateFusionModel",
    "EnsembleModel",
    "PretrainedEncoder",
]
