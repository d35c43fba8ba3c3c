"""The collapse check reads the validation pass it already has before it runs any rows itself."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.estimators._collapse import (
    FIRST_LOOK,
    ValidationAnswerSpread,
    check_samples,
    class_rows,
    is_constant,
    kept_epoch_answers_vary,
    spread_rows,
)

FAST = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, random_state=0, verbose=0)


def _threshold_data(n=400):
    x = np.random.default_rng(0).uniform(-1, 1, n)
    return pd.DataFrame({"x": x}), np.where(x < 0, "a", "b"), 3 * x


@pytest.fixture
def count_collects(monkeypatch):
    calls = []
    for cls in (TabFormerClassifier, TabFormerRegressor):
        original = cls.collect
        monkeypatch.setattr(cls, "collect", lambda self, *a, _original=original, **k: calls.append(1) or _original(self, *a, **k))
    return calls


def test_is_constant_is_a_per_column_std_threshold():
    one_hot = np.zeros((10_000, 2))
    one_hot[:, 0] = 1
    assert is_constant(len(one_hot), one_hot.sum(0), (one_hot**2).sum(0))
    one_hot[17] = [0, 1]  # one row in 10,000 with the other class is two answers
    assert not is_constant(len(one_hot), one_hot.sum(0), (one_hot**2).sum(0))
    values = np.full((100, 1), 3.0) + np.linspace(0, 5e-5, 100)[:, None]
    assert is_constant(100, values.sum(0), (values**2).sum(0))
    values[:50] += 1e-3
    assert not is_constant(100, values.sum(0), (values**2).sum(0))


def test_spread_rows_covers_the_whole_data():
    tokens = {"ids": np.arange(5000)}
    rows = spread_rows(tokens, 512)["ids"]
    assert len(rows) == 512 and rows[0] == 0 and rows[-1] == 4999
    assert len(spread_rows({"ids": np.arange(10)})["ids"]) == 10


def test_class_rows_take_every_class_even_a_rare_one():
    labels = np.zeros(10_000, dtype=np.int64)
    labels[::500] = 1  # 20 rows of class 1, far fewer than 512 spread rows would hold (1)
    rows = class_rows(labels)
    assert np.all(np.diff(rows) > 0)
    assert np.bincount(labels[rows]).tolist() == [64, 20]
    assert rows[labels[rows] == 0].max() > 9000  # spread over the class, not its first rows
    many = np.arange(2000) % 100  # 100 classes: 5 rows each, 500 in all
    assert np.bincount(many[class_rows(many)]).tolist() == [5] * 100
    spread = class_rows(np.arange(1000))  # more classes than rows to read: rows spread over all
    assert len(spread) == 512 and spread[0] == 0 and spread[-1] == 999


def test_a_rare_class_the_model_predicts_is_no_collapse():
    # 2% of the rows are "b" and the feature gives them away; without validation the check
    # reads the training rows, and a spread sample of 512 would hold about 10 of them
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 3000)
    y = np.where(x > 0.98, "b", "a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = TabFormerClassifier(max_epochs=15, validation_fraction=None, **FAST).fit(pd.DataFrame({"x": x}), y)
    assert set(clf.predict(pd.DataFrame({"x": [0.1, 0.999]}))) == {"a", "b"}


@pytest.mark.parametrize("cls", [TabFormerClassifier, TabFormerRegressor])
def test_a_fit_with_validation_checks_without_a_forward_over_training_rows(cls, count_collects):
    X, labels, values = _threshold_data()
    y = labels if cls is TabFormerClassifier else values
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = cls(max_epochs=8, ensemble_size=1, **FAST).fit(X, y)  # one model: its holdout's answers are its own
    assert count_collects == []  # the kept epoch's validation answers already differed
    assert kept_epoch_answers_vary(model)
    spread = dict(model.callbacks_)["collapse"]
    assert isinstance(spread, ValidationAnswerSpread)
    assert set(spread.sums_) == set(model.history[:, "epoch"])
    assert all(count == 120 for count, _, _ in spread.sums_.values())  # 300 rows of a small table, at most 30% of 400


def test_check_samples_look_at_a_few_rows_before_the_full_sample():
    labels = np.repeat([0, 1, 2], [1000, 30, 5])
    tokens = {"ids": np.arange(len(labels)), "mask": np.ones((len(labels), 3))}
    first, full = check_samples(tokens, labels)
    assert np.bincount(labels[first["ids"]]).tolist() == [FIRST_LOOK, FIRST_LOOK, 5]
    assert np.bincount(labels[full["ids"]]).tolist() == [64, 30, 5]
    assert first["mask"].shape == (len(first["ids"]), 3)
    first, full = check_samples({"ids": np.arange(5000)})  # no labels: rows spread over the data
    assert len(first["ids"]) == 4 * FIRST_LOOK and first["ids"][-1] == 4999 and len(full["ids"]) == 512


def test_without_validation_the_check_runs_a_few_training_rows(count_collects, monkeypatch):
    X, y, _ = _threshold_data()
    read = []
    original = TabFormerClassifier.collect
    monkeypatch.setattr(
        TabFormerClassifier,
        "collect",
        lambda self, tokens, *a, **k: read.append(len(tokens["num_values"])) or original(self, tokens, *a, **k),
    )
    model = TabFormerClassifier(max_epochs=4, validation_fraction=None, **FAST).fit(X, y)
    assert read == [2 * FIRST_LOOK] and not kept_epoch_answers_vary(model)  # the first look varied: no full sample


def test_a_constant_first_look_reads_the_full_sample_before_it_warns(monkeypatch):
    X, y, _ = _threshold_data()
    model = TabFormerClassifier(max_epochs=4, validation_fraction=None, **FAST).fit(X, y)
    looks = iter([np.tile([1.0, 0.0], (16, 1)), np.eye(2)[np.arange(128) % 2]])  # constant first look, then two answers
    monkeypatch.setattr(TabFormerClassifier, "collect", lambda self, tokens, *a, **k: next(looks))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model._warn_if_collapsed(model.tokenizer_.transform(X), model.label_encoder_.transform(y))
    assert next(looks, None) is None  # both looks were read


def test_constant_validation_answers_are_confirmed_on_training_rows_before_warning(count_collects):
    # one feature that carries nothing: the validation pass answers one class, and so do the training rows
    X = pd.DataFrame({"constant": np.ones(200)})
    with pytest.warns(ConvergenceWarning, match="predicts one class .* for every training row"):
        TabFormerClassifier(max_epochs=2, **FAST).fit(X, np.array(["a", "b"] * 100))
    assert len(count_collects) == 2  # the first look, the full sample (no class is rare: no pass for its probabilities)


def test_the_collapse_warning_names_an_int_class_as_the_user_wrote_it():
    X = pd.DataFrame({"constant": np.ones(200)})
    with pytest.warns(ConvergenceWarning, match=r"predicts one class \((0|1)\) for every"):
        TabFormerClassifier(max_epochs=2, **FAST).fit(X, np.array([0, 1] * 100))  # not "np.int64(0)"


def test_the_kept_epoch_is_early_stoppings_best_not_the_last(monkeypatch):
    X, y, _ = _threshold_data()
    model = TabFormerClassifier(max_epochs=6, ensemble_size=1, **FAST).fit(X, y)
    stopping = dict(model.callbacks_)["early_stopping"]
    spread = dict(model.callbacks_)["collapse"]
    best = stopping.best_epoch_
    constant = [40, np.array([40.0, 0.0]), np.array([40.0, 0.0])]
    varied = [40, np.array([20.0, 20.0]), np.array([20.0, 20.0])]
    spread.sums_ = {epoch: (varied if epoch == best else constant) for epoch in spread.sums_}
    assert kept_epoch_answers_vary(model)
    spread.sums_[best] = constant
    spread.sums_.update({epoch: varied for epoch in spread.sums_ if epoch != best})
    assert not kept_epoch_answers_vary(model)
    # without early stopping's restored weights, the last epoch is the kept one
    monkeypatch.setattr(stopping, "best_model_weights_", None)
    last = model.history[-1, "epoch"]
    spread.sums_[last] = varied if last != best else constant
    assert kept_epoch_answers_vary(model) is (last != best)
