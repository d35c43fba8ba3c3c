"""Streamed Parquet input read as its file holds it: its columns only, its dates as dates, its missing values noted."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer._stream import open_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

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


def test_a_model_expecting_the_partition_column_predicts_on_the_single_file_still(tmp_path):
    # A model fitted on the file before it lost its partition column (or on its folder) has "year"
    # among its features: predict on the file refused it as "missing column(s) ['year']".
    folder = tmp_path / "data" / "year=2020"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    path = folder / "part-0.parquet"
    pd.DataFrame({"x": x, "colour": rng.choice(["red", "blue"], 40), "label": (x > 0).astype(int)}).to_parquet(path, index=False)
    clf = TabFormerClassifier(**SMALL).fit(str(tmp_path / "data"), "label")
    assert list(clf.feature_names_in_) == ["x", "colour", "year"]
    frame = pd.read_parquet(tmp_path / "data").drop(columns="label")  # as pandas reads the folder: year included
    np.testing.assert_allclose(clf.predict_proba(path), clf.predict_proba(frame), rtol=1e-5)
    assert clf.score(path, "label") == clf.score(frame, (x > 0).astype(int))
    # Only the partition columns the model expects are read: one without "year" still sees the file's own.
    assert list(TabFormerClassifier(**SMALL).fit(frame.drop(columns="year"), x > 0).predict(path).shape) == [40]


@pytest.fixture
def dated(tmp_path):
    """A Parquet file of every date and time type, each missing a value, and the same rows in memory as datetimes."""
    import datetime

    rng = np.random.default_rng(0)
    days = [datetime.date(2020, 1, 1) + datetime.timedelta(days=int(d)) for d in rng.integers(0, 900, 60)]
    days[5] = None
    x = rng.normal(size=60)
    times = pd.to_datetime(days) + pd.to_timedelta(rng.integers(0, 86400, 60), unit="s")
    table = pa.table(
        {
            "x": x,
            "d32": pa.array(days, pa.date32()),
            "d64": pa.array(days, pa.date64()),
            "ts": pa.array(times),
            "tsz": pa.array(times.tz_localize("Asia/Tokyo")),
            "label": (x > 0).astype(int),
        }
    )
    path = tmp_path / "dated.parquet"
    pq.write_table(table, path, row_group_size=20)
    frame = pd.read_parquet(path)
    in_memory = frame.assign(d32=pd.to_datetime(frame["d32"]), d64=pd.to_datetime(frame["d64"]))
    return str(path), in_memory.drop(columns="label"), frame["label"]


def test_parquet_dates_stream_as_dates_as_the_same_datetimes_in_memory(dated):
    # date32 / date64 (datetime.date cells from pandas) streamed as categories: one id a day, new days "unseen".
    path, X, y = dated
    settings = dict(SMALL, validation_fraction=None, iterator_train__shuffle=False, fit_sample_size=10_000, ensemble_size=1)
    streamed = TabFormerClassifier(**settings).fit(path, "label")
    in_memory = TabFormerClassifier(**settings).fit(X, y)
    assert streamed.tokenizer_.categorical_columns_ == in_memory.tokenizer_.categorical_columns_ == []
    assert streamed.tokenizer_.datetime_parts_ == in_memory.tokenizer_.datetime_parts_
    assert set(streamed.tokenizer_.datetime_parts_) == {"d32", "d64", "ts", "tsz"}
    assert streamed.history[:, "train_loss"] == pytest.approx(in_memory.history[:, "train_loss"], abs=1e-6)
    np.testing.assert_allclose(streamed.predict_proba(path), in_memory.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(in_memory.predict_proba(path), in_memory.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(streamed.predict_proba(ds.dataset(path)), streamed.predict_proba(X), atol=1e-6)


def test_a_model_fitted_on_date_objects_predicts_on_the_parquet_file_as_before(dated):
    # Fitted on pandas' datetime.date cells (categories), it reads the file's dates as such objects still.
    path, _, y = dated
    frame = pd.read_parquet(path).drop(columns="label")
    with pytest.warns(UserWarning, match="holds only dates"):
        clf = TabFormerClassifier(**SMALL).fit(frame, y)
    assert clf.tokenizer_.categorical_columns_ == ["d32", "d64"]
    np.testing.assert_allclose(clf.predict_proba(path), clf.predict_proba(frame), atol=1e-6)


@pytest.mark.timeout(60)
def test_a_streamed_fit_notes_its_missing_values_when_workers_read_them(tmp_path):
    # Noted in the DataLoader's worker process, the note was lost: predict warned of "missing values never trained".
    import warnings

    from tabformer import TabFormerRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.normal(40, 5, 120), "city": rng.choice(["rome", "oslo"], 120)})
    X.loc[119, "age"] = np.nan  # only in rows the tokenizer's sample of 10 missed
    X.loc[118, "city"] = None
    path = tmp_path / "late_missing.parquet"
    X.assign(target=np.linspace(0.0, 1.0, 120)).to_parquet(path, row_group_size=40)
    settings = dict(SMALL, validation_fraction=None, fit_sample_size=10, batch_size=32, iterator_train__shuffle=False)
    reg = TabFormerRegressor(**settings, iterator_train__num_workers=1).fit(path, "target")
    assert reg.tokenizer_.had_missing_ == {"age": True, "city": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.predict(X)


def test_a_streamed_fit_without_workers_needs_no_shared_memory(tmp_path, monkeypatch):
    # The missing-value note went to shared memory on every streamed fit: where /dev/shm is missing
    # (AWS Lambda, some sandboxes) a fit with num_workers=0, which has no worker to share it with, failed.
    import torch

    from tabformer import TabFormerRegressor

    def no_shared_memory(self):
        raise RuntimeError("unable to open shared memory object </torch_1_1> in read-write mode: Function not implemented (38)")

    monkeypatch.setattr(torch.Tensor, "share_memory_", no_shared_memory)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.normal(40, 5, 120), "city": rng.choice(["rome", "oslo"], 120)})
    X.loc[119, "age"] = np.nan  # only in rows the tokenizer's sample of 10 missed
    path = tmp_path / "late_missing.parquet"
    X.assign(target=np.linspace(0.0, 1.0, 120)).to_parquet(path, row_group_size=40)
    settings = dict(SMALL, validation_fraction=None, fit_sample_size=10, batch_size=32, iterator_train__shuffle=False)
    reg = TabFormerRegressor(**settings).fit(path, "target")
    assert reg.tokenizer_.had_missing_["age"]  # noted in the fitting process itself
