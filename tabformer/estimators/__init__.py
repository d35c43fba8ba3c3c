"""The scikit-learn layer: skorch nets over the shared encoder."""

from .pretrainer import TabFormerPretrainer
from .supervised import TabFormerClassifier, TabFormerRegressor
from .tagger import TabFormerTagger

__all__ = ["TabFormerClassifier", "TabFormerRegressor", "TabFormerTagger", "TabFormerPretrainer"]
