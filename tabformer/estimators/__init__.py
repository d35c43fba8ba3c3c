"""The scikit-learn layer: skorch nets over the shared encoder."""

from ._repr import declare_parameters
from .pretrainer import TabFormerPretrainer
from .supervised import TabFormerClassifier, TabFormerRegressor
from .tagger import TabFormerTagger

for _estimator in (TabFormerClassifier, TabFormerRegressor, TabFormerTagger, TabFormerPretrainer):
    declare_parameters(_estimator)  # scikit-learn's repr shows the settings that differ from these defaults

__all__ = ["TabFormerClassifier", "TabFormerRegressor", "TabFormerTagger", "TabFormerPretrainer"]
