"""The built-in schedule and early stopping beside the user's own callbacks (a review's finds)."""

import numpy as np
import pandas as pd
import pytest
from skorch.callbacks import Callback, LRScheduler
from torch.optim.lr_scheduler import OneCycleLR, ReduceLROnPlateau, StepLR

from tabformer import TabFormerClassifier
from tabformer.callbacks import WarmupLinearLR


@pytest.fixture
def table():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(120), "b": rng.randn(120), "c": rng.choice(["x", "y", "z"], 120)})
    y = np.where(X.a + (X.c == "x") + 0.3 * rng.randn(120) > 0.5, "pos", "neg")
    return X, y


def _small(**params):
    params = {"lr": 1e-2, "batch_size": 32, "ensemble_size": 1, **params}
    return TabFormerClassifier(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, random_state=0, verbose=0, **params)


def test_reduce_lr_on_plateau_continues_in_partial_fit_and_warm_fit(table):
    # _schedule_from_the_peak set last_epoch=-1 on every LRScheduler: ReduceLROnPlateau takes none (TypeError).
    X, y = table

    def plateau():
        return LRScheduler(ReduceLROnPlateau, monitor="valid_loss", patience=0, factor=0.5)

    net = _small(max_epochs=2, lr_schedule=None, callbacks=[plateau()]).fit(X, y)
    net.partial_fit(X, y)
    assert len(net.history) == 4
    warm = _small(max_epochs=2, lr_schedule=None, warm_start=True, callbacks=[plateau()]).fit(X, y)
    warm.fit(X, y)
    assert len(warm.history) == 4


@pytest.mark.parametrize("continued", ["partial_fit", "warm_start"])
def test_set_params_max_epochs_stretches_the_cosine(table, continued):
    # T_max stayed at the first fit's 4 epochs: the rate fell to 0 at epoch 5 and climbed back.
    X, y = table
    net = _small(max_epochs=4, patience=None, warm_start=continued == "warm_start").fit(X, y)
    net.set_params(max_epochs=8)
    net.partial_fit(X, y) if continued == "partial_fit" else net.fit(X, y)
    lrs = [epoch["event_lr"] for epoch in net.history[4:]]
    assert dict(net.callbacks_)["lr_scheduler"].T_max == 8
    assert lrs[0] == pytest.approx(1e-2) and np.all(np.diff(lrs) < 0) and min(lrs) > 0


def _lr_recorder():
    class LrRecorder(Callback):
        def initialize(self):
            self.lrs = []
            return self

        def on_batch_begin(self, net, training=False, **kwargs):
            if training:
                self.lrs.append(net.optimizer_.param_groups[0]["lr"])

    return LrRecorder()


def test_a_schedule_of_your_own_replaces_the_auto_one(table):
    # The built-in cosine multiplied into the user's StepLR: 0.01, 0.0043, 0.00125... instead of halving.
    X, y = table
    net = _small(max_epochs=4, callbacks=[LRScheduler(StepLR, step_size=1, gamma=0.5)]).fit(X, y)
    assert net.resolved_params_["lr_schedule"] is None
    assert "lr_scheduler" not in dict(net.callbacks_)
    assert [epoch["event_lr"] for epoch in net.history] == pytest.approx([1e-2, 5e-3, 2.5e-3, 1.25e-3])


def test_warmup_linear_of_your_own_replaces_the_auto_one(table):
    X, y = table
    recorder = _lr_recorder()
    net = _small(max_epochs=2, callbacks=[("mine", WarmupLinearLR(warmup=0.5)), recorder]).fit(X, y)
    assert net.resolved_params_["lr_schedule"] is None and "lr_scheduler" not in dict(net.callbacks_)
    assert int(np.argmax(recorder.lrs)) == len(recorder.lrs) // 2  # the user's warm-up share, not the recipe's cosine


@pytest.mark.parametrize("lr_schedule", ["cosine", "warmup_linear"])
def test_an_explicit_schedule_beside_your_own_is_refused(table, lr_schedule):
    # warmup_linear overwrote a OneCycleLR's rate every batch.
    X, y = table
    own = LRScheduler(OneCycleLR, max_lr=1e-2, total_steps=8, step_every="batch")
    with pytest.raises(ValueError, match=rf"lr_schedule='{lr_schedule}' and the schedule in callbacks \('LRScheduler'\)"):
        _small(max_epochs=2, lr_schedule=lr_schedule, callbacks=[own]).fit(X, y)
