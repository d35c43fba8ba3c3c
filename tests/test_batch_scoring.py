"""skorch's ``BatchScoring`` scores each batch in ``predict``'s units: a regressor's on the target's
original scale, a classifier's in its labels. It compared the batch's targets as the DataLoader holds
them (a regressor's standardised, a classifier's encoded) with ``predict`` on the batch's inputs:
r2 of about -7800 on y = 100 + 10 a, and ``accuracy`` raised on labels against class numbers."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from skorch.callbacks import BatchScoring

from tabformer import TabFormerClassifier, TabFormerRegressor


def table(n=80):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], n)})
    return X, 100 + 10 * X["a"].to_numpy() + rng.normal(size=n)  # far from standardised: the batches hold (y - mean) / std


def holdout(n, stratify=None):
    """The estimator's holdout: a train_test_split of the row numbers seeded by random_state + 1."""
    return train_test_split(np.arange(n), test_size=0.25, random_state=1, stratify=stratify)


@pytest.mark.parametrize("cached", [True, False])
def test_a_regressors_batch_r2_is_predicts_on_the_holdout(cached):
    X, y = table()
    score = BatchScoring("r2", name="batch_r2", lower_is_better=False, use_caching=cached)
    # lr=0: the weights do not move, so the batch's own outputs (and a new pass) are predict's
    reg = TabFormerRegressor(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    reg.set_params(callbacks=[("batch_r2", score)]).fit(X, y)
    _, valid = holdout(len(y))
    assert reg.history_[-1, "batches", :, "valid_batch_size"] == [len(valid)]  # one batch: its r2 is the holdout's
    assert reg.history_[-1, "batch_r2"] == pytest.approx(r2_score(y[valid], reg.predict(X.iloc[valid])), abs=1e-6)


def test_a_regressors_training_batches_are_scored_against_the_original_targets():
    X, y = table()
    seen = []

    def record(net, X_batch, y_batch):
        seen.append(np.asarray(y_batch))
        return r2_score(y_batch, net.predict(X_batch))

    reg = TabFormerRegressor(**dict(TINY, max_epochs=1), random_state=0, ensemble_size=1, validation_fraction=0.25)
    reg.set_params(callbacks=[("train_r2", BatchScoring(record, name="train_r2", on_train=True, lower_is_better=False))])
    reg.fit(X, y)
    train, _ = holdout(len(y))
    assert np.sort(np.concatenate(seen)) == pytest.approx(np.sort(y[train]), abs=1e-4)  # float32 in the batches
    assert reg.history_[-1, "train_r2"] > -5  # not thousands below 0


def test_the_classifiers_batch_accuracy_is_predicts_on_the_holdout():
    X, y = table()
    labels = np.where(y > 100, "high", "low")
    score = BatchScoring("accuracy", name="batch_acc", lower_is_better=False)
    clf = TabFormerClassifier(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("batch_acc", score)]).fit(X, labels)  # raised: labels against class numbers
    _, valid = holdout(len(y), stratify=labels)
    assert clf.history_[-1, "batch_acc"] == pytest.approx(accuracy_score(labels[valid], clf.predict(X.iloc[valid])))


def test_a_target_extractor_reading_tensors_gets_tensors():
    # skorch hands target_extractor the batch's tensor; tabformer gave numpy (t.long() raised)
    X, y = table()
    labels = (y > 100).astype(int)  # classes 0 and 1: the batch's class numbers are the labels
    score = BatchScoring("accuracy", name="batch_acc", lower_is_better=False, target_extractor=lambda t: t.long().numpy())
    clf = TabFormerClassifier(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("batch_acc", score)]).fit(X, labels)
    _, valid = holdout(len(y), stratify=labels)
    assert clf.history_[-1, "batch_acc"] == pytest.approx(accuracy_score(labels[valid], clf.predict(X.iloc[valid])))
    # a regressor's batch targets on the original scale, still a tensor
    score = BatchScoring("r2", name="batch_r2", lower_is_better=False, target_extractor=lambda t: t.double().numpy())
    reg = TabFormerRegressor(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    reg.set_params(callbacks=[("batch_r2", score)]).fit(X, y)
    _, valid = holdout(len(y))
    assert reg.history_[-1, "batch_r2"] == pytest.approx(r2_score(y[valid], reg.predict(X.iloc[valid])), abs=1e-6)
