"""The collapse check of a multi-label fit looks at each label: one predicted the same for every row warns, naming it."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from tabformer import TabFormerClassifier

QUICK = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, random_state=0, verbose=0, ensemble_size=1)


def labels_one_learnable(n=200, seed=0):
    """'big' (x > 0) is learnable; 'noise' (8% positives, independent of X) is not; 'never' is 0 on every row."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "colour": rng.choice(["red", "blue"], n)})
    Y = pd.DataFrame({"big": (X["x"] > 0).astype(int), "noise": (rng.random(n) < 0.08).astype(int), "never": 0})
    return X, Y


def fit_recording(X, Y, **settings):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = TabFormerClassifier(**{**QUICK, **settings}).fit(X, Y)
    return clf, [w for w in caught if issubclass(w.category, (ConvergenceWarning, UserWarning)) and "Adam" not in str(w.message)]


@pytest.mark.parametrize("validation_fraction", [None, 0.2])
def test_a_label_never_predicted_warns_by_name_once_while_another_is_learned(validation_fraction):
    X, Y = labels_one_learnable()
    clf, caught = fit_recording(X, Y, max_epochs=6, lr=3e-3, validation_fraction=validation_fraction)
    predicted = clf.predict(X)
    assert 0 < predicted[:, 0].sum() < len(X) and predicted[:, 1].sum() == 0  # 'big' learned, 'noise' never predicted
    collapse = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert len(collapse) == 1, collapse
    assert collapse[0].startswith("TabFormerClassifier predicts label 1 ('noise') as 0 for every training row it was checked on")
    assert "'big'" not in collapse[0] and "'never'" not in collapse[0]  # learned; constant in y (expected)
    assert "threshold predict_proba" in collapse[0] or "not learned beyond a constant answer" in collapse[0]


def test_a_label_constant_in_y_is_warned_of_as_fit_starts_not_as_a_collapse():
    X, Y = labels_one_learnable(n=80)
    Y = Y.to_numpy()[:, [0, 2]]
    clf, caught = fit_recording(X, Y, max_epochs=6, lr=3e-3, validation_fraction=None)
    assert [str(w.message) for w in caught] == [
        "label column 1 is 0 in every training row: the model can only learn to answer that for it"
    ]
    assert 0 < clf.predict(X)[:, 0].sum() < len(X)


def test_a_rare_label_whose_probabilities_vary_is_pointed_to_pos_weight():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=200), "colour": rng.choice(["red", "blue"], 200)})
    Y = pd.DataFrame({"big": (X["x"] > 0).astype(int), "top": (X["x"] > 1.4).astype(int)})  # 'top' about 8%
    _, caught = fit_recording(X, Y, max_epochs=6, lr=3e-3, validation_fraction=None)
    collapse = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert len(collapse) == 1 and "label 1 ('top')'s probabilities vary" in collapse[0], collapse
    assert (
        "never reach 0.5 (it is 1 in 8.0% of the training rows). To predict it, threshold predict_proba's column below 0.5"
        in collapse[0]
    )
    assert "criterion__pos_weight=[1.0, 11.5]" in collapse[0]
