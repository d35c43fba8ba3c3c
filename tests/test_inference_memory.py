"""Prediction gathers per-row outputs into arrays allocated once (flat memory on big inputs)."""

import weakref

import numpy as np
import pytest
from conftest import make_table

from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.estimators import _inference


@pytest.fixture(scope="module")
def fitted():
    X, y = make_table(70)
    tiny = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2)
    tiny.update(batch_size=8, iterator_valid__batch_size=8)
    return TabFormerClassifier(verbose=0, random_state=0, ensemble_size=1, **tiny).fit(X, y), X


def test_batch_outputs_are_released_as_soon_as_they_are_copied(fitted):
    clf, X = fitted
    refs = []
    most_alive = []

    def forward(inputs):
        out = clf.module_(**inputs).softmax(-1).detach().cpu().numpy()
        most_alive.append(sum(ref() is not None for ref in refs))
        refs.append(weakref.ref(out))
        return out

    proba = clf.collect(X, forward)
    # 70 rows in batches of 8 (the user's iterator_valid__batch_size, over the resolved 512):
    # nine outputs, never more than the one being copied alive;
    # the old list-then-concatenate held all nine (and a million-row predict held 31,250).
    assert len(most_alive) == 9 and max(most_alive) <= 1
    assert type(proba) is np.ndarray and proba.shape == (70, 2)
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=1e-6)


def test_inference_batches_are_larger_than_training_ones_for_short_rows():
    X, y = make_table(70)
    tiny = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)
    clf = TabFormerClassifier(batch_size=8, **tiny).fit(X, y)
    n_tokens = clf.tokenizer_.n_tokens_
    expected = min(_inference.INFERENCE_MAX_ROWS, _inference.INFERENCE_FLOATS_PER_BATCH // ((n_tokens + 1) * 16))
    assert expected > 8 and clf.resolved_params_["iterator_valid__batch_size"] == expected
    assert "iterator_valid__batch_size" not in clf.get_params()  # resolved, never written into the parameters
    batches = []
    forward = clf.module_.forward
    clf.module_.forward = lambda **inputs: batches.append(len(next(iter(inputs.values())))) or forward(**inputs)
    proba = clf.predict_proba(X)
    assert batches == [70]  # one batch: 70 rows < the resolved size
    clf.set_params(iterator_valid__batch_size=8)  # the user's setting wins over the resolved one
    batches.clear()
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-6)
    assert batches == [8] * 8 + [6]
    big = TabFormerClassifier(batch_size=2048, **tiny).fit(X, y)  # never below the training batch
    assert big.resolved_params_["iterator_valid__batch_size"] == 2048


@pytest.mark.parametrize("count", [None, 30, 100])
def test_unknown_or_wrong_row_counts_still_give_every_row_once(fitted, monkeypatch, count):
    clf, X = fitted
    expected_proba = clf.predict_proba(X)
    expected_features, expected_maps = clf.forward_features(X, return_attention=True)
    # None: rows unknown up front (concatenated); 30: more rows come than counted; 100: fewer.
    monkeypatch.setattr(_inference, "_count_rows", lambda X: count)
    np.testing.assert_allclose(clf.predict_proba(X), expected_proba, atol=1e-6)
    features, maps = clf.forward_features(X, return_attention=True)
    assert features.shape == (70, 16) and len(maps) == len(expected_maps)
    np.testing.assert_allclose(features, expected_features, atol=1e-5)
    for layer, expected in zip(maps, expected_maps):
        assert layer.shape == expected.shape
        np.testing.assert_allclose(layer, expected, atol=1e-5)


def test_rows_are_counted_without_reading_the_data(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    X, _ = make_table(45)
    pq.write_table(pa.Table.from_pandas(X, preserve_index=False), tmp_path / "rows.parquet", row_group_size=10)
    assert _inference._count_rows(ds.dataset(tmp_path / "rows.parquet", format="parquet")) == 45
    assert _inference._count_rows(X) == 45
    assert _inference._count_rows({"ids": np.zeros((12, 3))}) == 12
    assert _inference._count_rows(object()) is None


def test_regressor_predictions_through_the_preallocated_path_match_chunked_ones():
    X, _ = make_table(50)
    y = np.arange(50.0) * 3 + 1000.0
    reg = TabFormerRegressor(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, verbose=0)
    reg.set_params(random_state=0).fit(X, y)
    whole = reg.predict(X)
    reg.inference_chunk_rows = 9
    assert whole.shape == (50,) and np.isfinite(whole).all()
    np.testing.assert_allclose(reg.predict(X), whole, rtol=1e-6)
