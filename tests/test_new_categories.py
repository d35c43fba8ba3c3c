"""New table categories at a continued fit: ``new_categories="error"`` refuses them, ``"grow"`` learns them
(docs/reliability.md, "Continued training")."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY, make_table
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError
from skorch.callbacks import Callback

import tabformer
from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.estimators._categories import grow_for_new_categories
from tabformer.nn.embedders.tabular import TabularEmbedder
from tabformer.tokenizers import TabularTokenizer


def with_lima(X):
    """``X`` with every ``oslo`` renamed ``lima``, a city the first fit never saw."""
    return X.assign(city=X["city"].replace({"oslo": "lima"}))


class TableAtTrainBegin(Callback):
    """Keeps a copy of the category table as the continued fit starts (after any growth)."""

    def on_train_begin(self, net, **kwargs):
        self.table = net.module_.embedder.category_embedding.weight.detach().clone()


# ------------------------------------------------------------------ the parts
def test_the_tokenizer_appends_new_categories_and_keeps_old_ids():
    X = pd.DataFrame({"city": ["rome", "paris", None], "size": ["s", "m", "s"]})
    tokenizer = TabularTokenizer().fit(X)
    before = tokenizer.transform(X)["cat_ids"]
    new = pd.DataFrame({"city": ["lima", "rome", "athens", None], "size": ["m", "s", "m", "s"]})
    assert tokenizer.add_categories(new) == {"city": ["athens", "lima"]}
    assert list(tokenizer.categories_[0]) == ["paris", "rome", "athens", "lima"]
    assert list(tokenizer.categories_[1]) == ["m", "s"]
    np.testing.assert_array_equal(tokenizer.transform(X)["cat_ids"], before)
    assert tokenizer.transform(new)["cat_ids"][:, 0].tolist() == [5, 3, 4, 0]
    assert tokenizer.embedder_spec()["cardinalities"] == [6, 4]
    assert tokenizer.add_categories(new) == {}  # nothing new the second time


def test_the_embedder_grows_each_column_and_copies_old_rows_to_their_new_offsets():
    torch.manual_seed(0)
    embedder = TabularEmbedder([4, 3], n_numeric=0, d_model=8)
    old = embedder.category_embedding.weight.detach().clone()
    ids = torch.tensor([[2, 2], [3, 1], [0, 2]])
    tokens_before, _ = embedder(ids, torch.zeros(3, 0), torch.zeros(3, 0, dtype=torch.bool))
    positions = embedder.grow_categories([6, 5])
    assert positions.tolist() == [0, 1, 2, 3, 6, 7, 8]
    assert embedder.category_offsets.tolist() == [0, 6]
    assert embedder.category_embedding.weight.shape == (11, 8)
    assert torch.equal(embedder.category_embedding.weight[positions], old)
    tokens_after, _ = embedder(ids, torch.zeros(3, 0), torch.zeros(3, 0, dtype=torch.bool))
    assert torch.equal(tokens_after, tokens_before)  # the same ids embed the same
    fresh = embedder.category_embedding.weight[[4, 5, 9, 10]]
    assert fresh.abs().max() <= 8**-0.5 and fresh.std() > 0  # drawn as at init, not zeros or copies
    with pytest.raises(ValueError, match=r"cannot grow category id spaces of sizes \[6, 5\] to \[6, 4\]"):
        embedder.grow_categories([6, 4])


# --------------------------------------------------------------- the estimator
def test_growing_keeps_old_predictions_and_the_optimizer_state_of_old_rows():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, random_state=0, new_categories="grow", ensemble_size=1).fit(X, y)
    proba = clf.predict_proba(X)
    old_param = clf.module_.embedder.category_embedding.weight
    old_moment = clf.optimizer_.state[old_param]["exp_avg"].clone()
    assert grow_for_new_categories(clf, with_lima(X)) == {"city": ["lima"]}
    np.testing.assert_array_equal(clf.predict_proba(X), proba)  # exactly, before any training
    new_param = clf.module_.embedder.category_embedding.weight
    assert new_param.shape[0] == old_param.shape[0] + 1
    assert any(p is new_param for group in clf.optimizer_.param_groups for p in group["params"])
    assert not any(p is old_param for group in clf.optimizer_.param_groups for p in group["params"])
    moment = clf.optimizer_.state[new_param]["exp_avg"]
    lima_row = 3 + 2  # city's offset 0, fitted ids 2..4 (oslo, paris, rome), lima gets 5
    assert torch.equal(moment[[0, 1, 2, 3, 4]], old_moment[[0, 1, 2, 3, 4]])
    assert torch.equal(moment[6:], old_moment[5:])  # member's rows moved one down
    assert torch.equal(moment[lima_row], torch.zeros_like(moment[lima_row]))
    assert clf.tokenizer_.transform(with_lima(X).head(20))["cat_ids"][:, 0].max() == 5


def test_a_warm_refit_with_grow_learns_the_new_category():
    X, y = make_table()
    at_begin = TableAtTrainBegin()
    clf = TabFormerClassifier(
        **TINY, warm_start=True, random_state=0, new_categories="grow", ensemble_size=1, callbacks=[("at_begin", at_begin)]
    ).fit(X, y)
    n_rows = clf.module_.embedder.category_embedding.num_embeddings
    new = with_lima(X)
    clf.fit(new, y)
    table = clf.module_.embedder.category_embedding.weight.detach()
    assert table.shape[0] == n_rows + 1 and at_begin.table.shape == table.shape
    lima = clf.tokenizer_.transform(new[new["city"] == "lima"].head(1))["cat_ids"][0, 0]
    assert lima == 5 and list(clf.tokenizer_.categories_[0]) == ["oslo", "paris", "rome", "lima"]
    assert not torch.allclose(table[lima], at_begin.table[lima])  # its own row, trained
    assert clf.predict(new).shape == (len(new),)


def test_a_grown_model_round_trips_through_save_and_load(tmp_path):
    X, y = make_table()
    target = (X["age"].fillna(40) + 100).to_numpy()
    reg = TabFormerRegressor(**TINY, warm_start=True, random_state=0, new_categories="grow").fit(X, target)
    new = with_lima(X)
    reg.fit(new, target)
    reg.save(tmp_path / "grown")
    loaded = tabformer.load(tmp_path / "grown")
    assert loaded.new_categories == "grow"
    assert list(loaded.tokenizer_.categories_[0]) == ["oslo", "paris", "rome", "lima"]
    np.testing.assert_allclose(loaded.predict(new), reg.predict(new), rtol=1e-6)


def test_error_refuses_new_categories_and_a_bad_value_is_named():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, warm_start=True, random_state=0, new_categories="error").fit(X, y)
    with pytest.raises(ValueError, match=r"categories the first fit never saw, in column\(s\) \['city'\].*warm_start=False"):
        clf.fit(with_lima(X), y)
    bad = TabFormerClassifier(**TINY, new_categories="learn")
    with pytest.raises(InvalidParameterError, match=r"'new_categories' parameter of TabFormerClassifier.*Got 'learn'") as error:
        bad.fit(X, y)
    assert "'error'" in str(error.value) and "'grow'" in str(error.value)  # the allowed values, in a set's order


def test_new_categories_is_a_plain_parameter():
    clf = TabFormerClassifier(new_categories="grow")
    assert clf.get_params()["new_categories"] == "grow"
    assert clone(clf).new_categories == "grow"
    assert TabFormerRegressor().set_params(new_categories="grow").new_categories == "grow"
    assert TabFormerClassifier().new_categories == "error"


def test_a_mixed_model_refuses_new_categories_with_either_choice():
    # A text column beside the table makes the input mixed: its categories are checked (they once slipped
    # through as "unseen"), and growing, which only table models can do, says so.
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"title": [f"item {w}" for w in rng.choice(["red", "blue"], 60)], "brand": rng.choice(["a", "b"], 60)})
    y = (X["brand"] == "a").to_numpy().astype(int)
    new = X.assign(brand=X["brand"].replace({"b": "z"}))
    tiny = dict(TINY, tokenizer__text__vocab_size=40, tokenizer__text__min_frequency=1, warm_start=True, random_state=0)
    clf = TabFormerClassifier(**tiny).fit(X, y)
    with pytest.raises(ValueError, match=r"never saw, in column\(s\) \['brand'\]"):
        clf.fit(new, y)
    clf.set_params(new_categories="grow")
    with pytest.raises(ValueError, match="new_categories='grow' learns new categories of table inputs.*MixedTokenizer"):
        clf.fit(new, y)
    clf.fit(X, y)  # its own categories continue fine


def test_growing_does_not_warn_that_no_value_is_a_known_category():
    # The tokenize before the growth warned "none of its values is a category fit saw ... the column tells the model
    # nothing", though the categories were then learned
    import warnings

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100), "c": rng.choice(["x", "y"], 100)})
    y = rng.integers(0, 2, 100)
    clf = TabFormerClassifier(**TINY, ensemble_size=1, new_categories="grow").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.partial_fit(X.assign(c=rng.choice(["u", "v"], 100)), y)
    assert {"u", "v"} <= set(clf.tokenizer_.categories_[0])
