"""skorch's ``EpochScoring(..., use_caching=False)`` on tabformer's estimators: each epoch the model
predicts the rows anew and is scored against their targets. skorch reads those only from its own
``Dataset``; on tabformer's it scored against ``y=None`` and sklearn's metric raised at the first
epoch's end ("The 'y_true' parameter of accuracy_score must be an array-like ... Got None")."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.metrics import r2_score
from skorch.callbacks import EpochScoring

from tabformer import TabFormerClassifier, TabFormerRegressor


def table(n=80):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], n)})
    return X, np.where(X["a"] > 0, "pos", "neg")  # string labels: the dataset holds them encoded


def scoring(*specs):
    """``(name, scoring, use_caching, on_train)`` -> skorch's callbacks."""
    return [
        (name, EpochScoring(score, name=name, use_caching=cached, on_train=on_train, lower_is_better=False))
        for name, score, cached, on_train in specs
    ]


@pytest.mark.parametrize("members", [1, 2])
def test_validation_scores_without_caching_equal_the_cached_ones(members):
    X, y = table()
    callbacks = scoring(
        ("acc", "accuracy", False, False),
        ("f1", "f1_macro", False, False),
        ("f1_cached", "f1_macro", True, False),
        ("log_loss", "neg_log_loss", False, False),  # predict_proba's path
        ("log_loss_cached", "neg_log_loss", True, False),
    )
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 2}, random_state=0, ensemble_size=members, callbacks=callbacks).fit(X, y)
    history = clf.history_
    assert history[:, "acc"] == pytest.approx(history[:, "valid_acc"])
    assert history[:, "f1"] == pytest.approx(history[:, "f1_cached"])
    assert history[:, "log_loss"] == pytest.approx(history[:, "log_loss_cached"], abs=1e-5)


def test_training_scores_without_caching_are_the_models_at_the_epochs_end():
    X, y = table()
    callbacks = scoring(("train_acc", "accuracy", False, True), ("train_f1", "f1_macro", False, True))
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 2}, random_state=0, ensemble_size=1, validation_fraction=None)
    clf.set_params(callbacks=callbacks).fit(X, y)
    assert clf.history_[-1, "train_acc"] == pytest.approx(clf.score(X, y))  # every row trained: the last epoch's model
    assert 0 <= clf.history_[-1, "train_f1"] <= 1


def test_a_regressors_scores_without_caching_are_on_the_targets_scale():
    X, _ = table()
    y = 100 + 10 * X["a"].to_numpy()  # far from standardised: the dataset holds (y - mean) / std
    reg = TabFormerRegressor(**{**TINY, "max_epochs": 2}, random_state=0, ensemble_size=1, validation_fraction=None)
    reg.set_params(callbacks=scoring(("train_r2", "r2", False, True))).fit(X, y)
    assert reg.history_[-1, "train_r2"] == pytest.approx(r2_score(y, reg.predict(X)))


def test_a_streamed_fit_refuses_scoring_without_caching_before_the_first_epoch(tmp_path):
    pytest.importorskip("pyarrow")
    X, y = table()
    path = tmp_path / "rows.parquet"
    X.assign(label=y).to_parquet(path)
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 2}, ensemble_size=1, callbacks=scoring(("acc", "accuracy", False, False)))
    with pytest.raises(ValueError, match=r"callback\(s\) \['acc'\] score with use_caching=False: .* Pass use_caching=True"):
        clf.fit(str(path), "label")
    assert len(clf.history_) == 0  # refused before the first epoch, not at its end
    clf.set_params(callbacks=scoring(("acc", "accuracy", True, False))).fit(str(path), "label")
    assert len(clf.history_[:, "acc"]) == 2


def test_a_streamed_fit_without_a_holdout_trains_with_a_validation_scorer_without_caching(tmp_path):
    # skorch skips an on_train=False scorer when there is no validation set: only a scorer of
    # rows that are the stream is refused (validation_fraction=None used to train, and was refused)
    pytest.importorskip("pyarrow")
    X, y = table()
    path = tmp_path / "rows.parquet"
    X.assign(label=y).to_parquet(path)
    settings = dict(**{**TINY, "max_epochs": 2}, ensemble_size=1, validation_fraction=None)
    clf = TabFormerClassifier(**settings, use_caching=False).fit(str(path), "label")
    assert len(clf.history_) == 2 and "valid_acc" not in clf.history_[-1]
    clf = TabFormerClassifier(**settings, callbacks=scoring(("acc", "accuracy", False, False))).fit(str(path), "label")
    assert len(clf.history_) == 2 and "acc" not in clf.history_[-1]
    clf.set_params(callbacks=scoring(("train_acc", "accuracy", False, True)))  # the training rows are the stream
    with pytest.raises(ValueError, match=r"callback\(s\) \['train_acc'\] score with use_caching=False"):
        clf.fit(str(path), "label")
    assert len(clf.history_) == 0
