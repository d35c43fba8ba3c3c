"""Review of the holdout planned before the tokenizer's fit, fused Adam on the CPU and the table recipe's 4 heads."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY

from tabformer import TabFormerClassifier


def _table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.exponential(size=n), "c": rng.choice(["x", "y", "z"], n)})
    return X, (X["a"] > 0.3).astype(int).to_numpy()


def test_a_failed_fit_leaves_no_planned_holdout_for_a_later_partial_fit(monkeypatch):
    X, y = _table()
    settings = dict(TINY, max_epochs=1, random_state=0, validation_fraction=0.25)
    clf = TabFormerClassifier(ensemble_size=1, **settings).fit(X, y)
    clf.set_params(memory_limit=1e-9)
    with pytest.raises(MemoryError):
        clf.fit(X, y)  # fails after the tokenizer's fit planned its holdout
    assert "_planned_holdout" not in vars(clf)
    clf.set_params(memory_limit="auto")
    seen = []
    real_split = TabFormerClassifier.get_split_datasets

    def spy_split(self, X, y=None, **kwargs):
        train, valid = real_split(self, X, y, **kwargs)
        seen.append(np.asarray(valid.indices))
        return train, valid

    monkeypatch.setattr(TabFormerClassifier, "get_split_datasets", spy_split)
    X2, y2 = X.iloc[::-1].reset_index(drop=True), y[::-1].copy()  # as many rows, other labels per row
    clf.partial_fit(X2, y2)
    fresh = TabFormerClassifier(ensemble_size=1, **settings).fit(X, y).partial_fit(X2, y2)
    assert fresh is not None and len(seen) == 3
    np.testing.assert_array_equal(np.sort(seen[0]), np.sort(seen[2]))  # the seeded split of X2, not the failed fit's


@pytest.mark.parametrize("d_model, hint", [(10, "encoder__n_heads=2"), (6, "encoder__n_heads=3")])
def test_a_d_model_the_recipes_heads_do_not_divide_names_them_before_the_tokenizers_fit(d_model, hint, monkeypatch):
    X, y = _table(60)
    fitted = []
    monkeypatch.setattr("tabformer.tokenizers.TabularTokenizer.fit", lambda self, *a, **k: fitted.append(1) or self)
    clf = TabFormerClassifier(encoder__d_model=d_model, encoder__n_layers=1, max_epochs=1, verbose=0)
    with pytest.raises(ValueError, match="the recipe's") as error:
        clf.fit(X, y)
    assert "encoder__n_heads=4" in str(error.value) and hint in str(error.value)
    assert not fitted  # refused before the (slow) tokenizer fit
