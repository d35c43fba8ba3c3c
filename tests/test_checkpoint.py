"""TrainingCheckpoint: a crashed fit resumes from its folder and ends where an uninterrupted fit ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from skorch.callbacks import Callback

import tabformer._checkpoint as checkpoint_module
from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.callbacks import TrainingCheckpoint

ROOT = Path(__file__).resolve().parent.parent


def _data(n=120):
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(n), "b": rng.choice(list("xyz"), n), "c": rng.randn(n)})
    y = ((X["a"] + (X["b"] == "x")) > 0.3).astype(int).to_numpy()
    return X, y


# One model: a killed run resumes in a fresh interpreter, which the conftest's one-model fixture does not reach
# (tests/test_ensemble.py checkpoints an ensemble).
SMALL = dict(
    max_epochs=5,
    batch_size=32,
    random_state=0,
    verbose=0,
    encoder__d_model=8,
    encoder__n_layers=1,
    encoder__n_heads=2,
    ensemble_size=1,
)


def _make(folder, *extra, cls=TabFormerClassifier, **params):
    return cls(**{**SMALL, **params}, callbacks=[("checkpoint", TrainingCheckpoint(folder)), *extra])


class Crash(Callback):
    """Raise in the given epoch after its first training batch (the optimizer has stepped)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_batch_end(self, net, training=False, **kwargs):
        if training and len(net.history) == self.epoch:
            raise RuntimeError("simulated crash")


def _same_weights(a, b):
    sa, sb = a.module_.state_dict(), b.module_.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        torch.testing.assert_close(sa[key], sb[key], rtol=0, atol=0, msg=key)


def _crash_then_resume(folder, crash_epoch, **params):
    X, y = _data()
    with pytest.raises(RuntimeError, match="simulated crash"):
        _make(folder, ("crash", Crash(crash_epoch)), **params).fit(X, y)
    assert json.loads((folder / "latest.json").read_text())["folder"] == f"epoch-{crash_epoch - 1:04d}"
    resumed = _make(folder, **params).fit(X, y)
    reference = _make(folder.parent / "reference", **params).fit(X, y)
    return resumed, reference


@pytest.mark.parametrize(
    "params",
    [
        dict(patience=None, validation_fraction=None),  # cosine schedule, no validation
        dict(patience=2, lr_schedule="warmup_linear"),  # per-batch schedule, early stopping's state
    ],
    ids=["cosine", "warmup-early-stopping"],
)
def test_a_crashed_fit_resumes_the_remaining_epochs_to_the_same_weights(tmp_path, params):
    resumed, reference = _crash_then_resume(tmp_path / "run", crash_epoch=3, **params)
    assert dict(resumed.callbacks_)["checkpoint"].resumed_epochs_ == 2
    assert [row["epoch"] for row in resumed.history] == [row["epoch"] for row in reference.history]
    assert resumed.history[:, "train_loss"] == reference.history[:, "train_loss"]
    _same_weights(resumed, reference)


class RecordLr(Callback):
    def initialize(self):
        self.rates = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.rates.append(net.optimizer_.param_groups[0]["lr"])


def test_a_checkpoint_saves_the_epoch_end_state_of_callbacks_listed_after_it(tmp_path):
    # It wrote before their on_epoch_end: a StepLR listed after it resumed one step behind ([0.005, 0.0025] for
    # [0.0025, 0.00125]), an EarlyStopping with the previous epoch's counters.
    from skorch.callbacks import EarlyStopping, LRScheduler
    from torch.optim.lr_scheduler import StepLR

    X, y = _data()

    def make(folder, *crash):
        user = [("step", LRScheduler(StepLR, step_size=1, gamma=0.5)), ("stop", EarlyStopping(patience=3, load_best=True))]
        net = _make(folder, *user, *crash, ("rates", RecordLr()), lr=0.01, lr_schedule=None, patience="auto")
        return net.fit(X, y)

    with pytest.raises(RuntimeError, match="simulated crash"):
        make(tmp_path / "run", ("crash", Crash(3)))
    meta = json.loads((tmp_path / "run" / "epoch-0002" / "meta.json").read_text())
    valid = [row["valid_loss"] for row in meta["history"]]
    assert meta["callbacks"]["stop"]["best_epoch_"] == 1 + int(np.argmin(valid))
    resumed, reference = make(tmp_path / "run"), make(tmp_path / "reference")
    assert dict(resumed.callbacks_)["checkpoint"].resumed_epochs_ == 2
    assert dict(resumed.callbacks_)["rates"].rates == dict(reference.callbacks_)["rates"].rates[2:] == [0.0025, 0.00125, 0.000625]
    for key in ("misses_", "best_epoch_"):
        assert getattr(dict(resumed.callbacks_)["stop"], key) == getattr(dict(reference.callbacks_)["stop"], key)
    assert resumed.history[:, "valid_loss"] == reference.history[:, "valid_loss"]
    _same_weights(resumed, reference)


