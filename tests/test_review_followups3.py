"""Follow-ups of a review: each case answered wrongly, or failed, before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer._stream import open_source

pq = pytest.importorskip("pyarrow.parquet")

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    """A hive-partitioned Parquet folder: ``year`` lives in the folder names only."""
    root = tmp_path_factory.mktemp("hive") / "data"
    rng = np.random.default_rng(0)
    for year in (2020, 2021):
        folder = root / f"year={year}"
        folder.mkdir(parents=True)
        x = rng.normal(size=30)
        pd.DataFrame({"x": x, "label": (x > 0).astype(int)}).to_parquet(folder / "part-0.parquet", index=False)
    return str(root)


def test_a_hive_partitioned_folder_is_read_with_its_partition_columns_as_pandas_reads_it(hive):
    source, _ = open_source(hive)
    rows, _ = source.sample(10**6, seed=0)
    pd.testing.assert_frame_equal(rows, pd.read_parquet(hive))  # year included, as a category


def test_fit_and_predict_on_a_hive_partitioned_folder_keep_the_partition_column(hive):
    clf = TabFormerClassifier(**SMALL).fit(hive, "label")
    assert list(clf.feature_names_in_) == ["x", "year"]
    frame = pd.read_parquet(hive).drop(columns="label")
    np.testing.assert_allclose(clf.predict_proba(hive), clf.predict_proba(frame), atol=1e-6)
    in_memory = TabFormerClassifier(**SMALL).fit(frame, pd.read_parquet(hive)["label"])
    np.testing.assert_allclose(in_memory.predict_proba(hive), in_memory.predict_proba(frame), atol=1e-6)


def test_explain_reads_a_parquet_path_as_predict_does(hive, tmp_path):
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"price": rng.normal(size=30), "colour": rng.choice(["red", "blue"], 30)})
    clf = TabFormerClassifier(**SMALL).fit(X, (X["price"] > 0).astype(int))
    path = tmp_path / "rows.parquet"
    X.iloc[:5].to_parquet(path, index=False)
    pd.testing.assert_frame_equal(clf.explain(path), clf.explain(pd.read_parquet(path)))
    pd.testing.assert_frame_equal(clf.explain(str(path), level="column"), clf.explain(pd.read_parquet(path), level="column"))
    # A folder holding the target column: as predict does, explain reads only the columns fit saw.
    clf = TabFormerClassifier(**SMALL).fit(hive, "label")
    pd.testing.assert_frame_equal(clf.explain(hive, layer=-1), clf.explain(pd.read_parquet(hive).drop(columns="label"), layer=-1))
