"""The piecewise bins' trees: the early-stopping holdout chooses nothing, and row weights weigh them."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY

from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.tokenizers import MixedTokenizer, TabularTokenizer, _numbers


def _two_step_table(n=600, seed=0):
    """The same x twice: the first copy's target steps at 0.3, the second's at -0.5."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    X = pd.DataFrame({"a": np.concatenate([x, x])})
    y = np.concatenate([(x > 0.3), (x > -0.5)]).astype(int)
    return X, y


def test_rows_of_weight_zero_choose_no_bin_and_the_others_choose_as_alone():
    X, y = _two_step_table()
    n = len(X) // 2
    weights = np.r_[np.ones(n), np.zeros(n)]
    weighted = TabularTokenizer(numeric_embedding="piecewise", numeric_transform="standard").fit(X, y, sample_weight=weights)
    # the scaler reads every row: the first copy alone (the same values, once) has the same mean and std
    alone = TabularTokenizer(numeric_embedding="piecewise", numeric_transform="standard").fit(X.iloc[:n], y[:n])
    np.testing.assert_allclose(weighted.bin_edges_, alone.bin_edges_)
    unweighted = TabularTokenizer(numeric_embedding="piecewise").fit(X, y).bin_edges_
    assert not np.allclose(unweighted, weighted.bin_edges_)


def test_weights_weigh_the_tree_not_only_select_rows():
    X, y = _two_step_table()
    n = len(X) // 2
    heavy, light = np.full(n, 9.0), np.ones(n)
    heavy_first = TabularTokenizer(numeric_embedding="piecewise", n_bins=2).fit(X, y, sample_weight=np.r_[heavy, light])
    heavy_second = TabularTokenizer(numeric_embedding="piecewise", n_bins=2).fit(X, y, sample_weight=np.r_[light, heavy])
    # one split each: near the step of the copy that weighs more
    step = heavy_first.scaler_.transform(np.array([[0.3], [-0.5]]))[:, 0]
    assert abs(np.unique(heavy_first.bin_edges_[0])[1] - step[0]) < 0.1
    assert abs(np.unique(heavy_second.bin_edges_[0])[1] - step[1]) < 0.1


@pytest.mark.parametrize("bad, message", [(np.ones(3), "one weight per row"), (-np.ones(1200), "non-negative")])
def test_a_bad_sample_weight_is_refused_with_its_shape(bad, message):
    X, y = _two_step_table()
    with pytest.raises(ValueError, match=message):
        TabularTokenizer(numeric_embedding="piecewise").fit(X, y, sample_weight=bad)


def test_a_mixed_tokenizer_hands_the_weights_to_its_table():
    X, y = _two_step_table()
    n = len(X) // 2
    frame = X.assign(note=["some words here"] * len(X))
    table = TabularTokenizer(numeric_embedding="piecewise", numeric_transform="standard")
    mixed = MixedTokenizer(table=table, text="wordpiece").fit(frame, y, sample_weight=np.r_[np.ones(n), np.zeros(n)])
    alone = TabularTokenizer(numeric_embedding="piecewise", numeric_transform="standard").fit(X.iloc[:n], y[:n])
    table = [t for name, t, _ in mixed.transformers_ if isinstance(t, TabularTokenizer)][0]
    np.testing.assert_allclose(table.bin_edges_, alone.bin_edges_)


def _regression_table(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(size=n)})
    return X, (np.sin(2 * X["a"]) + X["b"]).to_numpy(np.float32)


def test_the_holdouts_targets_do_not_move_the_bins():
    X, y = _regression_table()
    settings = dict(TINY, max_epochs=1, random_state=0, validation_fraction=0.2, tokenizer__numeric_embedding="piecewise")
    first = TabFormerRegressor(ensemble_size=1, **settings).fit(X, y)
    # A regressor's holdout does not depend on y: replace the holdout's targets only.
    seen = TabFormerRegressor(ensemble_size=1, **settings)
    seen.resolved_params_ = first.resolved_params_
    _, valid_idx = seen._holdout_split(len(X), y)
    noisy = y.copy()
    noisy[valid_idx] = np.random.default_rng(1).normal(size=len(valid_idx)) * 10
    second = TabFormerRegressor(ensemble_size=1, **settings).fit(X, noisy)
    np.testing.assert_allclose(first.tokenizer_.bin_edges_, second.tokenizer_.bin_edges_)
    # while the training rows' targets do choose them
    changed = y.copy()
    changed[np.setdiff1d(np.arange(len(X)), valid_idx)[:600]] *= -1
    third = TabFormerRegressor(ensemble_size=1, **settings).fit(X, changed)
    assert not np.allclose(first.tokenizer_.bin_edges_, third.tokenizer_.bin_edges_)


@pytest.mark.parametrize("random_state", [None, 3])
def test_the_rows_left_out_of_the_bins_are_the_rows_validated_on(monkeypatch, random_state):
    X, y = _regression_table(800)
    y = (y > np.median(y)).astype(int)
    sample_weight = np.random.default_rng(0).uniform(0.5, 2.0, size=len(X))
    handed, split = {}, {}
    real_fit, real_split = _numbers.fit_bin_edges, TabFormerClassifier.get_split_datasets

    def spy_fit(scaled, target, n_bins, weights=None):
        handed["weights"] = weights
        return real_fit(scaled, target, n_bins, weights)

    def spy_split(self, X, y=None, **kwargs):
        train, valid = real_split(self, X, y, **kwargs)
        split["valid"] = np.asarray(valid.indices)
        return train, valid

    monkeypatch.setattr("tabformer.tokenizers.tabular.fit_bin_edges", spy_fit)
    monkeypatch.setattr(TabFormerClassifier, "get_split_datasets", spy_split)
    settings = dict(TINY, max_epochs=1, validation_fraction=0.25, tokenizer__numeric_embedding="piecewise")
    TabFormerClassifier(ensemble_size=1, **settings, random_state=random_state).fit(X, y, sample_weight=sample_weight)
    weights = handed["weights"]
    assert np.flatnonzero(weights == 0).tolist() == sorted(split["valid"].tolist())
    kept = weights > 0
    np.testing.assert_allclose(weights[kept], sample_weight[kept])


def test_a_streamed_fit_leaves_the_holdout_out_of_its_sampled_rows(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X, y = _regression_table(400)
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pandas(X.assign(target=y), preserve_index=False), path, row_group_size=100)
    handed = {}
    real_fit = _numbers.fit_bin_edges

    def spy_fit(scaled, target, n_bins, weights=None):
        handed["weights"], handed["target"] = weights, target
        return real_fit(scaled, target, n_bins, weights)

    monkeypatch.setattr("tabformer.tokenizers.tabular.fit_bin_edges", spy_fit)
    settings = dict(TINY, max_epochs=1, random_state=0, validation_fraction=0.25, tokenizer__numeric_embedding="piecewise")
    model = TabFormerRegressor(**settings, fit_sample_size=10_000).fit(str(path), "target")
    _, valid_idx = model._holdout_split(len(X), y)
    expected = np.ones(len(X))
    expected[valid_idx] = 0.0
    np.testing.assert_allclose(handed["weights"], expected)  # every row sampled, in file order
    assert np.corrcoef(np.ravel(handed["target"]), y)[0, 1] > 0.9999  # the encoded targets, row by row
