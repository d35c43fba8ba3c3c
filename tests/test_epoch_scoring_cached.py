"""skorch's cached ``EpochScoring`` (its default ``use_caching=True``) on a regressor scores in
``predict``'s units, the target's original scale. It compared the targets the batches carry
(standardised) with a new pass's predictions (original scale): r2 of about -9000 on y = 100 +- 10,
and with ``on_train=True`` rows out of order besides (the training batches are shuffled)."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from skorch.callbacks import EpochScoring

from tabformer import TabFormerClassifier, TabFormerRegressor


def table(n=80):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], n)})
    return X, 100 + 10 * X["a"].to_numpy() + rng.normal(size=n)  # far from standardised: the batches hold (y - mean) / std


def r2(name="r2", on_train=False, cached=True):
    return (name, EpochScoring("r2", name=name, on_train=on_train, use_caching=cached, lower_is_better=False))


def test_a_regressors_cached_training_r2_is_predicts():
    X, y = table()
    # lr=0: the model each training batch ran is the fitted one, so the epoch's own outputs are predict's
    reg = TabFormerRegressor(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=None)
    reg.set_params(callbacks=[r2("train_r2", on_train=True)]).fit(X, y)
    assert reg.history_[-1, "train_r2"] == pytest.approx(r2_score(y, reg.predict(X)), abs=1e-6)


def test_a_regressors_cached_validation_r2_is_the_holdouts():
    X, y = table()
    reg = TabFormerRegressor(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    reg.set_params(callbacks=[r2()]).fit(X, y)  # patience=None: the last epoch's model is kept
    # the estimator's holdout: a train_test_split of the row numbers seeded by random_state + 1
    _, valid = train_test_split(np.arange(len(y)), test_size=0.25, random_state=1)
    assert reg.history_[-1, "r2"] == pytest.approx(r2_score(y[valid], reg.predict(X.iloc[valid])), abs=1e-6)


def test_an_ensemble_regressors_cached_r2_equals_the_uncached_one():
    X, y = table()
    reg = TabFormerRegressor(**TINY, random_state=0, ensemble_size=2, callbacks=[r2(), r2("r2_uncached", cached=False)])
    reg.fit(X, y)  # two members on folds: each row scored out of fold
    assert reg.history_[:, "r2"] == pytest.approx(reg.history_[:, "r2_uncached"], abs=1e-6)
    assert reg.history_[-1, "r2"] > -5  # not thousands below 0


def test_a_two_output_regressors_cached_r2_is_on_the_original_scale():
    X, y = table()
    Y = np.column_stack([y, -3 * y])
    reg = TabFormerRegressor(**TINY, lr=0.0, random_state=0, ensemble_size=1, validation_fraction=None)
    reg.set_params(callbacks=[r2("train_r2", on_train=True)]).fit(X, Y)
    assert reg.history_[-1, "train_r2"] == pytest.approx(r2_score(Y, reg.predict(X)), abs=1e-6)


def test_the_classifiers_cached_valid_acc_is_the_holdouts_accuracy():
    X, y = table()
    labels = np.where(y > 100, "high", "low")
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None).fit(X, labels)
    _, valid = train_test_split(np.arange(len(y)), test_size=0.25, random_state=1, stratify=labels)
    assert clf.history_[-1, "valid_acc"] == pytest.approx(accuracy_score(labels[valid], clf.predict(X.iloc[valid])))


class TensorTargets(EpochScoring):
    """Records the type of each target skorch gathered (a subclass may read ``y_trues_`` as tensors)."""

    def on_epoch_end(self, net, **kwargs):
        self.types_ = {type(y).__name__ for y in self.y_trues_}
        super().on_epoch_end(net, **kwargs)


def test_a_target_extractor_reading_tensors_gets_tensors():
    # skorch's EpochScoring hands target_extractor (and y_trues_) the batches' tensors; tabformer gave numpy
    X, y = table()
    labels = (y > 100).astype(int)
    acc = TensorTargets("accuracy", name="acc", lower_is_better=False, target_extractor=lambda t: t.long().numpy())
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("acc", acc)]).fit(X, labels)
    assert acc.types_ == {"Tensor"}
    assert clf.history_[:, "acc"] == pytest.approx(clf.history_[:, "valid_acc"])
    score = TensorTargets("r2", name="r2", lower_is_better=False, target_extractor=lambda t: t.double().numpy())
    reg = TabFormerRegressor(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    reg.set_params(callbacks=[("r2", score)]).fit(X, y)
    assert score.types_ == {"Tensor"}  # on the original scale (float64, on the CPU)
    _, valid = train_test_split(np.arange(len(y)), test_size=0.25, random_state=1)
    assert reg.history_[-1, "r2"] == pytest.approx(r2_score(y[valid], reg.predict(X.iloc[valid])), abs=1e-6)


def test_a_scorer_may_predict_twice_on_the_replayed_outputs():
    # skorch's cached forward_iter yields the epoch's outputs once: a second predict raised
    # (torch.cat(): expected a non-empty list of Tensors)
    X, y = table()

    def twice(net, X_test, y_test):
        first, second = net.predict(X_test), net.predict(X_test)
        assert np.array_equal(first, second)
        return r2_score(y_test, second)

    reg = TabFormerRegressor(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    reg.set_params(callbacks=[r2(), ("twice", EpochScoring(twice, name="twice", lower_is_better=False))]).fit(X, y)
    assert reg.history_[:, "twice"] == pytest.approx(reg.history_[:, "r2"])
    assert "_replayed_outputs" not in vars(reg)  # dropped once each callback is done

    def proba_then_predict(net, X_test, y_test):  # the classifier's _linked, then predict
        proba = net.predict_proba(X_test)
        assert np.array_equal(net.classes_[proba.argmax(axis=1)], net.predict(X_test))  # labels, as on any X
        return accuracy_score(y_test, net.predict(X_test))

    labels = np.where(y > 100, "high", "low")
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("linked", EpochScoring(proba_then_predict, name="linked", lower_is_better=False))]).fit(X, labels)
    assert clf.history_[:, "linked"] == pytest.approx(clf.history_[:, "valid_acc"])
