"""The training loop without a host sync per batch (``estimators/_epoch.py``), the guard's
deferred checks, host-side padding cuts and the fused optimizer step on a GPU."""

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback
from test_cuda import TEXT_TINY as CUDA_TEXT_TINY
from test_exact_checks import _net, _xy

from tabformer import TabFormerClassifier, TabFormerRegressor, TransformerEncoder
from tabformer.callbacks import NonFiniteGuard, NonFiniteTrainingError
from tabformer.estimators._precision import fuses_optimizer_step

TEXTS = [f"{'very ' * (i % 9)}good film number {i}" if i % 2 else f"bad film {i}" for i in range(48)]
LABELS = ["pos" if i % 2 else "neg" for i in range(48)]
TEXT_TINY = dict(CUDA_TEXT_TINY, max_epochs=2)


def test_a_deferred_nan_loss_names_the_same_batch_and_restores_the_same_weights():
    for defer in (False, True):
        torch.manual_seed(0)
        guard = NonFiniteGuard(check_gradients=False, defer=defer)
        net = _net(guard, at=7)  # 4 batches per epoch: the 3rd batch of epoch 2
        with pytest.raises(NonFiniteTrainingError, match=r"non-finite training loss \(nan\) at epoch 2, training batch 3;"):
            net.fit(*_xy())
        # Deferred, the 4th batch ran too before the check; the restored weights are epoch 1's all the same.
        assert net.criterion_.calls == (8 if defer else 7)
        epoch_1 = dict(net.callbacks_)["weights"].by_epoch[0]
        for name, value in net.module_.state_dict().items():
            torch.testing.assert_close(value, epoch_1[name], rtol=0, atol=0, msg=name)


def test_a_deferred_guard_catches_a_nan_gradient_in_the_next_loss_or_in_the_weights():
    torch.manual_seed(0)
    net = _net(NonFiniteGuard(defer=True), criterion=torch.nn.MSELoss).initialize()
    start = {k: v.clone() for k, v in net.module_.state_dict().items()}
    net.module_.second.weight.register_hook(lambda grad: grad * float("inf"))
    with pytest.raises(NonFiniteTrainingError, match=r"non-finite training loss \(nan\) at epoch 1, training batch 2;.*initial"):
        net.partial_fit(*_xy())
    for name, value in net.module_.state_dict().items():
        torch.testing.assert_close(value, start[name], rtol=0, atol=0, msg=name)
    # One batch per epoch: no later loss shows it, the weights do.
    net = _net(NonFiniteGuard(defer=True), criterion=torch.nn.MSELoss).set_params(batch_size=16).initialize()
    net.module_.second.weight.register_hook(lambda grad: grad * float("inf"))
    with pytest.raises(NonFiniteTrainingError, match=r"non-finite weights after the last training batch.*epoch 1"):
        net.partial_fit(*_xy())
    assert torch.isfinite(net.module_.second.weight).all()


def test_defer_auto_checks_each_batch_on_the_cpu():
    guard = NonFiniteGuard().initialize()
    net = _net(guard).initialize()
    guard.on_train_begin(net)
    guard.on_epoch_begin(net)
    assert guard.deferred_ is False
    guard.on_batch_begin(net, training=True)
    with pytest.raises(NonFiniteTrainingError, match="training batch 1"):
        guard.on_batch_end(net, training=True, loss=torch.tensor(float("nan")))
    assert NonFiniteGuard(defer=True).initialize()._defers(net) is True


class NaNOnValidation(Callback):
    """Makes the module answer NaN outside training, as a diverged model would."""

    def on_train_begin(self, net, **kwargs):
        net.module_.register_forward_hook(lambda module, args, out: out if module.training else out * float("nan"))


def test_an_estimator_checks_deferred_validation_losses_before_epoch_end_callbacks():
    y = np.linspace(0.0, 1.0, len(TEXTS))
    reg = TabFormerRegressor(
        callbacks=[("nan", NaNOnValidation())],
        callbacks__nonfinite__defer=True,
        validation_fraction=0.25,
        patience=None,
        **TEXT_TINY,
    )
    with pytest.raises(NonFiniteTrainingError, match=r"non-finite validation loss \(nan\) at epoch 1, validation batch 1;"):
        reg.fit(TEXTS, y)
    # skorch's valid_loss scoring, which runs at the epoch's end before the guard's own hook, never saw it
    assert "valid_loss" not in reg.history[-1] and len(reg.history) == 1


def test_batch_losses_are_floats_in_the_history_and_average_to_the_epoch_loss():
    clf = TabFormerClassifier(**TEXT_TINY).fit(TEXTS, LABELS)
    for epoch in clf.history:
        losses = [row["train_loss"] for row in epoch["batches"]]
        sizes = [row["train_batch_size"] for row in epoch["batches"]]
        assert losses and all(type(value) is float for value in losses)
        assert epoch["train_loss"] == pytest.approx(np.average(losses, weights=sizes))


