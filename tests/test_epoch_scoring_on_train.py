"""skorch's training-batch scoring (``EpochScoring(..., on_train=True)``, ``BatchScoring``) on a
tabformer classifier: the figure skorch's own definition gives, and a clear refusal where an
ensemble's members leave no single training prediction to score."""

import numpy as np
import pytest
import torch
from conftest import TINY
from sklearn.metrics import accuracy_score
from skorch import NeuralNetClassifier
from skorch.callbacks import BatchScoring, Callback, EpochScoring

from tabformer import TabFormerClassifier, TabFormerRegressor


class TrainingBatchAccuracy(Callback):
    """skorch's definition, by hand: the accuracy of the training batches' outputs (before each step) against their y."""

    def on_epoch_begin(self, net, **kwargs):
        self.predicted, self.true = [], []

    def on_batch_end(self, net, batch, training, y_pred=None, **kwargs):
        if training:
            self.predicted.append(y_pred.detach().argmax(1).numpy())
            self.true.append(np.asarray(batch[1]))

    def on_epoch_end(self, net, **kwargs):
        net.history.record("by_hand", accuracy_score(np.concatenate(self.true), np.concatenate(self.predicted)))


def table():
    X = np.random.default_rng(0).normal(size=(60, 3)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64)


def scored(net, X, y):
    callbacks = [("by_hand", TrainingBatchAccuracy()), ("train_acc", EpochScoring("accuracy", name="train_acc", on_train=True))]
    net.set_params(callbacks=callbacks).fit(X, y)
    return net.history[:, ("train_acc", "by_hand")]


def test_training_accuracy_is_skorchs_figure_for_one_model():
    X, y = table()
    plain = NeuralNetClassifier(torch.nn.Linear(3, 2), criterion=torch.nn.CrossEntropyLoss, max_epochs=2, verbose=0)
    for train, by_hand in scored(plain, X, y):  # the hand-made figure is skorch's own
        assert train == pytest.approx(by_hand)
    ours = scored(TabFormerClassifier(**dict(TINY, max_epochs=2, batch_size=16), ensemble_size=1, random_state=0), X, y)
    assert len(ours) == 2  # it raised "Can't call numpy() on Tensor that requires grad"
    for train, by_hand in ours:
        assert train == pytest.approx(by_hand)


def test_batch_scoring_of_training_batches_works_for_one_model():
    X, y = table()
    clf = TabFormerClassifier(**dict(TINY, batch_size=16), ensemble_size=1)
    clf.set_params(callbacks=[("batch_acc", BatchScoring("accuracy", name="batch_acc", on_train=True))]).fit(X, y)
    assert all(0 <= score <= 1 for score in clf.history_[-1, "batches", :, "batch_acc"])


@pytest.mark.small_table_ensemble
def test_training_scores_of_the_default_ensemble_are_refused_naming_the_way_out():
    X, y = table()
    callbacks = [("train_acc", EpochScoring("accuracy", on_train=True))]
    with pytest.raises(ValueError, match=r"\['train_acc'\] score the training batches .* 5 ensemble members, each on every fold"):
        TabFormerClassifier(**TINY, callbacks=callbacks).fit(X, y)
    with pytest.raises(ValueError, match=r"trains 3 ensemble members with ensemble_size=3: .* Pass ensemble_size=1"):
        TabFormerRegressor(
            **TINY, ensemble_size=3, validation_fraction=None, callbacks=[("r2", EpochScoring("r2", on_train=True))]
        ).fit(X, X[:, 0])
    TabFormerClassifier(**TINY, callbacks=[("acc", EpochScoring("accuracy"))]).fit(X, y)  # validation scores still work
