"""Exact behaviour of the reliability checks: the pixel rule, the non-finite guard, the warm-up
schedule and the target checks, down to their messages, boundaries and branches.

Written against mutants that survived ``make mutation`` (docs/reliability.md): each test
pins something a plausible edit could break while the broader tests stayed green. The nets
here are plain skorch nets on a 2-layer MLP, so every test runs in well under a second.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from skorch import NeuralNetRegressor
from skorch.callbacks import Callback
from torch.utils.data import Subset

from tabformer._nonfinite import _scales_losses as scales_losses
from tabformer._targets import check_target
from tabformer.callbacks import NonFiniteGuard, NonFiniteTrainingError, WarmupLinearLR, log_user_interrupt
from tabformer.tokenizers._pixels import check_pixels, pixel_kind


# ------------------------------------------------------------------------------ pixels
@pytest.mark.parametrize(
    "dtype, kind",
    [(bool, "bool"), (np.uint8, "integer"), (np.int16, "integer"), (np.uint32, "integer"), (np.int64, "integer")]
    + [(np.float16, "float"), (np.float32, "float"), (np.float64, "float")],
)
def test_pixel_kind_of_every_dtype(dtype, kind):
    assert pixel_kind(dtype) == kind
    assert pixel_kind(np.dtype(dtype)) == kind


def test_check_pixels_names_the_image_across_a_list_of_arrays():
    good = np.full((4, 4), 0.5, np.float32)
    negative = good.copy()
    negative[1, 2] = -0.25
    with pytest.raises(ValueError, match=r"^image 2 has negative pixels \(min -0.25\)"):
        check_pixels([good, good, negative, good])
    nan = good.copy()
    nan[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^image 3 holds NaN or infinite pixels; fix or drop it$"):
        check_pixels([good, good, good, nan])
    with pytest.raises(ValueError, match=r"^image 1 has integer pixels \(dtype uint8\) but the tokenizer was fitted on float"):
        check_pixels([good, good.astype(np.uint8)], fitted_kind="float")


def test_check_pixels_counts_images_across_batches():
    batch = np.full((3, 4, 4), 10, np.uint8)
    check_pixels(batch, fitted_kind="integer")  # passes
    floats = np.full((5, 4, 4), 0.5)
    floats[4, 3, 3] = -1.0
    with pytest.raises(ValueError, match=r"^image 4 has negative pixels \(min -1\)"):
        check_pixels(floats)
    signed = np.zeros((3, 4, 4), np.int8)
    signed[1, 0, 0] = -3
    with pytest.raises(ValueError, match=r"^image 1 has negative pixels \(min -3\)"):
        check_pixels(signed)


def test_check_pixels_scale_boundary_is_twice_the_fitted_scale():
    images = np.full((2, 4, 4), 0.5)
    images[1, 0, 0] = 2.0
    check_pixels(images, fitted_kind="float", scale=1.0)  # exactly twice: allowed
    images[1, 0, 0] = 2.001
    with pytest.raises(ValueError, match=r"^image 1 has pixels up to 2.001, but the training images' float pixels went up to 1;"):
        check_pixels(images, fitted_kind="float", scale=1.0)
    check_pixels(images, fitted_kind="float", scale=None)  # no scale: no bound
    check_pixels(np.full((2, 4, 4), 255, np.uint8), fitted_kind="integer", scale=255.0)  # integers: up to the depth itself
    with pytest.raises(
        ValueError, match=r"^image 0 has pixels up to 256 \(dtype uint16\), but the training images were 255-level"
    ):
        check_pixels(np.full((2, 4, 4), 256, np.uint16), fitted_kind="integer", scale=255.0)


def test_check_pixels_leaves_bool_and_empty_images_alone():
    check_pixels(np.zeros((2, 4, 4), bool), fitted_kind="bool")
    check_pixels(np.zeros((0, 4, 4), np.float32), fitted_kind="float")
    with pytest.raises(ValueError, match="image 0 has bool pixels"):
        check_pixels(np.zeros((2, 4, 4), bool), fitted_kind="integer")


# ------------------------------------------------------------------- non-finite guard
class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(3, 4)
        self.second = torch.nn.Linear(4, 1)

    def forward(self, X):
        return self.second(torch.relu(self.first(X)))


class NaNLoss(torch.nn.MSELoss):
    """MSE that turns NaN at the given (1-based) training call, or at every evaluation call."""

    def __init__(self, at=None, in_eval=False):
        super().__init__()
        self.at, self.in_eval, self.calls = at, in_eval, 0

    def forward(self, prediction, target):
        loss = super().forward(prediction, target)
        if torch.is_grad_enabled():
            self.calls += 1
            if self.calls == self.at:
                return loss * float("nan")
        elif self.in_eval:
            return loss * float("nan")
        return loss


class Weights(Callback):
    def initialize(self):
        self.by_epoch = []
        return self

    def on_epoch_end(self, net, **kwargs):
        self.by_epoch.append({k: v.clone() for k, v in net.module_.state_dict().items()})


def _net(guard, criterion=NaNLoss, valid=False, **criterion_params):
    return NeuralNetRegressor(
        MLP,
        criterion=criterion,
        lr=0.125,
        max_epochs=4,
        batch_size=4,
        train_split=_split if valid else None,
        callbacks=[("guard", guard), ("weights", Weights())],
        verbose=0,
        **{f"criterion__{key}": value for key, value in criterion_params.items()},
    )


def _split(dataset, y=None, **fit_params):
    return Subset(dataset, range(12)), Subset(dataset, range(12, len(dataset)))


def _xy():
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 3)).astype(np.float32), rng.normal(size=(16, 1)).astype(np.float32)


def test_a_nan_training_loss_raises_the_exact_message_and_restores_the_last_good_epoch():
    torch.manual_seed(0)
    guard = NonFiniteGuard(check_gradients=False)  # so the loss check is what fires
    net = _net(guard, at=7)  # 4 batches per epoch: the 3rd batch of epoch 2
    with pytest.raises(NonFiniteTrainingError) as raised:
        net.fit(*_xy())
    assert str(raised.value) == (
        "NeuralNetRegressor: a non-finite training loss (nan) at epoch 2, training batch 3; the learning rate was 0.125. "
        "Training stopped and the weights were restored to the end of epoch 1. Try a lower lr (e.g. 10x lower), check "
        "the inputs and targets for extreme values, or use callbacks__nonfinite__action='warn' to keep the restored model."
    )
    assert guard.failure_ == str(raised.value)
    epoch_1 = dict(net.callbacks_)["weights"].by_epoch[0]
    for name, value in net.module_.state_dict().items():
        torch.testing.assert_close(value, epoch_1[name], rtol=0, atol=0, msg=name)


def test_a_nan_validation_loss_is_named_as_such_and_warn_mode_returns():
    torch.manual_seed(0)
    guard = NonFiniteGuard(action="warn")
    net = _net(guard, valid=True, in_eval=True)
    with pytest.warns(
        RuntimeWarning, match=r"non-finite validation loss \(nan\) at epoch 1, validation batch 1;.*initial values"
    ):
        net.fit(*_xy())
    assert guard.failure_.startswith("NeuralNetRegressor: a non-finite validation loss")
    assert len(net.history) == 1


def test_a_nan_gradient_names_the_first_parameter_and_never_steps():
    torch.manual_seed(0)
    guard = NonFiniteGuard()
    net = _net(guard, criterion=torch.nn.MSELoss).initialize()
    start = {k: v.clone() for k, v in net.module_.state_dict().items()}
    net.module_.second.weight.register_hook(lambda grad: grad * float("inf"))
    gradient = r"^NeuralNetRegressor: a non-finite gradient \(first in 'second.weight'\) at epoch 1, training batch 1;"
    with pytest.raises(NonFiniteTrainingError, match=gradient + ".*their initial values"):
        net.partial_fit(*_xy())
    for name, value in net.module_.state_dict().items():
        torch.testing.assert_close(value, start[name], rtol=0, atol=0, msg=name)


def test_check_gradients_false_skips_the_gradient_check():
    torch.manual_seed(0)
    net = _net(NonFiniteGuard(check_gradients=False), criterion=torch.nn.MSELoss)
    net.set_params(batch_size=16).initialize()
    net.module_.second.bias.register_hook(lambda grad: grad * float("inf"))
    net.partial_fit(*_xy(), epochs=1)  # one batch: the guard does not look, and that batch's loss is finite
    assert not torch.isfinite(net.module_.second.bias).all()


def test_the_guard_snapshot_is_a_cpu_copy_and_action_is_checked():
    guard = NonFiniteGuard().initialize()
    assert guard.failure_ is None and guard.good_state_ is None
    net = _net(guard, criterion=torch.nn.MSELoss).initialize()
    guard._snapshot(net)
    with torch.no_grad():
        net.module_.first.weight.add_(1.0)
    assert all(value.device.type == "cpu" for value in guard.good_state_.values())
    assert not torch.equal(guard.good_state_["first.weight"], net.module_.first.weight)
    with pytest.raises(ValueError, match=r"^NonFiniteGuard action must be 'raise' or 'warn', got 'stop'$"):
        NonFiniteGuard(action="stop").initialize()


def test_loss_scaling_is_recognised_from_a_grad_scaler_or_an_accelerator():
    enabled = SimpleNamespace(is_enabled=lambda: True)
    disabled = SimpleNamespace(is_enabled=lambda: False)
    assert scales_losses(SimpleNamespace(grad_scaler_=enabled)) is True
    assert scales_losses(SimpleNamespace(grad_scaler_=disabled)) is False
    assert scales_losses(SimpleNamespace(grad_scaler_=None, accelerator_=SimpleNamespace(scaler=object()))) is True
    assert scales_losses(SimpleNamespace(grad_scaler_=None, accelerator_=SimpleNamespace(scaler=None))) is False
    assert scales_losses(SimpleNamespace()) is False


def test_user_interrupts_are_logged_and_callback_stops_are_not(caplog):
    net = SimpleNamespace(history=[{}, {}, {}])

    def user():
        raise KeyboardInterrupt

    class Stopper(Callback):
        def stop(self):
            raise KeyboardInterrupt

    def records(raiser):
        caplog.clear()
        try:
            raiser()
        except KeyboardInterrupt as interrupt:
            with caplog.at_level(logging.WARNING, logger="tabformer"):
                log_user_interrupt(net, interrupt)
        return list(caplog.records)

    assert records(Stopper().stop) == []
    (record,) = records(user)
    assert record.name == "tabformer" and record.levelno == logging.WARNING
    assert record.getMessage().startswith("SimpleNamespace: fit interrupted (KeyboardInterrupt) in epoch 3;")


# ------------------------------------------------------------------ warm-up schedule
def test_warmup_factor_at_every_step():
    schedule = WarmupLinearLR(warmup=0.25).initialize()
    schedule.total_steps_ = 8  # 2 warm-up steps
    assert [schedule.factor(step) for step in range(8)] == pytest.approx([1 / 3, 2 / 3, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    schedule.warmup = 0.0
    assert schedule.factor(0) == 1.0 and schedule.factor(7) == pytest.approx(1 / 8)


@pytest.mark.parametrize("warmup", [1.0, -0.1, 1.5])
def test_warmup_share_must_be_in_zero_one(warmup):
    with pytest.raises(ValueError, match=rf"^warmup must be a share of the training steps in \[0, 1\), got {warmup!r}$"):
        WarmupLinearLR(warmup=warmup).initialize()
    assert WarmupLinearLR(warmup=0.0).initialize().step_ == 0


def test_warmup_schedule_steps_per_training_batch_only():
    torch.manual_seed(0)
    schedule = WarmupLinearLR(warmup=0.5)
    net = NeuralNetRegressor(MLP, lr=1.0, max_epochs=2, batch_size=4, train_split=_split, callbacks=[("lr", schedule)], verbose=0)
    net.fit(*_xy())
    assert schedule.total_steps_ == 6 and schedule.step_ == 6  # 3 training batches x 2 epochs; validation never steps
    assert net.history[:, "batches", :, "lr"][0] == pytest.approx([0.25, 0.5, 0.75])
    assert net.optimizer_.param_groups[0]["lr"] == 1.0  # the peak, restored at the end


# ---------------------------------------------------------------------- targets
def test_check_target_messages_and_rows():
    with pytest.raises(ValueError, match=r"^X has 0 sample\(s\) while a minimum of 1 is required\.$"):
        check_target([1], 0, numeric=True)
    with pytest.raises(ValueError, match=r"^This estimator requires y to be passed"):
        check_target(None, 3, numeric=False)
    with pytest.raises(ValueError, match=r"^y must be an array of targets, got the scalar array\(3\)$"):
        check_target(3, 3, numeric=False)
    with pytest.raises(ValueError, match=r"^X has 3 samples but y has 2; they must match$"):
        check_target([1, 2], 3, numeric=False)
    with pytest.raises(ValueError, match=r"^regression targets must be numbers: "):
        check_target(["a", "b"], 2, numeric=True)
    with pytest.raises(ValueError, match=r"^y holds 2 NaN or infinite value\(s\) \(first at row 1: \[inf\]\); drop or impute"):
        check_target([0.0, np.inf, np.nan], 3, numeric=True)
    with pytest.raises(ValueError, match=r"first at row 1, column 1: \[1.0, nan\]\)"):
        check_target(np.array([[0.0, 1.0], [1.0, np.nan]]), 2, numeric=True)
    with pytest.raises(ValueError, match=r"^Unknown label type: continuous\. A classifier needs discrete class labels"):
        check_target([0.5, 1.25, np.nan], 3, numeric=False)
    with pytest.raises(ValueError, match=r"^y holds 2 missing label\(s\) \(first at row 1\)$"):
        check_target(pd.Series(["a", None, "b", None]), 4, numeric=False)


def test_check_target_returns_the_values_in_the_right_dtype():
    out = check_target(pd.Series([1, 2, 3]), 3, numeric=True)
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0, 3.0]
    labels = check_target(pd.DataFrame({"a": [0, 1], "b": [1, 1]}), 2, numeric=False)
    assert labels.shape == (2, 2) and labels.dtype.kind == "i"
    with pytest.raises(ValueError, match=r"^y holds 1 missing label\(s\) \(first at row 2\)$"):
        check_target([1.0, 2.0, np.nan], 3, numeric=False)  # whole floats are labels; the NaN is a missing one
    np.testing.assert_array_equal(check_target(["x", "y"], 2, numeric=False), np.array(["x", "y"]))


def test_a_huge_but_finite_gradient_is_no_failure():
    # the fast L2 screen overflows on it; the max norm, which decides, does not
    guard = NonFiniteGuard().initialize()
    weight = torch.nn.Parameter(torch.zeros(4))
    weight.grad = torch.full((4,), 1e30)
    assert not torch.isfinite(torch._foreach_norm([weight.grad], 2)[0])
    guard.on_grad_computed(SimpleNamespace(grad_scaler_=None, accelerator_=None), [("weight", weight)], training=True)
    assert guard.failure_ is None
