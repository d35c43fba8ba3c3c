"""Tests that fail when a core behaviour breaks (issue 17, item 7). Each was checked by
planting the bug it names and watching it fail (see /work/notes/issue17.md)."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, make_table
from sklearn.dummy import DummyRegressor
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from tabformer import TabFormerClassifier, TabFormerRegressor


def test_early_stopping_restores_the_weights_of_the_best_validation_loss():
    """Planted bug: EarlyStopping(load_best=False). The restored model must score min(valid_loss)."""
    X, y = make_table(n=200)
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 30}, lr=2e-2, lr_schedule=None, patience=3, random_state=0).fit(X, y)
    losses = clf.history[:, "valid_loss"]
    assert int(np.argmin(losses)) < len(losses) - 1, "the test needs a fit whose last epoch is not its best"
    # Rebuild the same validation rows (the split is seeded by random_state) and score them.
    tokens = clf.tokenize(X)
    _, valid = clf.get_split_datasets(tokens, clf._encode_target(y))
    total, rows = 0.0, 0
    clf.module_.eval()
    for inputs, target in clf.get_iterator(valid, training=False):
        with __import__("torch").no_grad():
            loss = clf.get_loss(clf.module_(**inputs), target, training=False)
        total, rows = total + float(loss) * len(target), rows + len(target)
    assert total / rows == pytest.approx(min(losses), rel=1e-4)


def test_regressor_predicts_on_the_targets_scale_above_a_dummy():
    """Planted bug: predict forgets to add target_mean_ back. The target has a large offset."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400), "c": rng.choice(["u", "v"], 400)})
    y = 1000.0 + 3.0 * X["a"] - 2.0 * X["b"] + 2.0 * (X["c"] == "u") + rng.normal(scale=0.3, size=400)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    reg = TabFormerRegressor(**{**TINY, "max_epochs": 15}, random_state=0).fit(X_train, y_train)
    dummy = r2_score(y_test, DummyRegressor().fit(X_train, y_train).predict(X_test))
    score = r2_score(y_test, reg.predict(X_test))
    assert score > dummy + 0.5, (score, dummy)
    assert abs(reg.predict(X_test).mean() - 1000.0) < 2.0
