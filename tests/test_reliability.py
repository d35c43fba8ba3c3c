"""Reliability promises (docs/reliability.md): training that diverges never returns a model
that silently predicts NaN, and predictions are never returned non-finite."""

import copy
import warnings

import numpy as np
import pytest
import torch
from conftest import TINY, make_table
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor
from tabformer.callbacks import NonFiniteTrainingError


class NaNAfter(torch.nn.CrossEntropyLoss):
    """Cross-entropy that turns NaN from its ``after``-th training call on."""

    def __init__(self, after=5, **kwargs):
        super().__init__(**kwargs)
        self.after, self.calls = after, 0

    def forward(self, logits, target):
        loss = super().forward(logits, target)
        if torch.is_grad_enabled():
            self.calls += 1
            if self.calls > self.after:
                return loss * float("nan")
        return loss


class EpochWeights(Callback):
    """Keeps a copy of the module's weights at the end of every epoch."""

    def initialize(self):
        self.weights = []
        return self

    def on_epoch_end(self, net, **kwargs):
        self.weights.append(copy.deepcopy(net.module_.state_dict()))


@pytest.mark.parametrize("estimator", [TabFormerClassifier, TabFormerRegressor])
def test_huge_lr_raises_naming_epoch_batch_and_lr(estimator):
    X, y = make_table()
    if estimator is TabFormerRegressor:
        y = X["income"].to_numpy()
        X = X.drop(columns="income")
    with pytest.raises(NonFiniteTrainingError, match=r"epoch 1, training batch \d+.*lower lr"):
        estimator(**TINY, lr=1e6, random_state=0).fit(X, y)


WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log", "red", "big", "house"]
TEXTS = [" ".join(np.random.default_rng(i).choice(WORDS, size=6)) for i in range(60)]


def test_huge_lr_in_the_mlm_pretrainer_raises():
    with pytest.raises(NonFiniteTrainingError, match="lower lr"):
        TabFormerPretrainer(objective="mlm", tokenizer__vocab_size=60, **TINY, lr=1e6, random_state=0).fit(TEXTS)


def test_warn_mode_keeps_a_model_with_the_last_good_weights():
    X, y = make_table()
    rows_per_epoch = int(len(X) * 0.9)  # validation_fraction=0.1
    batches_per_epoch = -(-rows_per_epoch // TINY["batch_size"])
    recorder = EpochWeights()
    clf = TabFormerClassifier(
        ensemble_size=1,
        **{**TINY, "max_epochs": 4},
        criterion=NaNAfter,
        criterion__after=batches_per_epoch + 1,  # the 2nd batch of epoch 2 goes NaN
        callbacks=[("recorder", recorder)],
        callbacks__nonfinite__action="warn",
        patience=None,
        random_state=0,
    )
    with pytest.warns(RuntimeWarning, match=r"epoch 2, training batch 2.*end of epoch 1"):
        clf.fit(X, y)
    assert len(clf.history) == 2  # stopped in epoch 2, never ran epochs 3 and 4
    assert len(recorder.weights) == 1
    for name, value in clf.module_.state_dict().items():
        torch.testing.assert_close(value, recorder.weights[0][name], msg=name)
    assert np.isfinite(clf.predict_proba(X)).all()
    assert "epoch 2" in clf.callbacks_[[n for n, _ in clf.callbacks_].index("nonfinite")][1].failure_


def test_a_nan_gradient_never_reaches_the_weights():
    X, y = make_table()
    # defer=False: checked batch by batch on any device (on a GPU the default defers to the phase's end)
    clf = TabFormerClassifier(
        **TINY, criterion=NaNAfter, criterion__after=0, callbacks__nonfinite__action="warn", callbacks__nonfinite__defer=False
    )
    initial = {}

    class Initial(Callback):
        def on_train_begin(self, net, **kwargs):
            initial.update(copy.deepcopy(net.module_.state_dict()))

    clf.set_params(callbacks=[("initial", Initial())])
    with pytest.warns(RuntimeWarning, match=r"non-finite gradient.*epoch 1, training batch 1.*initial values"):
        clf.fit(X, y)
    for name, value in clf.module_.state_dict().items():
        torch.testing.assert_close(value, initial[name], msg=name)


def test_finite_training_is_untouched_by_the_guard():
    X, y = make_table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = TabFormerClassifier(**TINY, random_state=0).fit(X, y)
    assert len(clf.history) == TINY["max_epochs"]


def test_non_finite_predictions_raise_naming_rows():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, random_state=0).fit(X, y)
    with torch.no_grad():
        next(clf.module_.head.parameters()).fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"non-finite outputs.*rows \[0, 1, 2"):
        clf.predict_proba(X)


def test_guard_action_is_checked():
    X, y = make_table()
    with pytest.raises(ValueError, match="'raise' or 'warn'.*'ignore'"):
        TabFormerClassifier(**TINY, callbacks__nonfinite__action="ignore").fit(X, y)


