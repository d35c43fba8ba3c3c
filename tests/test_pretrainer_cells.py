"""Masked-cell pretraining on plain tables (objective="masked_cells", what "auto" picks for a table)."""

import numpy as np
import pandas as pd
import pytest
import torch

import tabformer
from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.nn.encoder import TransformerEncoder
from tabformer.nn.heads import IGNORE_INDEX
from tabformer.pretraining import resolve_objective
from tabformer.pretraining.cells import MaskedCellDataset, MaskedCellHead
from tabformer.pretraining.losses import masked_cell_loss
from tabformer.tokenizers import PatchTokenizer, TabularTokenizer, WordPieceTokenizer
from tabformer.tokenizers.tabular import FIRST_CATEGORY_ID, MISSING_ID, UNSEEN_ID

SMALL = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    batch_size=64,
    lr=3e-3,
    validation_fraction=None,
    patience=None,
    random_state=0,
    verbose=0,
)


def linked_table(n=400, seed=0):
    """Columns that predict each other: b = 2a + noise, c is the sign of a, d is noise."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    X = pd.DataFrame(
        {
            "a": a,
            "b": 2 * a + rng.normal(scale=0.1, size=n),
            "c": np.where(a > 0, "pos", "neg"),
            "d": rng.choice(["x", "y", "z"], size=n),
        }
    )
    X.loc[X.index[::11], "a"] = np.nan
    X.loc[X.index[::13], "d"] = None
    return X


def test_auto_picks_an_objective_by_input_kind():
    assert resolve_objective("auto", TabularTokenizer()) == "masked_cells"
    assert resolve_objective("auto", WordPieceTokenizer()) == "mlm"
    assert resolve_objective("auto", PatchTokenizer()) == "simclr"
    assert resolve_objective("mlm", TabularTokenizer()) == "mlm"  # a named objective is kept


def test_dataset_hides_present_cells_and_keeps_their_targets():
    X = linked_table(n=300)
    tokenizer = TabularTokenizer().fit(X)
    batch = tokenizer.transform(X)
    center, scale = np.array([0.5, -1.0]), np.array([2.0, 4.0])
    dataset = MaskedCellDataset(batch, 0.4, center, scale, random_state=0)
    out, _ = dataset.__getitems__(list(range(300)))
    hidden_cat = out["cell_labels"] != IGNORE_INDEX
    hidden_num = out["num_hidden"]
    # hidden categorical cells read UNSEEN and keep their original id as the target
    assert (out["cat_ids"][hidden_cat] == UNSEEN_ID).all()
    np.testing.assert_array_equal(out["cell_labels"][hidden_cat], batch["cat_ids"][hidden_cat.numpy()])
    assert (out["cell_labels"][hidden_cat] >= FIRST_CATEGORY_ID).all()  # missing cells are never targets
    assert not hidden_cat[torch.as_tensor(batch["cat_ids"] == MISSING_ID)].any()
    # hidden numeric cells read missing; their targets are the standardised original values
    assert out["num_missing"][hidden_num].all() and not hidden_num[torch.as_tensor(batch["num_missing"])].any()
    expected = (batch["num_values"] - center) / scale
    np.testing.assert_allclose(out["num_targets"][hidden_num], expected[hidden_num.numpy()], rtol=1e-5)
    visible = ~hidden_num.numpy() & ~batch["num_missing"]
    np.testing.assert_array_equal(out["num_values"].numpy()[visible], batch["num_values"][visible])
    rate = (hidden_cat.sum() + hidden_num.sum()).item() / ((batch["cat_ids"] > MISSING_ID).sum() + (~batch["num_missing"]).sum())
    assert 0.33 < rate < 0.47
    again, _ = dataset.__getitems__(list(range(300)))
    assert not torch.equal(again["num_hidden"], hidden_num)  # fresh masks at every access
    replay, _ = MaskedCellDataset(batch, 0.4, center, scale, random_state=0).__getitems__(list(range(300)))
    assert torch.equal(replay["num_hidden"], hidden_num) and torch.equal(replay["cell_labels"], out["cell_labels"])


def test_categories_are_scored_within_their_column_and_nothing_hidden_is_a_zero_loss():
    X = linked_table(n=50)
    tokenizer = TabularTokenizer().fit(X)
    embedder = tokenizer.build_embedder(16)
    head = MaskedCellHead(embedder, 16)
    encoder = TransformerEncoder(d_model=16, n_heads=2, n_layers=1)
    out, _ = MaskedCellDataset(tokenizer.transform(X), 1.0, np.zeros(2), np.ones(2), 0).__getitems__(list(range(50)))
    categorical, (predicted, numeric_target) = head(embedder, encoder, **out)
    (logits, target) = categorical[0]
    column = torch.searchsorted(embedder.category_offsets, target, right=True) - 1
    allowed = logits > torch.finfo(logits.dtype).min
    for row, j in enumerate(column.tolist()):  # only the column's own categories can be predicted
        start = int(embedder.category_offsets[j]) + FIRST_CATEGORY_ID
        stop = start + len(tokenizer.categories_[j])
        assert allowed[row].nonzero().flatten().tolist() == list(range(start, stop))
    assert predicted.shape == numeric_target.shape == (int(out["num_hidden"].sum()),)
    nothing = masked_cell_loss([(logits[:0], target[:0])], (predicted[:0], numeric_target[:0]))
    assert float(nothing.detach()) == 0.0 and nothing.requires_grad


def test_pretrainer_learns_the_links_between_columns():
    X = linked_table(n=300)
    trained = TabFormerPretrainer(max_epochs=12, **SMALL).fit(X)
    assert trained.resolved_params_["objective"] == "masked_cells"
    assert isinstance(trained.module_.head, MaskedCellHead)
    untrained = TabFormerPretrainer(max_epochs=1, **{**SMALL, "lr": 0.0}).fit(X)
    # the score is minus the mean loss over hidden cells; the mean-predictor scores about -1
    assert trained.score(X) > untrained.score(X) + 0.3
    assert trained.score(X) > -0.8
    Z = trained.transform(X)
    assert Z.shape == (len(X), 16) and np.isfinite(Z).all()
    assert list(trained.get_feature_names_out()[:2]) == ["tabformerpretrainer0", "tabformerpretrainer1"]
    assert not hasattr(trained, "predict") and not hasattr(trained, "predict_proba")  # a transformer only
    clf = TabFormerClassifier(encoder=trained.encoder_, max_epochs=2, verbose=0).fit(X, X["b"] > 0)
    assert clf.predict(X.iloc[:5]).shape == (5,)


def test_standardisation_is_fitted_once_and_saved(tmp_path):
    X = linked_table(n=120)
    pre = TabFormerPretrainer(max_epochs=1, **SMALL).fit(X)
    center, scale = pre.objective_.center_.copy(), pre.objective_.scale_.copy()
    numbers = pre.tokenize(X)
    present = ~numbers["num_missing"]
    np.testing.assert_allclose(center[1], numbers["num_values"][present[:, 1], 1].mean(), atol=1e-5)
    pre.partial_fit(X.iloc[:30])  # continued training keeps the fit's standardisation
    np.testing.assert_array_equal(pre.objective_.center_, center)
    pre.save(tmp_path / "pre")
    loaded = tabformer.load(tmp_path / "pre")
    np.testing.assert_array_equal(loaded.objective_.scale_, scale)
    np.testing.assert_array_equal(loaded.transform(X), pre.transform(X))


def test_masked_cells_refuses_what_it_cannot_pretrain():
    with pytest.raises(TypeError, match="objective='mlm'"):
        TabFormerPretrainer(objective="masked_cells", tokenizer="wordpiece", max_epochs=1, **SMALL).fit(["a b c"] * 20)
    with pytest.raises(ValueError, match="objective__mask_prob"):
        TabFormerPretrainer(objective__mask_prob=0.0, max_epochs=1, **SMALL).fit(linked_table(n=40))
    with pytest.raises(ValueError, match="objective__numeric_weight"):
        TabFormerPretrainer(objective__numeric_weight=-1, max_epochs=1, **SMALL).fit(linked_table(n=40))
