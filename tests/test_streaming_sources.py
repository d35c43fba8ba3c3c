"""Streamed Parquet input read as its file holds it: its columns only, its dates as dates, its missing values noted."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer._stream import open_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


def test_a_single_file_under_a_hive_style_folder_gains_no_partition_column(tmp_path):
    # pyarrow found year=2020 in the file's path and added a column "year" the file does not hold.
    folder = tmp_path / "data" / "year=2020"
    folder.mkdir(parents=True)
    x = np.random.default_rng(0).normal(size=40)
    path = folder / "part-0.parquet"
    pd.DataFrame({"x": x, "label": (x > 0).astype(int)}).to_parquet(path, index=False)
    source, _ = open_source(path)
    assert source.columns == ["x", "label"] == list(pd.read_parquet(path).columns)
    clf = TabFormerClassifier(**SMALL).fit(str(path), "label")
    assert list(clf.feature_names_in_) == ["x"]
    np.testing.assert_allclose(clf.predict_proba(path), clf.predict_proba(pd.read_parquet(path).drop(columns="label")))
    # The folder above it is hive-partitioned: read as pandas reads it, with the partition column.
    assert open_source(tmp_path / "data")[0].columns == ["x", "label", "year"]
    assert list(TabFormerClassifier(**SMALL).fit(str(tmp_path / "data"), "label").feature_names_in_) == ["x", "year"]