def test_training_batches_arrive_cut_to_their_longest_text():
    clf = TabFormerClassifier(**dict(TEXT_TINY, max_epochs=1)).fit(TEXTS, LABELS)
    padded = clf.tokenize(TEXTS)["input_ids"].shape[1]
    seen = []
    clf.module_.embedder.register_forward_pre_hook(
        lambda module, args, kwargs: (
            seen.append((kwargs["input_ids"].shape[1], int(kwargs["attention_mask"].sum(1).max()))) if module.training else None
        ),
        with_kwargs=True,
    )
    clf.partial_fit(TEXTS, LABELS)
    assert seen and all(width == longest for width, longest in seen)
    assert min(width for width, _ in seen) < padded  # some batch was cut


def test_adam_steps_with_the_fused_kernel_unless_the_user_chose():
    assert fuses_optimizer_step(TabFormerClassifier(device="cuda"), set()) is True
    assert fuses_optimizer_step(TabFormerClassifier(device="cpu"), set()) is True
    assert fuses_optimizer_step(TabFormerClassifier(device="cuda", optimizer=torch.optim.SGD), set()) is False
    assert fuses_optimizer_step(TabFormerClassifier(device="cuda"), {"optimizer__foreach"}) is False
    assert fuses_optimizer_step(TabFormerClassifier(device="cuda"), {"optimizer__differentiable"}) is False
    clf = TabFormerClassifier(device="cpu", **TEXT_TINY).fit(TEXTS, LABELS)
    assert clf.resolved_params_["optimizer__fused"] is True and clf.optimizer_.defaults["fused"] is True
    chose = TabFormerClassifier(device="cpu", optimizer__foreach=True, **TEXT_TINY).fit(TEXTS, LABELS)
    assert "optimizer__fused" not in chose.resolved_params_ and not chose.optimizer_.defaults["fused"]


def test_a_deferred_guard_checks_the_weights_of_a_model_with_an_empty_parameter():
    # an all-numeric table has an empty categorical embedding: the max norm of nothing is no number
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)).astype(np.float32), np.array([0, 1, 2] * 20)
    tiny = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, batch_size=16, verbose=0)
    clf = TabFormerClassifier(callbacks__nonfinite__defer=True, **tiny).fit(X, y)
    assert any(p.numel() == 0 for p in clf.module_.parameters()) and len(clf.history) == 2


class NaNAtTrainingCall(Callback):
    """The module's output turns NaN at its ``at``-th training forward pass (1-based), once."""

    def __init__(self, at):
        self.at = at

    def on_train_begin(self, net, **kwargs):
        if getattr(self, "_hooked", False):
            return
        self._hooked, calls = True, []

        def hook(module, args, out):
            if module.training:
                calls.append(1)
            return out * float("nan") if module.training and len(calls) == self.at else out

        net.module_.register_forward_hook(hook)


def _non_finite_moments(optimizer):
    return sum(
        not bool(torch.isfinite(value).all())
        for state in optimizer.state.values()
        for value in state.values()
        if torch.is_tensor(value) and value.is_floating_point()
    )


def test_after_a_deferred_failure_the_optimizer_forgets_its_non_finite_moments():
    y = np.linspace(0.0, 1.0, len(TEXTS))
    reg = TabFormerRegressor(
        callbacks=[("nan", NaNAtTrainingCall(3))],
        callbacks__nonfinite__defer=True,
        callbacks__nonfinite__action="warn",
        patience=None,
        validation_fraction=None,
        **TEXT_TINY,
    )
    with pytest.warns(RuntimeWarning, match=r"non-finite training loss \(nan\) at epoch 1, training batch 3;"):
        reg.fit(TEXTS, y)
    assert _non_finite_moments(reg.optimizer_) == 0
    reg.partial_fit(TEXTS, y)  # trains on from the restored weights, without failing again
    assert reg.callbacks_[[name for name, _ in reg.callbacks_].index("nonfinite")][1].failure_ is None
    assert all(torch.isfinite(p).all() for p in reg.module_.parameters())


def test_a_fit_interrupted_mid_phase_still_has_its_deferred_losses_checked():
    class InterruptAtBatch4(Callback):
        def on_batch_end(self, net, training=False, **kwargs):
            if training and len(net.history[-1]["batches"]) == 4:
                raise KeyboardInterrupt

    y = np.linspace(0.0, 1.0, len(TEXTS))
    reg = TabFormerRegressor(
        callbacks=[("nan", NaNAtTrainingCall(2)), ("stop", InterruptAtBatch4())],
        callbacks__nonfinite__defer=True,
        patience=None,
        validation_fraction=None,
        **TEXT_TINY,
    )
    with pytest.warns(RuntimeWarning, match=r"non-finite training loss \(nan\) at epoch 1, training batch 2;.*initial"):
        reg.fit(TEXTS, y)
    assert all(torch.isfinite(p).all() for p in reg.module_.parameters())
    assert np.isfinite(reg.predict(TEXTS)).all()


