"""Review of what a small table gets from the defaults (100-1,000 rows)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from tabformer import TabFormerClassifier, TabFormerRegressor

FAST = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, random_state=0, verbose=0)


def _no_signal(n=200):
    return pd.DataFrame({"constant": np.ones(n)}), np.array(["a"] * (n * 4 // 5) + ["b"] * (n // 5))


@pytest.mark.parametrize("estimator", [TabFormerClassifier, TabFormerRegressor])
def test_a_collapse_that_early_stopping_kept_names_early_stopping_not_more_epochs(estimator):
    # On 100 Adult rows the 10-row holdout kept epoch 2 of 10 (of 40) and the model answered one class;
    # the warning said "try more epochs (resolved: 40)", which a fit that stopped itself does not need.
    X, y = _no_signal()
    target = y if estimator is TabFormerClassifier else (y == "b").astype(float)
    with pytest.warns(ConvergenceWarning) as caught:
        model = estimator(max_epochs=40, patience=1, lr=1e-2, ensemble_size=1, **FAST).fit(X, target)
    ran = len(model.history)
    message = str(next(w.message for w in caught if issubclass(w.category, ConvergenceWarning)))
    assert ran < 40, "the fit did not stop early: the test needs a fit that early stopping ended"
    assert "early stopping kept epoch" in message and f"of the {ran} it ran" in message, message
    assert "judged on 60 held-out rows" in message and "patience=None" in message, message
    assert "try more epochs" not in message, message


def test_a_collapse_without_early_stopping_still_advises_more_epochs():
    X, y = _no_signal()
    with pytest.warns(ConvergenceWarning, match="try more epochs"):
        TabFormerClassifier(max_epochs=2, validation_fraction=None, **FAST).fit(X, y)


def test_a_rare_class_that_is_never_the_most_probable_is_not_called_a_collapse():
    # 1,000 Adult rows at 3% positives: one class on every row at a validation AUC of 0.90 and a
    # probability std of 0.07; the warning said the model "has not learned beyond a constant answer".
    x = np.random.default_rng(0).uniform(0, 1, 800)
    y = np.where(np.random.default_rng(1).uniform(0, 1, 800) < 0.01 + 0.3 * x**2, "rare", "common")
    with pytest.warns(ConvergenceWarning) as caught:
        model = TabFormerClassifier(max_epochs=8, validation_fraction=None, lr=3e-3, **FAST).fit(pd.DataFrame({"x": x}), y)
    message = str(next(w.message for w in caught if issubclass(w.category, ConvergenceWarning)))
    probabilities = model.predict_proba(pd.DataFrame({"x": np.linspace(0, 1, 11)}))[:, list(model.classes_).index("rare")]
    assert probabilities[-1] - probabilities[0] > 0.1 and probabilities.max() < 0.5  # learned, and never the argmax
    assert "not learned" not in message and "probabilities vary" in message, message
    assert "'rare' is" in message and "class_weight='balanced'" in message, message
