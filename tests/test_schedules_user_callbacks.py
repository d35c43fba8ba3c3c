"""The built-in schedule and early stopping beside the user's own callbacks (a review's finds)."""

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, Checkpoint, EarlyStopping, EpochScoring, LoadInitState, LRScheduler
from torch.optim.lr_scheduler import OneCycleLR, ReduceLROnPlateau, StepLR

from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.callbacks import WarmupLinearLR
from tabformer.estimators._collapse import _kept_epoch, early_stopping_advice


def _small(**params):
    params = {"lr": 1e-2, "batch_size": 32, "ensemble_size": 1, **params}
    return TabFormerClassifier(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, random_state=0, verbose=0, **params)


def test_reduce_lr_on_plateau_continues_in_partial_fit_and_warm_fit(pos_neg_table):
    # _schedule_from_the_peak set last_epoch=-1 on every LRScheduler: ReduceLROnPlateau takes none (TypeError).
    X, y = pos_neg_table

    def plateau():
        return LRScheduler(ReduceLROnPlateau, monitor="valid_loss", patience=0, factor=0.5)

    net = _small(max_epochs=2, lr_schedule=None, callbacks=[plateau()]).fit(X, y)
    net.partial_fit(X, y)
    assert len(net.history) == 4
    warm = _small(max_epochs=2, lr_schedule=None, warm_start=True, callbacks=[plateau()]).fit(X, y)
    warm.fit(X, y)
    assert len(warm.history) == 4


@pytest.mark.parametrize("continued", ["partial_fit", "warm_start"])
def test_set_params_max_epochs_stretches_the_cosine(pos_neg_table, continued):
    # T_max stayed at the first fit's 4 epochs: the rate fell to 0 at epoch 5 and climbed back.
    X, y = pos_neg_table
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


def test_a_schedule_of_your_own_replaces_the_auto_one(pos_neg_table):
    # The built-in cosine multiplied into the user's StepLR: 0.01, 0.0043, 0.00125... instead of halving.
    X, y = pos_neg_table
    net = _small(max_epochs=4, callbacks=[LRScheduler(StepLR, step_size=1, gamma=0.5)]).fit(X, y)
    assert net.resolved_params_["lr_schedule"] is None
    assert "lr_scheduler" not in dict(net.callbacks_)
    assert [epoch["event_lr"] for epoch in net.history] == pytest.approx([1e-2, 5e-3, 2.5e-3, 1.25e-3])


def test_warmup_linear_of_your_own_replaces_the_auto_one(pos_neg_table):
    X, y = pos_neg_table
    recorder = _lr_recorder()
    net = _small(max_epochs=2, callbacks=[("mine", WarmupLinearLR(warmup=0.5)), recorder]).fit(X, y)
    assert net.resolved_params_["lr_schedule"] is None and "lr_scheduler" not in dict(net.callbacks_)
    assert int(np.argmax(recorder.lrs)) == len(recorder.lrs) // 2  # the user's warm-up share, not the recipe's cosine


@pytest.mark.parametrize("lr_schedule", ["cosine", "warmup_linear"])
def test_an_explicit_schedule_beside_your_own_is_refused(pos_neg_table, lr_schedule):
    # warmup_linear overwrote a OneCycleLR's rate every batch.
    X, y = pos_neg_table
    own = LRScheduler(OneCycleLR, max_lr=1e-2, total_steps=8, step_every="batch")
    with pytest.raises(ValueError, match=rf"lr_schedule='{lr_schedule}' and the schedule in callbacks \('LRScheduler'\)"):
        _small(max_epochs=2, lr_schedule=lr_schedule, callbacks=[own]).fit(X, y)


class _Snapshots(Callback):
    def initialize(self):
        self.weights = {}
        return self

    def on_epoch_end(self, net, **kwargs):
        self.weights[len(net.history)] = {k: v.clone() for k, v in net.module_.state_dict().items()}


def _holds(net, weights):
    return all(torch.equal(value, weights[key]) for key, value in net.module_.state_dict().items())


