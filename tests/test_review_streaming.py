"""Streamed (Parquet, image folder) fits, as a review ran them (stop 37): each case trained on
the target, crashed, or skipped a check the in-memory path makes, before its fix."""

import numpy as np
import pandas as pd
import pytest
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier, TabFormerRegressor

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SMALL = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=2, verbose=0, random_state=0)


def _parquet(tmp_path, y, name="rows.parquet"):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=len(y)), "c": rng.choice(["x", "y", "z"], len(y))})
    path = tmp_path / name
    pq.write_table(pa.Table.from_pandas(X.assign(label=y), preserve_index=False), path, row_group_size=50)
    return X, str(path)


def test_a_first_partial_fit_on_parquet_does_not_train_on_the_target_column(tmp_path):
    labels = np.where(np.random.default_rng(1).random(200) < 0.5, "pos", "neg")  # independent of the features
    X, path = _parquet(tmp_path, labels)
    clf = TabFormerClassifier(**SMALL).partial_fit(path, "label")
    assert list(clf.feature_names_in_) == ["a", "c"]
    clf.predict(X)  # the fitted columns are X's
    clf.partial_fit(path, "label")


def test_warm_start_continues_a_streamed_fit(tmp_path):
    X, path = _parquet(tmp_path, np.where(np.arange(200) % 2, "pos", "neg"))
    clf = TabFormerClassifier(**SMALL, warm_start=True).fit(path, "label")
    module = clf.module_
    clf.fit(path, "label")
    assert clf.module_ is module and len(clf.history_) == 4


class _SeenRates(Callback):
    def on_epoch_begin(self, net, **kwargs):
        net.history.record("rate", net.optimizer_.param_groups[0]["lr"])


def test_a_streamed_partial_fit_restarts_the_cosine_schedule_as_in_memory(tmp_path):
    y = np.where(np.arange(200) % 2, "pos", "neg")
    X, path = _parquet(tmp_path, y)
    settings = dict(SMALL, max_epochs=4, lr=1e-3, lr_schedule="cosine", validation_fraction=None)
    rates = []
    for data in ((X, y), (path, "label")):
        clf = TabFormerClassifier(**settings, callbacks=[("rates", _SeenRates())]).fit(*data)
        clf.partial_fit(*data)
        rates.append(clf.history_[:, "rate"])
    np.testing.assert_allclose(rates[1], rates[0])
    assert max(rates[1]) <= 1e-3 + 1e-12


def test_a_streamed_partial_fit_checks_its_target(tmp_path):
    y = np.random.default_rng(0).normal(size=200)
    _, path = _parquet(tmp_path, y)
    reg = TabFormerRegressor(**SMALL).fit(path, "label")
    y[7] = np.nan
    _, broken = _parquet(tmp_path, y, "broken.parquet")
    with pytest.raises(ValueError, match=r"y holds 1 NaN or infinite value\(s\) \(first at row 7"):
        reg.partial_fit(broken, "label")


def test_a_streamed_holdout_weighing_zero_is_refused(tmp_path):
    from sklearn.model_selection import train_test_split

    y = np.where(np.arange(200) % 2, "pos", "neg")
    _, path = _parquet(tmp_path, y)
    clf = TabFormerClassifier(**SMALL, validation_fraction=0.1)  # as the split below draws it
    _, held_out = train_test_split(np.arange(200), test_size=0.1, random_state=clf._split_seed(), stratify=y)
    weights = np.ones(200)
    weights[held_out] = 0.0
    with pytest.raises(ValueError, match="the holdout rows of the validation_fraction=0.1 split"):
        clf.fit(path, "label", sample_weight=weights)


def test_a_streamed_image_of_another_size_is_named_by_its_row_and_path(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(60):
        (tmp_path / "ab"[i % 2]).mkdir(exist_ok=True)
        size = (10, 10) if i == 59 else (8, 8)
        Image.fromarray((rng.random(size) * 255).astype(np.uint8)).save(tmp_path / "ab"[i % 2] / f"{i:03d}.png")
    clf = TabFormerClassifier(**SMALL, tokenizer__patch_size=4, fit_sample_size=10)
    with pytest.raises(ValueError, match=r"image 59 of X \(.*b/059\.png\) is 10x10"):
        clf.fit(str(tmp_path))


def test_a_parquet_folder_whose_later_file_has_other_types_names_the_file(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame({"b": rng.integers(0, 5, 60), "label": rng.choice(["p", "n"], 60)}).to_parquet(tmp_path / "0.parquet")
    pd.DataFrame({"b": rng.normal(size=60) + 0.5, "label": rng.choice(["p", "n"], 60)}).to_parquet(tmp_path / "1.parquet")
    with pytest.raises(ValueError, match=r"1\.parquet cannot be read in the column types of the folder's first file"):
        TabFormerClassifier(**SMALL).fit(str(tmp_path), "label")