def test_a_guard_pickled_before_defer_existed_still_trains():
    clf = TabFormerClassifier(**TEXT_TINY).fit(TEXTS, LABELS)
    guard = dict(clf.callbacks_)["nonfinite"]
    for name in ("defer", "pending_losses_", "_deferred"):
        guard.__dict__.pop(name, None)
    clf.partial_fit(TEXTS, LABELS)
    assert len(clf.history) == 4  # two epochs more


def test_on_the_cpu_batch_callbacks_read_float_losses():
    seen = []

    class ReadLoss(Callback):
        def on_batch_end(self, net, training=False, **kwargs):
            seen.append(type(net.history[-1, "batches", -1, "train_loss" if training else "valid_loss"]))

    TabFormerClassifier(callbacks=[("read", ReadLoss())], validation_fraction=0.25, **TEXT_TINY).fit(TEXTS, LABELS)
    assert seen and set(seen) == {float}


def test_the_fused_step_is_no_part_of_a_checkpoints_fingerprint():
    from tabformer._checkpoint import _config

    clf = TabFormerClassifier(**TEXT_TINY).fit(TEXTS, LABELS)
    plain = _config(clf)
    clf.resolved_params_["optimizer__fused"] = True  # what a fit on a GPU resolves
    assert _config(clf) == plain


def test_the_guard_keeps_its_snapshot_buffers_and_renews_them_when_a_shape_changes():
    torch.manual_seed(0)
    guard = NonFiniteGuard().initialize()
    net = _net(guard).initialize()
    guard._snapshot(net)
    first = {key: value.data_ptr() for key, value in guard.good_state_.items()}
    with torch.no_grad():
        net.module_.first.weight.add_(1.0)
    guard._snapshot(net)
    assert {key: value.data_ptr() for key, value in guard.good_state_.items()} == first  # filled again, not reallocated
    torch.testing.assert_close(guard.good_state_["first.weight"], net.module_.first.weight.detach(), rtol=0, atol=0)
    net.module_.first = torch.nn.Linear(3, 7)  # e.g. an embedding grown for new categories
    net.module_.second = torch.nn.Linear(7, 1)
    guard._snapshot(net)
    assert guard.good_state_["first.weight"].shape == (7, 3)
    torch.testing.assert_close(guard.good_state_["second.weight"], net.module_.second.weight.detach(), rtol=0, atol=0)


class Modes(Callback):
    """Records, per batch, the model's and its frozen encoder's training flags."""

    def initialize(self):
        self.seen = []
        return self

    def on_batch_end(self, net, training=False, **kwargs):
        self.seen.append((training, net.module_.training, net.module_.encoder.training))


def test_modes_are_set_once_per_phase_and_still_follow_outside_changes_and_frozen_parts():
    modes = Modes()
    # A warm-start encoder to freeze (a fresh one is refused: it would freeze random weights).
    settings = {key: value for key, value in TEXT_TINY.items() if not key.startswith("encoder__")}
    encoder = TransformerEncoder(d_model=16, n_heads=2, n_layers=1)
    clf = TabFormerClassifier(
        callbacks=[("modes", modes)], encoder=encoder, freeze_encoder=True, validation_fraction=0.25, patience=None, **settings
    ).fit(TEXTS, LABELS)
    assert modes.seen and all(model == training and not encoder for training, model, encoder in modes.seen)
    calls = []
    original = type(clf.module_).train
    clf.module_.train = lambda mode=True: calls.append(mode) or original(clf.module_, mode)
    clf.partial_fit(TEXTS, LABELS)
    batches = len(clf.history[-1]["batches"])
    # One walk per phase (2 epochs, each training then validation), not one per batch.
    assert batches > 2 and calls == [True, False] * 2
    # Changed from outside (or a module replaced): the next step walks again; a pickle carries no stale record.
    clf.module_.eval()
    modes.seen.clear()
    clf.partial_fit(TEXTS, LABELS)
    assert calls[-2:] == [True, False] and modes.seen[0] == (True, True, False)
    del clf.module_.train
    clf._set_training(True)
    clf.module_.eval()
    clf._set_training(True)
    assert clf.module_.training and not clf.module_.encoder.training
    clf.module_ = type(clf.module_)(**{k: getattr(clf.module_, k) for k in ("embedder", "encoder", "head")}, freeze_encoder=True)
    clf.module_.encoder.train()
    clf._set_training(True)  # a new module: walked although its own flag already reads True
    assert not clf.module_.encoder.training
    assert "_modes_set" in vars(clf) and "_modes_set" not in clf.__getstate__()