def test_an_early_stopping_of_your_own_replaces_the_auto_one_and_keeps_the_holdout(pos_neg_table):
    # The built-in (patience 8) stopped at epoch 15 of 30 and both restored, the user's (patience 100) winning.
    X, y = pos_neg_table
    own, snapshots = EarlyStopping(monitor="valid_acc", lower_is_better=False, patience=100, load_best=True), _Snapshots()
    net = _small(max_epochs=12, lr=0.3, lr_schedule=None, callbacks=[own, snapshots]).fit(X, y)
    assert "early_stopping" not in dict(net.callbacks_) and len(net.history) == 12
    assert net.resolved_params_["patience"] is None and net.resolved_params_["validation_fraction"] == 0.3
    assert _kept_epoch(net) == own.best_epoch_ and _holds(net, snapshots.weights[own.best_epoch_])


@pytest.mark.parametrize(
    "params",
    [
        {"callbacks": [EarlyStopping(monitor="valid_acc", lower_is_better=False, patience=5)]},
        {"callbacks__early_stopping": EarlyStopping(monitor="valid_acc", lower_is_better=False, patience=5)},
        {"callbacks": [("early_stopping", EarlyStopping(patience=5))], "callbacks__early_stopping__monitor": "valid_acc"},
    ],
)
def test_resolved_monitor_is_what_your_early_stopping_watches(pos_neg_table, params):
    # resolved_params_["monitor"] said the recipe's valid_loss while the user's early stopping, the one that ran, read valid_acc.
    X, y = pos_neg_table
    net = _small(max_epochs=1, **params).fit(X, y)
    assert net.resolved_params_["patience"] is None and net.resolved_params_["monitor"] == "valid_acc"


def test_resolved_monitor_lists_your_early_stoppings_where_they_differ(pos_neg_table):
    X, y = pos_neg_table
    stoppers = [EarlyStopping(monitor="valid_acc", lower_is_better=False), ("second", EarlyStopping(monitor="train_loss"))]
    net = _small(max_epochs=1, callbacks=stoppers).fit(X, y)
    assert net.resolved_params_["monitor"] == ("valid_acc", "train_loss")


@pytest.mark.parametrize("setting", [{"patience": 3}, {"callbacks__early_stopping__patience": 3}])
def test_an_explicit_patience_beside_your_early_stopping_is_refused(pos_neg_table, setting):
    X, y = pos_neg_table
    with pytest.raises(ValueError, match=rf"{next(iter(setting))}=?.*beside the EarlyStopping in callbacks \('EarlyStopping'\)"):
        _small(max_epochs=2, callbacks=[EarlyStopping(patience=3)], **setting).fit(X, y)


@pytest.mark.parametrize(
    "make",
    [
        lambda folder: EarlyStopping(patience=3),
        lambda folder: LRScheduler(ReduceLROnPlateau, monitor="valid_loss"),
        lambda folder: Checkpoint(dirname=str(folder)),  # monitors valid_loss_best
    ],
    ids=["EarlyStopping", "ReduceLROnPlateau", "Checkpoint"],
)
def test_patience_none_keeps_the_holdout_a_callback_of_yours_reads(pos_neg_table, make, tmp_path):
    # validation_fraction="auto" held out nothing without the built-in early stopping: skorch's KeyError at epoch 1.
    X, y = pos_neg_table
    net = _small(max_epochs=2, patience=None, lr_schedule=None, callbacks=[make(tmp_path)]).fit(X, y)
    assert net.resolved_params_["validation_fraction"] == 0.3 and "valid_loss" in net.history[-1]


@pytest.mark.parametrize("split", [{"validation_fraction": None}, {"train_split": None}])
def test_no_holdout_beside_a_callback_that_reads_one_is_refused_at_fit(pos_neg_table, split):
    X, y = pos_neg_table
    name = "validation_fraction=None" if "validation_fraction" in split else "train_split=None"
    own = LRScheduler(ReduceLROnPlateau, monitor="valid_loss")
    with pytest.raises(ValueError, match=rf"'LRScheduler' \(monitor='valid_loss'\) in callbacks read .* but {name} holds"):
        _small(max_epochs=2, patience=None, lr_schedule=None, callbacks=[own], **split).fit(X, y)


