"""Streamed fit: Parquet files and image folders read in pieces, never whole (docs/scale.md)."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_table

from tabformer import TabFormerClassifier, TabFormerRegressor, TabularTokenizer, _stream
from tabformer._stream import RowSource, StreamedRows, open_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

SETTINGS = dict(
    encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=2, batch_size=16, verbose=0, random_state=0
)


def write(path, frame, row_group_size=50):
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=row_group_size)
    return str(path)


@pytest.fixture
def parquet(tmp_path):
    X, y = make_table(300)
    return write(tmp_path / "table.parquet", X.assign(label=y)), X, y


def test_streamed_fit_equals_the_in_memory_fit_without_shuffling(parquet):
    path, X, y = parquet
    frame = pd.read_parquet(path)  # the dtypes Parquet gives, for both fits
    settings = dict(SETTINGS, validation_fraction=None, iterator_train__shuffle=False, fit_sample_size=10_000)
    in_memory = TabFormerClassifier(ensemble_size=1, **settings).fit(frame.drop(columns="label"), frame["label"])
    streamed = TabFormerClassifier(ensemble_size=1, **settings).fit(path, "label")
    assert streamed.history[:, "train_loss"] == pytest.approx(in_memory.history[:, "train_loss"], abs=1e-6)
    np.testing.assert_allclose(streamed.predict_proba(X), in_memory.predict_proba(X), atol=1e-6)
    assert list(streamed.feature_names_in_) == list(X.columns)  # the target column is no feature


def test_streamed_holdout_is_the_in_memory_holdout_and_trains_with_early_stopping(parquet):
    path, X, y = parquet
    clf = TabFormerClassifier(**SETTINGS, validation_fraction=0.2).fit(ds.dataset(path), y)
    assert {"valid_loss", "valid_acc"} <= set(clf.history[-1])
    train, valid = clf.get_split_datasets(
        clf._stream(RowSource.from_arrow(ds.dataset(path)), clf._encode_target(y), None), clf._encode_target(y)
    )
    memory = TabFormerClassifier(**SETTINGS, validation_fraction=0.2)
    memory._fit_target(y, len(y))
    tokens = TabularTokenizer().fit(X).transform(X)
    _, valid_subset = memory.get_split_datasets(tokens, memory._encode_target(y))
    assert sorted(np.flatnonzero(valid.rows)) == sorted(valid_subset.indices)
    assert not (train.rows & valid.rows).any() and (train.rows | valid.rows).all()


def test_streamed_fit_never_holds_more_than_a_piece_and_a_buffer(tmp_path, monkeypatch):
    X, y = make_table(2000, seed=1)
    path = write(tmp_path / "big.parquet", X.assign(label=y), row_group_size=100)
    seen = {"read": [], "fit": [], "transform": []}
    read_piece = _stream.read_piece
    monkeypatch.setattr(_stream, "read_piece", lambda piece, *args: seen["read"].append(piece.rows) or read_piece(piece, *args))
    fit, transform = TabularTokenizer.fit, TabularTokenizer.transform
    monkeypatch.setattr(
        TabularTokenizer,
        "fit",
        lambda self, X, y=None, sample_weight=None: seen["fit"].append(len(X)) or fit(self, X, y, sample_weight),
    )
    monkeypatch.setattr(TabularTokenizer, "transform", lambda self, X: seen["transform"].append(len(X)) or transform(self, X))
    clf = TabFormerClassifier(**SETTINGS, fit_sample_size=300)
    clf.stream_buffer_rows = 256
    clf.fit(path, "label")
    assert seen["fit"] == [300]  # the tokenizer saw the sample only
    assert max(seen["read"]) == 100  # one row group at a time
    assert max(seen["transform"]) <= 256 + 100  # the buffer (plus the piece that filled it), never all 2000
    assert sum(seen["transform"]) >= 2 * 2000 * 0.9  # yet every training row was tokenized, each epoch
    assert clf.predict(path).shape == (2000,)


def test_every_row_once_per_epoch_across_workers_and_shuffled(tmp_path):
    X, _ = make_table(230, seed=2)
    path = write(tmp_path / "rows.parquet", X, row_group_size=40)
    source = RowSource.from_arrow(ds.dataset(path))
    rows = np.ones(230, dtype=bool)
    rows[::7] = False  # a training split
    stream = StreamedRows(source, TabularTokenizer().fit(X), np.arange(230), rows=rows, batch_size=16, shuffle=True)
    stream.buffer_rows = 64
    for workers in (0, 2):
        stream.workers = workers
        loader = torch.utils.data.DataLoader(stream, batch_size=None, num_workers=workers)
        batches = [[y.numpy() for _, y in loader] for _ in range(2)]
        assert max(map(len, batches)) <= len(stream)  # len bounds the batches (the LR schedule counts on it)
        epochs = [np.concatenate(epoch) for epoch in batches]
        for seen in epochs:
            assert sorted(seen) == list(np.flatnonzero(rows))
        assert list(epochs[0]) != list(epochs[1])  # a new order each epoch
        assert list(epochs[0]) != sorted(epochs[0])


def test_streamed_partial_fit_continues_and_regressor_streams(parquet):
    path, X, _ = parquet
    frame = pd.read_parquet(path).assign(target=lambda f: f["age"].fillna(40) / 10)
    reg = TabFormerRegressor(**SETTINGS, validation_fraction=None, iterator_train__num_workers=2)
    reg.fit(ds.dataset(pa.Table.from_pandas(frame)), "target")
    assert reg.predict(frame.drop(columns="target")).shape == (300,)
    clf = TabFormerClassifier(**SETTINGS, validation_fraction=None).fit(path, "label")
    clf.partial_fit(path, "label")
    assert len(clf.history) == 4


def test_image_folder_streams_with_folder_labels(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for label, level in (("dark", 40), ("light", 200)):
        (tmp_path / label).mkdir()
        for i in range(12):
            pixels = np.clip(rng.normal(level, 20, (8, 8)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp_path / label / f"{i}.png")
    clf = TabFormerClassifier(**SETTINGS, fit_sample_size=5, validation_fraction=None, tokenizer__patch_size=4)
    clf.fit(tmp_path)
    assert list(clf.classes_) == ["dark", "light"]
    paths = sorted(str(p) for p in tmp_path.rglob("*.png"))
    assert clf.predict(str(tmp_path)).shape == (24,)
    np.testing.assert_allclose(clf.predict_proba(str(tmp_path)), clf.predict_proba(paths), atol=1e-6)
    source, _ = open_source(paths, None)
    assert source.kind == "images" and source.n_rows == 24


@pytest.mark.parametrize(
    "X, y, message",
    [
        ("table", "nope", "not one of the Parquet columns"),
        ("table", None, "target column's name"),
        ("table", np.zeros(5), "y has 5"),
        ("missing", "label", "does not exist"),
        ("empty", "label", "neither Parquet files nor images"),
    ],
)
def test_streamed_fit_refuses_bad_input_clearly(parquet, tmp_path, X, y, message):
    path, _, _ = parquet
    (tmp_path / "void").mkdir()
    X = {"table": path, "missing": str(tmp_path / "missing.parquet"), "empty": str(tmp_path / "void")}[X]
    with pytest.raises(ValueError, match=message):
        TabFormerClassifier(**SETTINGS).fit(X, y)


def test_streamed_fit_refuses_a_custom_split(parquet):
    path, _, _ = parquet
    with pytest.raises(ValueError, match="train_split='auto' or None"):
        TabFormerClassifier(**SETTINGS, train_split=lambda X, y: (X, X)).fit(path, "label")


def test_streamed_texts_train_without_the_recipes_length_grouping(tmp_path):
    # The text recipes group batches by length, which needs in-memory tokens: a streamed text
    # fit failed on the recipe's own setting. It is dropped for streams; the user's is refused.
    words = ["good", "great", "bad", "awful", "fine", "dull"]
    texts = [f"the film was {words[i % 6]}, review {i}" + " indeed" * (i % 5) for i in range(120)]
    path = write(tmp_path / "reviews.parquet", pd.DataFrame({"review": texts, "label": [i % 6 < 3 for i in range(120)]}))
    clf = TabFormerClassifier(**SETTINGS, tokenizer__text__vocab_size=200, fit_sample_size=64).fit(path, "label")
    assert clf.resolved_params_["iterator_train__group_by_length"] is True  # the recipe's, not applied to the stream
    assert clf.predict(pd.DataFrame({"review": texts[:5]})).shape == (5,)
    with pytest.raises(ValueError, match="group_by_length needs in-memory tokens"):
        TabFormerClassifier(**SETTINGS, iterator_train__group_by_length=True).fit(path, "label")


def test_a_streamed_fit_notes_the_missing_values_it_trained_on(tmp_path):
    # Missing only in rows the tokenizer's sample missed: predict warned "which no training row trained"
    import warnings

    X, _ = make_table(n=400)
    X = X.assign(age=X["age"].fillna(40.0), city=X["city"].fillna("rome"))
    X.loc[399, "age"] = np.nan
    X.loc[398, "city"] = None
    path = tmp_path / "late_missing.parquet"
    X.assign(target=np.linspace(0.0, 1.0, 400)).to_parquet(path, row_group_size=50)
    reg = TabFormerRegressor(**SETTINGS, validation_fraction=None, fit_sample_size=10, iterator_train__shuffle=False)
    reg.fit(path, "target")
    assert reg.tokenizer_.had_missing_["age"] and reg.tokenizer_.had_missing_["city"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.predict(X)


def test_an_empty_parquet_file_is_refused_by_name_at_fit_and_predict(parquet, tmp_path):
    path, X, y = parquet
    clf = TabFormerClassifier(**SETTINGS, validation_fraction=None).fit(X, y)
    empty = write(tmp_path / "empty.parquet", X.assign(label=y).iloc[:0])
    with pytest.raises(ValueError, match=r"X \(a Parquet source\) has 0 rows; at least 1 is required"):
        TabFormerClassifier(**SETTINGS).fit(empty, "label")  # numpy's "need at least one array to concatenate"
    with pytest.raises(ValueError, match=r"has 0 rows"):
        clf.predict(empty)  # an IndexError before


def test_score_reads_a_parquet_sources_target_column_as_fit_does(parquet):
    path, X, y = parquet
    clf = TabFormerClassifier(**SETTINGS).fit(path, "label")
    assert clf.score(path, "label") == pytest.approx(clf.score(X, y))  # failed inside accuracy_score
    reg = TabFormerRegressor(**SETTINGS).fit(path, "income")
    assert reg.score(path, "income") == pytest.approx(reg.score(X.drop(columns="income").assign(label=y), X["income"]))
