"""Settings routed to the built-in callbacks (``callbacks__<name>...``), callbacks named like them, ``callbacks="disable"``."""

import pytest
from skorch.callbacks import Callback, EarlyStopping, LRScheduler
from torch.optim.lr_scheduler import StepLR

from tabformer import TabFormerClassifier


def _small(**params):
    params = {"lr": 1e-2, "batch_size": 32, "ensemble_size": 1, "max_epochs": 2, **params}
    return TabFormerClassifier(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, random_state=0, verbose=0, **params)


def test_disabled_callbacks_hold_out_no_row_and_report_no_schedule(pos_neg_table):
    # validation_fraction="auto" held out 30% for an early stopping that callbacks="disable" never ran.
    X, y = pos_neg_table
    net = _small(callbacks="disable").fit(X, y)
    assert net.callbacks_ == []
    assert {k: net.resolved_params_[k] for k in ("lr_schedule", "patience", "validation_fraction")} == dict.fromkeys(
        ("lr_schedule", "patience", "validation_fraction")
    )
    assert "valid_loss" not in net.history[-1]
    assert net.history[-1]["train_batch_count"] == 4  # all 120 rows in batches of 32


class _Marker(Callback):
    """A callback of the user's that is neither an LRScheduler nor an EarlyStopping."""

    def initialize(self):
        self.epochs = 0
        return self

    def on_epoch_end(self, net, **kwargs):
        self.epochs += 1


@pytest.mark.parametrize("name", ["lr_scheduler", "early_stopping"])
def test_a_callback_named_like_a_built_in_replaces_it(pos_neg_table, name):
    # skorch raised "Found duplicate user-set callback name" though the user set the name once.
    X, y = pos_neg_table
    net = _small(callbacks=[(name, _Marker())]).fit(X, y)
    assert isinstance(dict(net.callbacks_)[name], _Marker) and dict(net.callbacks_)[name].epochs == 2
    setting = "lr_schedule" if name == "lr_scheduler" else "patience"
    assert net.resolved_params_[setting] is None
    with pytest.raises(ValueError, match=setting):  # an explicit one beside it is refused, as beside an LRScheduler
        _small(callbacks=[(name, _Marker())], **{setting: "cosine" if setting == "lr_schedule" else 3}).fit(X, y)


def test_a_callback_named_like_the_guard_points_to_replacing_it(pos_neg_table):
    X, y = pos_neg_table
    with pytest.raises(ValueError, match=r"'nonfinite', the name of a built-in callback.*callbacks__nonfinite="):
        _small(callbacks=[("nonfinite", _Marker())]).fit(X, y)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lr_schedule": None, "callbacks__lr_scheduler": LRScheduler(StepLR, step_size=1)}, "lr_schedule=None installs no"),
        ({"lr_schedule": None, "callbacks__lr_scheduler__T_max": 5}, "lr_schedule=None installs no"),
        ({"patience": None, "callbacks__early_stopping": EarlyStopping(patience=1)}, "patience=None installs no"),
        ({"patience": None, "callbacks__early_stopping__monitor": "valid_acc"}, "patience=None installs no"),
        ({"validation_fraction": None, "callbacks__early_stopping__patience": 3}, "validation_fraction=None holds out no row"),
        ({"train_split": None, "callbacks__early_stopping__patience": 3}, "train_split=None holds out no row"),
        ({"callbacks": "disable", "callbacks__lr_scheduler__T_max": 5}, "callbacks='disable' runs no callback"),
        (
            {"callbacks": [LRScheduler(StepLR, step_size=1)], "callbacks__lr_scheduler__T_max": 5},
            r"lr_schedule='auto' resolved to None \(the schedule in callbacks \('LRScheduler'\) takes its place\)",
        ),
    ],
)
def test_a_setting_routed_to_a_built_in_this_fit_has_not_is_refused(pos_neg_table, params, match):
    # skorch ignored it: lr_schedule=None with callbacks__lr_scheduler=LRScheduler(StepLR) trained at a constant rate.
    X, y = pos_neg_table
    key = next(key for key in params if key.startswith("callbacks__"))
    with pytest.raises(ValueError, match=rf"{key} would set the built-in .*{match}"):
        _small(**params).fit(X, y)


