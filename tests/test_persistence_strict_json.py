"""Every JSON file tabformer writes is strict JSON (no bare NaN/Infinity, which other parsers
reject), and a NaN or infinite value in the history comes back exactly on load."""

import json
import math

import numpy as np
from conftest import TINY
from skorch.callbacks import Callback

import tabformer
from tabformer import TabFormerClassifier
from tabformer.callbacks import TrainingCheckpoint
from tabformer.cli import main


def strict(text):
    """json.loads that refuses NaN/Infinity, as other languages' parsers do."""

    def refuse(word):
        raise ValueError(f"not strict JSON: {word}")

    return json.loads(text, parse_constant=refuse)


class NonFiniteScores(Callback):
    """Records a NaN and an infinity in every epoch, as a metric of a one-class fold might."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("odd_nan", float("nan"))
        net.history.record("odd_inf", np.float32(-np.inf))
        net.history.record("odd_list", [1.0, float("inf")])


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


def test_history_with_nan_saves_as_strict_json_and_loads_exactly(tmp_path, capsys):
    X, y = data()
    est = TabFormerClassifier(**dict(TINY, max_epochs=2), callbacks=[("odd", NonFiniteScores())], random_state=0).fit(X, y)
    est.history_[-1]["valid_loss"] = float("nan")  # a diverged validation loss (save raised "Out of range float")
    est.save(tmp_path)
    for path in tmp_path.rglob("*.json"):
        strict(path.read_text())
    loaded = tabformer.load(tmp_path, trusted=["test_persistence_strict_json.NonFiniteScores"])
    assert math.isnan(loaded.history_[-1, "valid_loss"])
    assert [math.isnan(v) for v in loaded.history_[:, "odd_nan"]] == [True, True]
    assert loaded.history_[:, "odd_inf"] == [-math.inf, -math.inf]
    assert loaded.history_[-1, "odd_list"] == [1.0, math.inf]
    assert loaded.history_[0, "valid_loss"] == est.history_[0, "valid_loss"]
    metrics = strict((tmp_path / "config.json").read_text())["metrics"]
    assert metrics["valid_loss"] is None and metrics["best_epoch"] == 1  # the finite epoch is the best
    main(["info", str(tmp_path)])
    assert "valid_loss non-finite" in capsys.readouterr().out


def test_an_older_folder_with_bare_nan_still_loads(tmp_path):
    X, y = data()
    TabFormerClassifier(**TINY, random_state=0).fit(X, y).save(tmp_path)
    rows = json.loads((tmp_path / "history.json").read_text())
    rows[-1]["valid_loss"] = float("nan")
    (tmp_path / "history.json").write_text(json.dumps(rows))  # as tabformer wrote it before
    assert "NaN" in (tmp_path / "history.json").read_text()
    assert math.isnan(tabformer.load(tmp_path).history_[-1, "valid_loss"])


def test_a_checkpoint_with_nan_in_its_history_is_strict_json_and_resumes_exactly(tmp_path):
    X, y = data()
    params = dict(TINY, max_epochs=2, random_state=0)
    callbacks = [("odd", NonFiniteScores()), ("checkpoint", TrainingCheckpoint(tmp_path))]
    TabFormerClassifier(**params, callbacks=callbacks).fit(X, y)
    for path in tmp_path.rglob("*.json"):
        strict(path.read_text())
    resumed = TabFormerClassifier(**params, callbacks=[("odd", NonFiniteScores()), ("checkpoint", TrainingCheckpoint(tmp_path))])
    resumed.fit(X, y)  # finished: loads the final state, trains no further
    assert len(resumed.history_) == 2
    assert math.isnan(resumed.history_[-1, "odd_nan"]) and resumed.history_[-1, "odd_inf"] == -math.inf
