"""The piecewise-linear numeric embedding on bins the target chooses (the table recipe's default)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY

import tabformer
from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.nn.embedders.tabular import TabularEmbedder
from tabformer.tokenizers import TabularTokenizer
from tabformer.tokenizers.base import fit_with_target


def _step_table(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.exponential(size=n), "c": rng.choice(["x", "y", "z"], n)})
    return X, (X["a"] > 0.3).astype(int).to_numpy()


def test_a_target_step_becomes_one_bin_edge_at_the_step():
    X, y = _step_table()
    tokenizer = TabularTokenizer(numeric_embedding="piecewise").fit(X, y)
    edges = tokenizer.bin_edges_
    assert edges.shape == (2, 33)
    assert np.all(np.diff(edges, axis=1) >= 0)
    scaled = tokenizer.scaler_.transform(X[["a", "b"]].to_numpy())
    np.testing.assert_allclose(edges[:, 0], scaled.min(axis=0))
    np.testing.assert_allclose(edges[:, -1], scaled.max(axis=0))
    # y is a step of a alone: one split, at the step, and the tree stops (its leaves are pure)
    inner_a = np.unique(edges[0])[1:-1]
    assert len(inner_a) == 1
    threshold = tokenizer.scaler_.transform(np.array([[0.3, 1.0]]))[0, 0]
    assert abs(inner_a[0] - threshold) < 0.05


def test_without_a_target_the_bins_are_the_columns_quantiles():
    X, y = _step_table()
    tokenizer = TabularTokenizer(numeric_embedding="piecewise", n_bins=8).fit(X)
    scaled = tokenizer.scaler_.transform(X[["a", "b"]].to_numpy())
    np.testing.assert_allclose(tokenizer.bin_edges_[0], np.quantile(scaled[:, 0], np.linspace(0, 1, 9)))
    # with the target, the same column gets one split only
    assert len(np.unique(TabularTokenizer(numeric_embedding="piecewise", n_bins=8).fit(X, y).bin_edges_[0])) == 3


def test_a_float_target_grows_a_regression_tree_and_missing_values_are_left_out():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.uniform(size=2000)})
    X.loc[::10, "a"] = np.nan
    y = np.sin(6 * X["a"].fillna(0).to_numpy()).astype(np.float32)
    edges = TabularTokenizer(numeric_embedding="piecewise", numeric_transform=None).fit(X, y).bin_edges_[0]
    assert len(np.unique(edges)) > 10  # a smooth target asks for many bins, each of >= 64 rows
    assert np.isfinite(edges).all() and edges[0] == np.nanmin(X["a"]) and edges[-1] == np.nanmax(X["a"])


def test_the_tokenizer_refuses_a_bad_bin_count_and_other_embeddings_keep_no_bins():
    X, y = _step_table()
    with pytest.raises(ValueError, match="n_bins must be an int >= 2"):
        TabularTokenizer(numeric_embedding="piecewise", n_bins=1).fit(X, y)
    with pytest.raises(ValueError, match="'linear', 'periodic' or 'piecewise'"):
        TabularTokenizer(numeric_embedding="binned").fit(X, y)
    tokenizer = TabularTokenizer(numeric_embedding="piecewise").fit(X, y).set_params(numeric_embedding="periodic").fit(X, y)
    assert not hasattr(tokenizer, "bin_edges_") and "bin_edges" not in tokenizer.embedder_spec()


def test_the_encoding_is_how_far_a_value_crossed_each_bin():
    edges = [[0.0, 1.0, 3.0, 3.0]]  # two bins, then one of width 0 (padding)
    torch.manual_seed(0)
    embedder = TabularEmbedder([], 1, 16, numeric_embedding="piecewise", bin_edges=edges)
    values = torch.tensor([[-1.0], [0.5], [2.0], [9.0]])
    features = ((values[..., None] - embedder.bin_lower) * embedder.bin_scale).clamp(0, 1)[:, 0]
    expected = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.0]])
    torch.testing.assert_close(features, expected)
    tokens, _ = embedder(num_values=values, num_missing=torch.zeros_like(values, dtype=torch.bool))
    assert tokens.shape == (4, 1, 16) and torch.isfinite(tokens).all()
    # the bins come from the spec: not saved with the weights
    assert "bin_lower" not in embedder.state_dict() and "bin_scale" not in embedder.state_dict()
    # the bins' features and a linear term in x
    weighted = torch.einsum("bk,kd->bd", features, embedder.numeric_weight[0])
    expected_tokens = torch.relu(weighted + values * embedder.numeric_linear[0] + embedder.numeric_bias[0])
    torch.testing.assert_close(tokens[:, 0], expected_tokens)
    tokens.sum().backward()
    assert embedder.numeric_weight.grad[0, :2].abs().sum() > 0 and embedder.numeric_weight.grad[0, 2].abs().sum() == 0


def test_the_table_recipe_resolves_to_piecewise_and_the_users_choice_wins():
    X, y = _step_table(400)
    clf = TabFormerClassifier(**TINY).fit(X, y)
    assert clf.resolved_params_["tokenizer__numeric_embedding"] == "piecewise"
    assert clf.tokenizer_.numeric_embedding == "piecewise" and len(np.unique(clf.tokenizer_.bin_edges_[0])) == 3
    assert "tokenizer__numeric_embedding" not in clf.get_params()
    mine = TabFormerClassifier(**TINY, tokenizer__numeric_embedding="periodic").fit(X, y)
    assert mine.tokenizer_.numeric_embedding == "periodic" and not hasattr(mine.tokenizer_, "bin_edges_")
    instance = TabFormerClassifier(**TINY, tokenizer=TabularTokenizer()).fit(X, y)  # an instance is the user's own
    assert instance.tokenizer_.numeric_embedding == "periodic"


def test_a_regressor_learns_a_step_through_its_bins_and_saves_them(tmp_path):
    X, y = _step_table(600)
    target = 5.0 * y + 0.1 * X["b"].to_numpy()
    reg = TabFormerRegressor(**{**TINY, "max_epochs": 30}, random_state=0).fit(X, target)
    assert reg.score(X, target) > 0.9
    reg.save(tmp_path / "reg")
    loaded = tabformer.load(tmp_path / "reg")
    np.testing.assert_array_equal(loaded.tokenizer_.bin_edges_, reg.tokenizer_.bin_edges_)
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))


def test_a_streamed_fit_picks_its_bins_on_the_target_column(tmp_path):
    X, y = _step_table(600)
    path = tmp_path / "rows.parquet"
    X.assign(label=y).to_parquet(path)
    clf = TabFormerClassifier(**TINY).fit(str(path), "label")
    assert len(np.unique(clf.tokenizer_.bin_edges_[0])) == 3  # quantile bins would give 33 edges


def test_a_tokenizer_whose_fit_takes_no_target_is_fitted_without_one():
    class Mine:
        def fit(self, X):
            self.seen = X
            return self

    class Theirs:
        def fit(self, X, y=None):
            self.target = y
            return self

    assert fit_with_target(Mine(), [1], [0]).seen == [1]
    assert fit_with_target(Theirs(), [1], [0]).target == [0]
    assert fit_with_target(Theirs(), [1]).target is None


def test_a_tokenizer_fit_without_weights_never_reads_the_holdouts_targets():
    # Its fit cannot weigh rows, so the early-stopping holdout (weight 0) is cut out of what
    # it reads; before, a target-encoding tokenizer saw the targets early stopping scores.
    class TargetReader:
        def fit(self, X, y):
            self.rows, self.target = list(X.index), list(y)
            return self

    X = pd.DataFrame({"a": [10, 11, 12, 13]}, index=["w", "x", "y", "z"])
    fitted = fit_with_target(TargetReader(), X, np.array([0, 1, 0, 1]), sample_weight=np.array([1.0, 0.0, 2.0, 0.0]))
    assert fitted.rows == ["w", "y"] and fitted.target == [0, 0]
    texts = ["a b", "c d", "e f"]
    fitted = fit_with_target(TargetReader(), pd.Series(texts), [1, 2, 3], sample_weight=[1, 1, 1])
    assert fitted.rows == [0, 1, 2]  # nothing held out: every row


def test_the_estimators_holdout_is_cut_from_a_user_tokenizers_supervised_fit():
    seen = {}

    class Supervised(TabularTokenizer):
        def fit(self, X, y=None):
            seen["rows"] = len(X)
            return super().fit(X)

    X, y = _step_table(200)
    TabFormerClassifier(ensemble_size=1, tokenizer=Supervised(), validation_fraction=0.2, **dict(TINY, max_epochs=1)).fit(X, y)
    assert seen["rows"] == 160


def test_on_many_rows_the_trees_read_a_sample_but_the_edges_span_every_row(monkeypatch):
    from tabformer.tokenizers import _numbers

    monkeypatch.setattr(_numbers, "MAX_TREE_ROWS", 300)
    X, y = _step_table(2000)
    X.loc[0, "a"] = 40.0  # the largest value, very likely outside a 300-row sample
    edges = TabularTokenizer(numeric_embedding="piecewise", numeric_transform=None).fit(X, y).bin_edges_
    assert edges[0, -1] == 40.0 and edges[0, 0] == X["a"].min()
    assert abs(np.unique(edges[0])[1] - 0.3) < 0.1  # the sample still finds the step


def test_switching_to_piecewise_after_fit_asks_for_a_refit():
    X, y = _step_table(200)
    tokenizer = TabularTokenizer().fit(X, y).set_params(numeric_embedding="piecewise")
    with pytest.raises(ValueError, match="after fit: refit"):
        tokenizer.embedder_spec()


def test_a_table_alone_resolves_four_relu_heads_and_the_users_encoder_settings_win():
    X, y = _step_table(300)
    small = dict(encoder__d_model=16, encoder__n_layers=1, max_epochs=1, batch_size=32, verbose=0, random_state=0)
    clf = TabFormerClassifier(**small).fit(X, y)
    assert clf.resolved_params_["encoder__n_heads"] == 4 and clf.resolved_params_["encoder__activation"] == "relu"
    layer = clf.module_.encoder.layers[0]
    assert layer.attention.n_heads == 4 and isinstance(layer.feed_forward.activation, torch.nn.ReLU)
    assert "encoder__n_heads" not in clf.get_params() and "encoder__activation" not in clf.get_params()
    mine = TabFormerClassifier(**small, encoder__n_heads=8, encoder__activation="gelu").fit(X, y)
    assert mine.module_.encoder.layers[0].attention.n_heads == 8
    assert isinstance(mine.module_.encoder.layers[0].feed_forward.activation, torch.nn.GELU)
    # a frame with text beside the table keeps the encoder's defaults (8 heads, GELU): not measured
    notes = [f"a note about row {i} with words like w{i % 13} and v{i % 17}" for i in range(len(X))]
    mixed = TabFormerClassifier(**small).fit(X.assign(note=notes), y)
    assert mixed.tokenizer_.column_kinds_["note"] == "text"
    assert "encoder__n_heads" not in mixed.resolved_params_


def test_tabformers_text_and_image_tokenizers_fit_on_every_row_without_a_target():
    # Their fit(X, y=None) ignores y: the holdout cut above must not shrink their vocabulary.
    from tabformer.tokenizers import PatchTokenizer, WordPieceTokenizer

    texts = ["alpha beta", "gamma delta", "epsilon zeta", "eta theta"]
    fitted = fit_with_target(WordPieceTokenizer(vocab_size=60, min_frequency=1), texts, [0, 1, 0, 1], sample_weight=[1, 0, 1, 0])
    assert {"gamma", "theta"} <= set(json.loads(fitted.tokenizer_json_)["model"]["vocab"])
    assert not PatchTokenizer.fit_reads_target and TabularTokenizer.fit_reads_target
