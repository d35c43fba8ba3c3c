"""Regression review: criteria that cannot read standardised targets, and constant targets."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import TabFormerRegressor


def _table(n=80, seed=0):
    rng = np.random.RandomState(seed)
    return pd.DataFrame({"a": rng.randn(n), "b": rng.randn(n), "c": rng.choice(list("xyz"), n)})


@pytest.mark.parametrize("criterion", [torch.nn.PoissonNLLLoss])
def test_count_or_probability_losses_are_refused_on_standardised_targets(tiny, criterion):
    """Standardised targets are negative for some rows: a Poisson loss on them is unbounded below."""
    X = _table()
    y = np.random.RandomState(1).poisson(2.0, len(X)).astype(float)
    with pytest.raises(ValueError, match=f"criterion={criterion.__name__}.*standardize_target=False"):
        TabFormerRegressor(criterion=criterion, **tiny).fit(X, y)


@pytest.mark.parametrize(
    "criterion, params, why",
    [
        (torch.nn.PoissonNLLLoss, {"criterion__log_input": False}, "with log_input=False it reads rates > 0"),
        (torch.nn.GaussianNLLLoss, {}, "it reads a variance beside each prediction"),
        (torch.nn.BCELoss, {}, r"it reads probabilities in \[0, 1\]"),
        (torch.nn.BCEWithLogitsLoss, {}, "a classification loss: TabFormerClassifier"),
    ],
)
def test_losses_the_regressors_output_cannot_feed_are_refused_by_name(tiny, criterion, params, why):
    # They ended in a NaN with advice to lower the learning rate, torch's own error, or predictions that were logits
    X = _table()
    y = np.random.RandomState(1).poisson(2.0, len(X)).astype(float)
    reg = TabFormerRegressor(criterion=criterion, standardize_target=False, **params, **tiny)
    with pytest.raises(ValueError, match=rf"criterion={criterion.__name__} cannot train TabFormerRegressor: {why}"):
        reg.fit(X, y)


def test_poisson_regressor_predicts_counts_not_log_rates(tiny):
    X = _table()
    y = np.random.RandomState(1).poisson(20.0, len(X)).astype(float)
    reg = TabFormerRegressor(criterion=torch.nn.PoissonNLLLoss, standardize_target=False, random_state=0, **tiny)
    reg.set_params(max_epochs=30, lr=0.05).fit(X, y)
    predictions = reg.predict(X)
    assert (predictions > 0).all()
    # exp(log-rate): near the mean count (20), where the raw output would read about log(20) = 3
    assert abs(predictions.mean() - y.mean()) < 0.25 * y.mean()
    with pytest.raises(ValueError, match="counts >= 0; y holds -1 at row 0"):
        TabFormerRegressor(criterion=torch.nn.PoissonNLLLoss, standardize_target=False, **tiny).fit(X, np.r_[-1.0, y[1:]])


def test_constant_target_is_predicted_exactly(tiny):
    X = _table()
    y = np.full(len(X), 0.1)
    with pytest.warns(UserWarning, match=r"y is constant \(value 0.1\) in every training row"):
        assert np.array_equal(TabFormerRegressor(random_state=0, **tiny).fit(X, y).predict(X), y)
    Y = np.c_[np.random.RandomState(2).randn(len(X)), np.full(len(X), 5.0)]
    with pytest.warns(UserWarning, match=r"y's output column 1 is constant \(value 5.0\)"):
        assert np.array_equal(TabFormerRegressor(random_state=0, **tiny).fit(X, Y).predict(X)[:, 1], Y[:, 1])


def test_a_continued_fit_that_moves_a_constant_target_learns_it(tiny):
    # A streamed fit's first batch may hold one value: later batches must still train that target.
    X = _table()
    with pytest.warns(UserWarning, match=r"y is constant \(value 3.0\)"):
        reg = TabFormerRegressor(random_state=0, **tiny).fit(X, np.full(len(X), 3.0))
    reg.partial_fit(X, np.full(len(X), 3.0))  # the same constant continues, still predicted exactly
    np.testing.assert_array_equal(reg.predict(X), 3.0)
    reg.partial_fit(X, 3.0 + np.arange(len(X), dtype=float) % 2)
    assert reg.target_scale_[0] == 1.0 and np.ptp(reg.predict(X)) > 0


def test_export_refuses_a_poisson_log_rate_regressor(tiny, tmp_path):
    pytest.importorskip("onnx")
    X = _table()
    y = np.random.RandomState(1).poisson(3.0, len(X)).astype(float)
    reg = TabFormerRegressor(criterion=torch.nn.PoissonNLLLoss, standardize_target=False, **tiny).fit(X, y)
    with pytest.raises(ValueError, match="PoissonNLLLoss.*log-rates"):
        reg.export_onnx(tmp_path / "r.onnx")


def test_target_scaling_weighs_rows_as_the_loss_does(tiny):
    """Rows of weight 0 (outliers left out) set neither the mean nor the scale the other rows train at."""
    X = _table(n=120)
    y = 3 * X["a"].to_numpy() + 100
    y[:10] = 1e6  # outliers the user weighs out
    weights = np.r_[np.zeros(10), np.ones(len(X) - 10)]
    reg = TabFormerRegressor(random_state=0, **tiny).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(reg.target_mean_, [y[10:].mean()])
    np.testing.assert_allclose(reg.target_scale_, [y[10:].std()])
    assert np.abs(reg.predict(X.iloc[10:]) - y[10:]).mean() < 10  # 9288 when the outliers set the scale (2.4 now)


@pytest.mark.parametrize(
    "y, message",
    [
        (pd.Series([True, None, False] * 10, dtype="boolean"), r"NaN or infinite value\(s\) \(first at row 1"),
        (pd.Series(["1", "x", "3"] * 10), r"must be numbers.*\(first at row 1: 'x'\)"),
    ],
)
def test_bad_targets_name_their_first_row(tiny, y, message):
    """A nullable boolean Series' pd.NA and a string among numbers: the error names the row, not only the value."""
    with pytest.raises(ValueError, match=message):
        TabFormerRegressor(**tiny).fit(_table(n=len(y)), y)