# ------------------------------------------------------------------------ continued training
def test_partial_fit_after_fit_restarts_the_cosine_schedule_and_moves_the_weights():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, random_state=0, lr_schedule="cosine", patience=None).fit(X, y)
    assert clf.optimizer_.param_groups[0]["lr"] == pytest.approx(0.0)  # where the cosine ended
    before = copy.deepcopy(clf.module_.state_dict())
    clf.partial_fit(X, y)
    new_epochs = clf.history[TINY["max_epochs"] :, "event_lr"]
    assert new_epochs[0] == pytest.approx(clf.resolved_params_["lr"])
    moved = [not torch.equal(value, before[name]) for name, value in clf.module_.state_dict().items()]
    assert sum(moved) > len(moved) // 2


def test_warm_start_refit_with_new_categories_is_refused():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, warm_start=True, random_state=0).fit(X, y)
    new = X.assign(city=X["city"].replace({"oslo": "lima"}))
    with pytest.raises(ValueError, match=r"categories the first fit never saw, in column\(s\) \['city'\].*warm_start=False"):
        clf.fit(new, y)
    clf.fit(X, y)  # the same categories continue fine


# ------------------------------------------------------------------------------ interrupts
class InterruptAfter(torch.nn.CrossEntropyLoss):
    """Cross-entropy whose ``after``-th training call raises KeyboardInterrupt, as Ctrl-C would."""

    def __init__(self, after=5, **kwargs):
        super().__init__(**kwargs)
        self.after, self.calls = after, 0

    def forward(self, logits, target):
        if torch.is_grad_enabled():
            self.calls += 1
            if self.calls > self.after:
                raise KeyboardInterrupt
        return super().forward(logits, target)


def test_keyboard_interrupt_leaves_a_usable_model_with_the_best_weights(caplog):
    X, y = make_table()
    batches_per_epoch = -(-int(len(X) * 0.9) // TINY["batch_size"])
    recorder = EpochWeights()
    clf = TabFormerClassifier(
        ensemble_size=1,
        **{**TINY, "max_epochs": 10},
        criterion=InterruptAfter,
        criterion__after=4 * batches_per_epoch + 1,  # in epoch 5
        callbacks=[("recorder", recorder)],
        patience=8,
        validation_fraction=0.1,  # as batches_per_epoch counts (a small table's "auto" holds out more)
        random_state=0,
    )
    with caplog.at_level("WARNING", logger="tabformer"):
        clf.fit(X, y)
    assert "fit interrupted (KeyboardInterrupt) in epoch 5" in caplog.text
    losses = clf.history[:4, "valid_loss"]
    best = recorder.weights[int(np.argmin(losses))]
    for name, value in clf.module_.state_dict().items():
        torch.testing.assert_close(value, best[name], msg=name)
    assert np.isfinite(clf.predict_proba(X)).all()


def test_early_stopping_is_not_reported_as_an_interrupt(caplog):
    X, y = make_table()
    with caplog.at_level("WARNING", logger="tabformer"):
        TabFormerClassifier(**{**TINY, "max_epochs": 40}, lr=5e-2, patience=1, random_state=0).fit(X, y)
    assert "interrupted" not in caplog.text


def test_prediction_tokenizes_in_chunks_with_the_same_result(tiny):
    X, y = make_table(60)
    texts = [f"word{i % 7} and word{i % 3}" for i in range(60)]
    for estimator, data, target in [
        (TabFormerClassifier(**tiny), X, y),
        (TabFormerRegressor(**tiny), X, np.arange(60.0)),
        (TabFormerClassifier(tokenizer="wordpiece", tokenizer__min_frequency=1, **tiny), texts, y),
    ]:
        estimator.fit(data, target)
        predict = getattr(estimator, "predict_proba", estimator.predict)
        whole = predict(data)
        features = estimator.forward_features(data)
        estimator.inference_chunk_rows = 7  # 60 rows: 9 chunks, the last of 4
        np.testing.assert_allclose(predict(data), whole, atol=1e-6)
        np.testing.assert_allclose(estimator.forward_features(data), features, atol=1e-5)


def test_predict_reads_a_parquet_dataset_batch_by_batch(tmp_path, tiny):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    X, y = make_table(90)
    clf = TabFormerClassifier(ensemble_size=1, **tiny).fit(X, y)
    pq.write_table(pa.Table.from_pandas(X, preserve_index=False), tmp_path / "rows.parquet", row_group_size=25)
    dataset = ds.dataset(tmp_path / "rows.parquet", format="parquet")
    clf.inference_chunk_rows = 20  # record batches of at most 20 rows: never the whole file
    np.testing.assert_allclose(clf.predict_proba(dataset), clf.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(clf.predict(dataset), clf.predict(X))
    assert clf.forward_features(dataset).shape == (90, tiny["encoder__d_model"])
