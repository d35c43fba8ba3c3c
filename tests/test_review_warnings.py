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


def test_a_long_text_in_a_dataframe_names_its_column_and_the_setting_that_raises_its_max_length():
    # bird strikes' 'remarks' beside table columns: the warning named no column and advised tokenizer__max_length,
    # which MixedTokenizer refuses (Invalid parameter 'max_length')
    rng = np.random.default_rng(0)
    words = ["wing", "engine", "bird", "strike", "runway", "damage"]
    remarks = [" ".join(rng.choice(words, size=200 if i == 0 else 5)) for i in range(30)]
    X = pd.DataFrame({"remarks": remarks, "speed": rng.normal(size=30)})
    y = np.arange(30) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = TabFormerClassifier(**SMALL).fit(X, y)
    messages = [str(w.message) for w in caught if "truncated" in str(w.message)]
    assert len(messages) == 1 and "['remarks']" in messages[0], messages
    setting = messages[0].split("raise ")[1].split(" ")[0]
    clf.set_params(**{setting: 256}).fit(X, y)  # the advice is a setting the estimator takes
