"""Findings of a review of scikit-learn workflows (Pipelines, searches, meta-estimators, skorch parameters)."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier, TabFormerRegressor

TINY = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1, verbose=0, random_state=0)


def _table(n=60):
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(n), "c": rng.choice(["x", "y"], n)})
    return X, np.where(X.a > 0, "pos", "neg")


@pytest.mark.parametrize("value", [None, lambda logits: logits * 0 + 7])
@pytest.mark.parametrize("cls", [TabFormerClassifier, TabFormerRegressor])
def test_a_predict_nonlinearity_of_the_users_is_refused_not_ignored(cls, value):
    # skorch's parameter (None gives logits) was listed by get_params and ignored: predict_proba was softmax anyway.
    X, y = _table()
    target = y if cls is TabFormerClassifier else X.a.to_numpy() * 2
    with pytest.raises(ValueError, match=r"predict_nonlinearity=.* is not read.*estimator\.forward\(estimator\.tokenize\(X\)\)"):
        cls(predict_nonlinearity=value, **TINY).fit(X, target)


def test_the_logits_the_message_points_to_give_predict_proba():
    X, y = _table()
    model = TabFormerClassifier(ensemble_size=1, **TINY).fit(X, y)
    logits = model.forward(model.tokenize(X[:5]))
    np.testing.assert_allclose(logits.softmax(-1).numpy(), model.predict_proba(X[:5]), atol=1e-6)
