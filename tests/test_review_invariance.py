"""Answers that depend on what they should not: the units of a column, a row's batch, its neighbours.

Found by a review of invariance and numeric extremes; each test failed before its fix.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import tabformer
from tabformer import TabFormerClassifier, TabFormerTagger
from tabformer.tokenizers import TabularTokenizer

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, verbose=0, random_state=0)


@pytest.mark.parametrize(
    "transform, unit", [("quantile", 1e-8), ("quantile", 1e-12), ("quantile", 1e-310), ("standard", 1e-200), ("standard", 1e-310)]
)
def test_the_scalers_read_a_column_of_tiny_values_as_they_read_the_same_column_in_larger_units(transform, unit):
    # sklearn's QuantileTransformer sends values within an absolute 1e-7 of the training
    # minimum to its lowest output: every value of x * 1e-8 became one token (a model at
    # chance); StandardScaler read a column whose variance underflows as constant (all 0)
    x = np.random.default_rng(0).normal(size=200)
    tokens = {}
    for scale in (1.0, unit):
        tokenizer = TabularTokenizer(numeric_transform=transform).fit(pd.DataFrame({"a": x * scale}))
        tokens[scale] = tokenizer.transform(pd.DataFrame({"a": x * scale}))["num_values"][:, 0]
    assert len(np.unique(tokens[unit])) == len(x)
    np.testing.assert_allclose(tokens[unit], tokens[1.0], atol=1e-5)


def test_a_model_fitted_on_a_column_of_tiny_values_learns_it_and_round_trips(tmp_path):
    x = np.random.default_rng(0).normal(size=200)
    X, y = pd.DataFrame({"a": x * 1e-8}), (x > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = TabFormerClassifier(max_epochs=10, validation_fraction=None, **TINY).fit(X, y)
    assert (net.predict(X) == y).mean() > 0.9  # 0.51 before: one token for every row
    net.save(tmp_path / "m")
    np.testing.assert_array_equal(tabformer.load(tmp_path / "m").predict_proba(X), net.predict_proba(X))
    scaler = net.tokenizer_.scaler_
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X.to_numpy())), X.to_numpy(), rtol=1e-6)


def test_tagger_probabilities_do_not_depend_on_the_inference_batch_size():
    # padding positions held the softmax of whatever the batch's longest sentence padded to
    rng = np.random.default_rng(0)
    words = ["good", "bad", "film", "plot", "dull", "actor"]
    sentences = [list(rng.choice(words, size=k)) for k in rng.integers(1, 10, size=40)]
    tags = [["B" if word in ("good", "bad") else "O" for word in sentence] for sentence in sentences]
    tagger = TabFormerTagger(max_epochs=1, **TINY).fit(sentences, tags)
    proba, batch = tagger.predict_subword_proba(sentences)
    tagger.set_params(iterator_valid__batch_size=3)
    np.testing.assert_allclose(tagger.predict_subword_proba(sentences)[0], proba, atol=1e-6)
    assert not proba[batch["attention_mask"] == 0].any()


def test_the_quantile_transform_keeps_every_value_of_a_heavy_tailed_column_apart():
    # in units of the range, a column of 0..300 with one 1e10 outlier read as two tokens
    x = np.r_[np.random.default_rng(0).integers(0, 300, 500).astype(float), 1e10]
    tokenizer = TabularTokenizer().fit(pd.DataFrame({"a": x}))
    tokens = tokenizer.transform(pd.DataFrame({"a": x}))["num_values"][:, 0]
    assert len(np.unique(tokens)) == len(np.unique(x))