def test_removing_an_absent_built_in_is_fine(pos_neg_table):
    X, y = pos_neg_table
    net = _small(lr_schedule=None, patience=None, callbacks__lr_scheduler=None, callbacks__early_stopping=None).fit(X, y)
    assert "lr_scheduler" not in dict(net.callbacks_) and "early_stopping" not in dict(net.callbacks_)
    _small(callbacks__early_stopping__patience=None).fit(X, y)  # what removes it


class _Crash(Callback):
    """Raise as epoch ``at + 1`` begins: ``at`` epochs are checkpointed (every epoch-end, the checkpoint's too, has run)."""

    def __init__(self, at=None):
        self.at = at

    def on_epoch_begin(self, net, **kwargs):
        if self.at and len(net.history) == self.at + 1:
            raise RuntimeError("simulated crash")


def test_a_checkpoint_resumes_a_schedule_listed_after_it(pos_neg_table, tmp_path):
    # The restore ran in the checkpoint's on_train_begin, before the later LRScheduler built lr_scheduler_: AttributeError.
    from tabformer.callbacks import TrainingCheckpoint

    X, y = pos_neg_table

    def make(at):
        schedule = LRScheduler(StepLR, step_size=1, gamma=0.5)
        callbacks = [("checkpoint", TrainingCheckpoint(tmp_path)), ("user", schedule), ("crash", _Crash(at))]
        return _small(max_epochs=4, lr_schedule=None, callbacks=callbacks)

    with pytest.raises(RuntimeError, match="simulated crash"):
        make(2).fit(X, y)
    net = make(None).fit(X, y)
    assert dict(net.callbacks_)["checkpoint"].resumed_epochs_ == 2 and len(net.history) == 4
    assert dict(net.callbacks_)["user"].lr_scheduler_.last_epoch >= 3


@pytest.mark.parametrize(
    ("name", "setting", "replacement"),
    [
        ("lr_scheduler", "lr_schedule", LRScheduler(StepLR, step_size=1, gamma=0.5)),
        ("early_stopping", "patience", EarlyStopping(patience=5)),
    ],
)
def test_a_built_in_replaced_by_yours_is_reported_as_not_running(pos_neg_table, name, setting, replacement):
    # callbacks__lr_scheduler=<yours> ran instead of the cosine, but resolved_params_ said lr_schedule='cosine' (patience 8).
    X, y = pos_neg_table
    net = _small(**{f"callbacks__{name}": replacement}).fit(X, y)
    assert dict(net.callbacks_)[name] is replacement and net.resolved_params_[setting] is None
    if name == "lr_scheduler":
        assert net.history[:, "event_lr"] == [0.01, 0.005]
    else:  # it stops on valid_loss: the holdout stays
        assert net.resolved_params_["validation_fraction"] and "valid_loss" in net.history[-1]


@pytest.mark.parametrize(
    "setting", [{"callbacks__early_stoping__patience": 10}, {"callbacks__mine": _Marker()}, {"callbacks__valid_auc__name": "x"}]
)
def test_a_setting_for_a_callback_the_estimator_has_not_is_refused(pos_neg_table, setting):
    # skorch applies callbacks__<name>... only to a callback of that name and ignored these: the fit ran as if unset
    X, y = pos_neg_table
    (key,) = setting
    with pytest.raises(ValueError, match=rf"{key} names no callback of this TabFormerClassifier.*'valid_acc'"):
        _small(**setting).fit(X, y)


def test_a_setting_for_a_callback_of_the_users_or_one_removed_is_read(pos_neg_table):
    X, y = pos_neg_table
    net = _small(callbacks=[("mine", _Marker())], callbacks__print_log=None).fit(X, y)
    assert dict(net.callbacks_)["mine"].epochs == 2 and "print_log" not in dict(net.callbacks_)


def test_a_parameter_the_routed_callback_has_not_is_named_with_its_setting(pos_neg_table):
    # skorch said "Invalid parameter 'warmup' for estimator <...CosineLR object at 0x7f...>", naming neither the setting
    X, y = pos_neg_table
    with pytest.raises(ValueError, match=r"callbacks__lr_scheduler__warmup: this fit's lr_scheduler callback is a CosineLR, "):
        _small(lr_schedule="cosine", callbacks__lr_scheduler__warmup=3).fit(X, y)
    with pytest.raises(ValueError, match=r"callbacks__print_log__width: .* PrintLog, which has no parameter 'width' \(it takes"):
        _small(callbacks__print_log__width=3).fit(X, y)
