"""Warnings audit: each warning a default fit gives on ordinary data is true, said once, and names the user's line."""

import warnings

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, cross_val_score

from tabformer import TabFormerClassifier
from tabformer.tokenizers import UntrainedMissingWarning

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


def test_a_warning_raised_inside_cross_val_score_names_the_users_line_not_joblibs():
    # credit_data's 'Job' misses 2 of 4,454 cells: a fold whose test rows hold both trained no missing token,
    # and the warning pointed at joblib/parallel.py, which sklearn calls fit and score through
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=40), "job": rng.choice(["a", "b"], size=40).astype(object)})
    X.loc[0, "job"] = np.nan
    y = (X["x"] > 0).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_val_score(TabFormerClassifier(**SMALL), X, y, cv=KFold(2))
    untrained = [w for w in caught if issubclass(w.category, UntrainedMissingWarning)]
    assert len(untrained) == 1, [str(w.message) for w in caught]
    assert untrained[0].filename == __file__