def test_a_finished_checkpoint_loads_the_final_model_without_training(tmp_path):
    X, y = _data()
    first = _make(tmp_path / "run", patience=2).fit(X, y)
    meta_folder = json.loads((tmp_path / "run" / "latest.json").read_text())["folder"]
    assert meta_folder.endswith("-final")

    class CountBatches(Callback):
        def initialize(self):
            self.batches = 0
            return self

        def on_batch_begin(self, net, **kwargs):
            self.batches += 1

    counter = CountBatches()
    again = _make(tmp_path / "run", ("count", counter), patience=2).fit(X, y)
    assert counter.batches == 0
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))


def test_a_checkpoint_of_another_configuration_or_data_is_refused(tmp_path):
    X, y = _data()
    _make(tmp_path / "run", max_epochs=2).fit(X, y)
    with pytest.raises(ValueError, match=r"other parameters \(lr: 'auto' -> 0.01; resolved:lr: 0.0005 -> 0.01"):
        _make(tmp_path / "run", max_epochs=2, lr=0.01).fit(X, y)
    with pytest.raises(ValueError, match=r"other data .*'y': \[120\]} against this fit's .*'y': \[100\]}"):
        _make(tmp_path / "run", max_epochs=2).fit(X.iloc[:100], y[:100])
    flipped = y.copy()
    flipped[0] = 1 - flipped[0]
    with pytest.raises(ValueError, match="other data"):  # same shapes, one label changed
        _make(tmp_path / "run", max_epochs=2).fit(X, flipped)
    with pytest.raises(ValueError, match="other parameters"):
        _make(tmp_path / "run", max_epochs=2, cls=TabFormerRegressor).fit(X, y.astype(float))


def test_a_new_validation_split_is_refused(tmp_path):
    X, y = _data()
    with pytest.raises(RuntimeError):
        _make(tmp_path / "run", ("crash", Crash(2)), random_state=None).fit(X, y)
    # random_state=None draws another validation split; resuming on it would leak rows.
    for _ in range(3):  # one draw in 3 could repeat the split by chance; three in a row cannot (practically)
        try:
            _make(tmp_path / "run", random_state=None).fit(X, y)
        except ValueError as error:
            assert "another train/validation split" in str(error) and "int random_state" in str(error)
            return
    pytest.fail("a new validation split was accepted")


def test_a_crash_while_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    X, y = _data()
    real_save, calls = checkpoint_module.save_file, []

    def save_then_die(tensors, path):
        calls.append(path)
        if len(calls) == 3:
            real_save(tensors, path)
            raise OSError("disk full")  # after the tensors, before meta.json and the rename
        real_save(tensors, path)

    monkeypatch.setattr(checkpoint_module, "save_file", save_then_die)
    with pytest.raises(OSError, match="disk full"):
        _make(tmp_path / "run", patience=None).fit(X, y)
    monkeypatch.undo()
    assert json.loads((tmp_path / "run" / "latest.json").read_text())["folder"] == "epoch-0002"
    resumed = _make(tmp_path / "run", patience=None).fit(X, y)
    assert dict(resumed.callbacks_)["checkpoint"].resumed_epochs_ == 2
    _same_weights(resumed, _make(tmp_path / "reference", patience=None).fit(X, y))


def test_keep_is_checked_and_old_epochs_are_deleted(tmp_path):
    X, y = _data()
    with pytest.raises(ValueError, match="keep must be an int >= 1"):
        TabFormerClassifier(**SMALL, callbacks=[("checkpoint", TrainingCheckpoint(tmp_path, keep=0))]).fit(X, y)
    clf = TabFormerClassifier(**{**SMALL, "patience": None}, callbacks=[("c", TrainingCheckpoint(tmp_path / "k", keep=2))])
    clf.fit(X, y)
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["epoch-0005", "epoch-0005-final", "latest.json"]


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import torch
    from skorch.callbacks import Callback
    torch.set_num_threads(1)  # as conftest sets it for the parent: other thread counts sum in another order
    sys.path.insert(0, {tests!r})
    from test_checkpoint import _data, _make

    class Stall(Callback):
        # Mid-epoch 3, after a training batch has stepped: say so, then wait to be killed.
        def on_batch_end(self, net, training=False, **kwargs):
            if training and len(net.history) == 3:
                Path({marker!r}).touch()
                time.sleep(600)

    X, y = _data()
    _make({folder!r}, ("stall", Stall()), patience=2).fit(X, y)
    """
)


def test_a_killed_training_process_resumes_to_the_same_model(tmp_path):
    folder, marker = tmp_path / "run", tmp_path / "in-epoch-3"
    code = CHILD.format(tests=str(ROOT / "tests"), marker=str(marker), folder=str(folder))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child never reached epoch 3"
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.stderr.close()
    assert json.loads((folder / "latest.json").read_text())["folder"] == "epoch-0002"
    X, y = _data()
    resumed = _make(folder, patience=2).fit(X, y)
    reference = _make(tmp_path / "reference", patience=2).fit(X, y)
    assert dict(resumed.callbacks_)["checkpoint"].resumed_epochs_ == 2
    assert resumed.history[:, "valid_loss"] == reference.history[:, "valid_loss"]
    _same_weights(resumed, reference)
    np.testing.assert_array_equal(resumed.predict_proba(X), reference.predict_proba(X))
