"""The worked examples of docs/architecture.md run as written (so the page cannot rot):
a new tokenizer with its embedder, and a new pretraining objective."""

import pathlib
import re

import numpy as np
import pytest
from conftest import make_table

from tabformer.nn.embedders import EMBEDDERS
from tabformer.pretraining import OBJECTIVES
from tabformer.tokenizers import TOKENIZERS

PAGE = pathlib.Path(__file__).parent.parent / "docs" / "architecture.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture
def registries():
    before = dict(TOKENIZERS), dict(EMBEDDERS), dict(OBJECTIVES)
    yield
    for registry, saved in zip((TOKENIZERS, EMBEDDERS, OBJECTIVES), before):
        registry.clear()
        registry.update(saved)


def test_page_has_both_examples():
    blocks = _blocks()
    assert len(blocks) == 2 and "register_tokenizer" in blocks[0] and "register_objective" in blocks[1]


def test_new_tokenizer_example_runs(registries):
    X, y = make_table(n=80)
    scope = {"X": X, "y": y}
    exec(compile(_blocks()[0], str(PAGE), "exec"), scope)
    clf = scope["clf"]
    assert type(clf.tokenizer_).__name__ == "HashedCategoryTokenizer"
    assert type(clf.module_.embedder).__name__ == "HashedCategoryEmbedder"
    assert clf.predict_proba(X).shape == (80, 2) and np.isfinite(clf.predict_proba(X)).all()
    columns = clf.explain(X[:1], level="column")
    assert set(columns["column"]) == set(X.columns)


def test_new_objective_example_runs(registries):
    X, _ = make_table(n=400)
    y_few = X["age"].fillna(40).to_numpy()[:40] * 2.0
    scope = {"X_unlabeled": X, "X": X[:80], "X_few": X[:40], "y_few": y_few}
    exec(compile(_blocks()[1], str(PAGE), "exec"), scope)
    pre, reg = scope["pre"], scope["reg"]
    assert scope["Z"].shape == (80, 64) and np.isfinite(scope["Z"]).all()
    losses = pre.history_[:, "train_loss"]
    assert np.isfinite(losses).all() and np.mean(losses[-3:]) < 0.9 * losses[0]  # the hidden cells are learned
    keys = pre.module_.state_dict().keys()
    assert {key.split(".")[0] for key in keys} == {"embedder", "encoder", "head"}
    assert reg.predict(X[:5]).shape == (5,)
