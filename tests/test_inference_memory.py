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
    tiny = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, batch_size=8)
    return TabFormerClassifier(verbose=0, random_state=0, **tiny).fit(X, y), X


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
    # 70 rows in batches of 8: nine outputs, never more than the one being copied alive;
    # the old list-then-concatenate held all nine (and a million-row predict held 31,250).
    assert len(most_alive) == 9 and max(most_alive) <= 1
    assert type(proba) is np.ndarray and proba.shape == (70, 2)
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=1e-6)


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
