"""A classifier's scoring callbacks compare labels with labels, as sklearn's scorers do on a fitted
estimator. ``predict`` answered the epoch's rows (a ``Dataset``) with their encoded classes and the
targets came encoded too, so a scorer naming a label raised on labels ``neg``/``pos``
(``make_scorer(f1_score, pos_label="pos")``: "pos_label=pos is not a valid label. It should be one
of [0 1]"), and ``"f1"`` on labels 1/2 scored class 2 (its ``pos_label=1`` read as class number 1)."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.metrics import f1_score, make_scorer
from sklearn.model_selection import train_test_split
from skorch.callbacks import BatchScoring, EpochScoring

from tabformer import TabFormerClassifier


def table(n=80):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(["x", "y"], n)})
    return X, X["a"].to_numpy() + 0.5 * rng.normal(size=n) > 0.3


def fitted(X, y, scoring, score=EpochScoring, **kwargs):
    callbacks = [(name, score(s, name=name, lower_is_better=False, **kwargs)) for name, s in scoring.items()]
    # patience=None: the last epoch's model is kept, so the last epoch's scores are the fitted model's
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    return clf.set_params(callbacks=callbacks).fit(X, y)


def holdout(y):
    """The estimator's holdout rows: a stratified train_test_split of the row numbers seeded by random_state + 1."""
    return train_test_split(np.arange(len(y)), test_size=0.25, random_state=1, stratify=y)[1]


@pytest.mark.parametrize("cached", [True, False])
def test_a_scorer_naming_a_string_label_scores_the_holdout(cached):
    X, positive = table()
    y = np.where(positive, "pos", "neg")
    f1_pos = make_scorer(f1_score, pos_label="pos")
    clf = fitted(X, y, {"f1_pos": f1_pos, "f1_macro": "f1_macro"}, use_caching=cached)
    valid = holdout(y)
    predicted = clf.predict(X.iloc[valid])
    assert clf.history_[-1, "f1_pos"] == pytest.approx(f1_score(y[valid], predicted, pos_label="pos"))
    assert clf.history_[-1, "f1_pos"] == pytest.approx(f1_pos(clf, X.iloc[valid], y[valid]))  # sklearn's scorer, raw rows
    assert clf.history_[-1, "f1_macro"] == pytest.approx(f1_score(y[valid], predicted, average="macro"))


def test_f1_on_labels_1_and_2_scores_label_1_as_sklearn_does():
    X, positive = table()
    y = np.where(positive, 1, 2)  # ints, not the class numbers 0, 1: pos_label=1 is label 1, class number 0
    clf = fitted(X, y, {"f1": "f1"}, use_caching=False)
    valid = holdout(y)
    assert clf.history_[-1, "f1"] == pytest.approx(f1_score(y[valid], clf.predict(X.iloc[valid]), pos_label=1))


def test_string_f1_raises_sklearns_own_error_on_string_labels():
    # sklearn's "f1" scores pos_label=1, which labels neg/pos lack: cross_val_score raises the same
    X, positive = table()
    with pytest.raises(ValueError, match="pos_label=1 is not a valid label"):
        fitted(X, np.where(positive, "pos", "neg"), {"f1": "f1"})


def test_a_batch_scorer_naming_a_string_label_scores_the_holdout():
    X, positive = table()
    y = np.where(positive, "pos", "neg")
    clf = fitted(X, y, {"batch_f1": make_scorer(f1_score, pos_label="pos")}, score=BatchScoring)
    valid = holdout(y)
    assert clf.history_[-1, "batches", :, "valid_batch_size"] == [len(valid)]  # one batch: its f1 is the holdout's
    assert clf.history_[-1, "batch_f1"] == pytest.approx(f1_score(y[valid], clf.predict(X.iloc[valid]), pos_label="pos"))


class _Trained(BatchScoring):
    """Counts the training batches (a scorer of no label: it scores the batch's loss)."""

    def __init__(self):
        super().__init__(lambda net, X, y: 0.0, name="never", on_train=True)
        self.batches = 0

    def on_batch_end(self, net, **kwargs):
        self.batches += 1


@pytest.mark.parametrize(
    ("scoring", "score", "fix"),
    [
        ("f1", EpochScoring, r"make_scorer\(f1_score, pos_label='pos'\) .*or 'f1_macro'"),
        ("precision", BatchScoring, r"make_scorer\(precision_score, pos_label='pos'\)"),
        ("recall", EpochScoring, r"make_scorer\(recall_score, pos_label='pos'\)"),
        ("jaccard", EpochScoring, r"make_scorer\(jaccard_score, pos_label='pos'\)"),
        (
            "average_precision",
            EpochScoring,
            r"make_scorer\(average_precision_score, response_method=\('decision_function', 'predict_proba'\), pos_label='pos'\)",
        ),
    ],
)
def test_a_scorer_of_pos_label_1_on_string_labels_is_refused_before_training(scoring, score, fix):
    # sklearn's error came at the end of the first epoch, after it trained.
    X, positive = table()
    counter = _Trained()
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("counter", counter), ("mine", score(scoring, lower_is_better=False))])
    message = rf"{score.__name__} 'mine' in callbacks scores '{scoring}', whose pos_label=1 is not a valid label\. It should "
    with pytest.raises(ValueError, match=message + r"be one of \['neg', 'pos'\]: pass " + fix):
        clf.fit(X, np.where(positive, "pos", "neg"))
    assert counter.batches == 0


def test_a_scorer_routed_to_a_callback_is_checked_too():
    X, positive = table()
    clf = TabFormerClassifier(**TINY, random_state=0, ensemble_size=1, validation_fraction=0.25, patience=None)
    clf.set_params(callbacks=[("mine", EpochScoring("f1_macro"))], callbacks__mine__scoring="recall")
    with pytest.raises(ValueError, match="EpochScoring 'mine' in callbacks scores 'recall', whose pos_label=1"):
        clf.fit(X, np.where(positive, "pos", "neg"))