def test_the_collapse_check_reads_the_early_stopping_whose_weights_were_restored(pos_neg_table):
    # It read the first restorer (here one whose best epoch was the last: it restored nothing), not the one that loaded.
    X, y = pos_neg_table
    last = EarlyStopping(monitor="train_loss", patience=100, load_best=True)
    earlier = EarlyStopping(monitor="valid_acc", lower_is_better=True, patience=100, load_best=True)
    snapshots = _Snapshots()
    net = _small(max_epochs=6, lr=1e-3, lr_schedule=None, callbacks=[last, earlier, snapshots]).fit(X, y)
    assert last.best_epoch_ == 6 and earlier.best_epoch_ < 6  # the premise: only the second one loaded
    assert _kept_epoch(net) == earlier.best_epoch_ and _holds(net, snapshots.weights[earlier.best_epoch_])
    assert f"kept epoch {earlier.best_epoch_} of the 6" in early_stopping_advice(net)
    assert "EarlyStopping patience (100)" in early_stopping_advice(net)


def test_the_built_in_early_stopping_can_watch_a_score_of_yours(pos_neg_table):
    # skorch ran the default callbacks first: "Key 'valid_r2' was not found in history".
    X, _ = pos_neg_table
    y = X.a.to_numpy() + 0.1 * np.random.RandomState(1).randn(len(X))
    scorer = EpochScoring("r2", name="valid_r2", lower_is_better=False)
    net = TabFormerRegressor(
        encoder__d_model=16,
        encoder__n_layers=1,
        encoder__n_heads=2,
        random_state=0,
        verbose=0,
        ensemble_size=1,
        max_epochs=3,
        callbacks=[scorer],
        callbacks__early_stopping__monitor="valid_r2",
    ).fit(X, y)
    names = [name for name, _ in net.callbacks_]
    assert names.index("EpochScoring") < names.index("early_stopping") < names.index("print_log")
    stopping = dict(net.callbacks_)["early_stopping"]
    assert stopping.best_epoch_ == 1 + int(np.argmax([epoch["valid_r2"] for epoch in net.history]))


def test_your_callbacks_listed_before_a_scorer_still_run_after_early_stopping(pos_neg_table, tmp_path):
    # Early stopping was moved after the user's last scorer, so a TrainEndCheckpoint listed before it
    # saved the last epoch's weights, not the best ones early stopping restores at the end.
    from skorch.callbacks import TrainEndCheckpoint

    X, y = pos_neg_table
    checkpoint = TrainEndCheckpoint(dirname=str(tmp_path))
    scorer = EpochScoring("accuracy", name="valid_myacc", lower_is_better=False)
    net = _small(lr=0.5, max_epochs=6, patience=10, callbacks=[checkpoint, scorer]).fit(X, y)
    names = [name for name, _ in net.callbacks_]
    assert names.index("EpochScoring") < names.index("early_stopping") < names.index("TrainEndCheckpoint")
    stopping = dict(net.callbacks_)["early_stopping"]
    assert stopping.best_epoch_ < len(net.history)  # the best weights were restored at the end
    saved = torch.load(tmp_path / "train_end_params.pt", map_location="cpu", weights_only=True)
    assert all(torch.equal(saved[key], value) for key, value in net.module_.state_dict().items())


def test_an_early_stopping_monitor_nothing_writes_names_what_there_is(pos_neg_table):
    X, y = pos_neg_table
    with pytest.raises(
        ValueError, match=r"monitors 'valid_f1', which no callback wrote in epoch 1; the history has \[.*valid_acc"
    ):
        _small(max_epochs=2, callbacks__early_stopping__monitor="valid_f1").fit(X, y)


class _EpochLrs(Callback):
    def initialize(self):
        self.lrs = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.lrs.append(net.optimizer_.param_groups[0]["lr"])


def test_a_fit_from_load_init_state_runs_the_cosine_from_the_peak(pos_neg_table, tmp_path):
    # LoadInitState loaded the optimizer after the cosine was made: every resumed epoch ran at the 0 it had decayed to.
    X, y = pos_neg_table
    first = _EpochLrs()
    _small(max_epochs=3, patience=None, callbacks=[Checkpoint(dirname=str(tmp_path), monitor=None), first]).fit(X, y)
    checkpoint, resumed = Checkpoint(dirname=str(tmp_path), monitor=None), _EpochLrs()
    net = _small(max_epochs=3, patience=None, callbacks=[checkpoint, LoadInitState(checkpoint), resumed]).fit(X, y)
    assert len(net.history) == 6 and resumed.lrs == pytest.approx(first.lrs) and resumed.lrs[0] == pytest.approx(1e-2)
    assert net.history[-1, "train_loss"] != net.history[-2, "train_loss"]
