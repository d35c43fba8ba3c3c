"""The epoch's losses and ``valid_acc`` follow ``sample_weight`` and ``class_weight`` (``_weighted_scores``)."""

import numpy as np
import pytest
from conftest import TINY, make_table
from sklearn.metrics import accuracy_score

from tabformer import TabFormerClassifier, TabFormerRegressor

SETTINGS = dict(TINY, ensemble_size=1, patience=None, validation_fraction=0.3, random_state=0, max_epochs=3)


def _weights(n):
    return np.random.default_rng(1).choice([0.2, 1.0, 5.0], n)


def test_the_weighted_validation_loss_does_not_depend_on_the_validation_batch_size():
    # skorch averaged the batches' weighted losses by their row counts: off once the holdout took several batches
    X, y = make_table(n=200)
    weights = _weights(200)
    losses = []
    for batch_size in (16, 1024):
        clf = TabFormerClassifier(**SETTINGS, iterator_valid__batch_size=batch_size).fit(X, y, sample_weight=weights)
        losses.append(clf.history[:, "valid_loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    reg = [
        TabFormerRegressor(**SETTINGS, iterator_valid__batch_size=size).fit(X, np.linspace(0, 1, 200), sample_weight=weights)
        for size in (16, 1024)
    ]
    np.testing.assert_allclose(reg[0].history[:, "valid_loss"], reg[1].history[:, "valid_loss"], rtol=1e-5)


def test_valid_acc_is_the_weighted_accuracy_of_the_holdout():
    X, y = make_table(n=200)
    weights = _weights(200)
    clf = TabFormerClassifier(**SETTINGS).fit(X, y, sample_weight=weights)
    _, valid = clf._holdout_split(len(y), clf._encode_target(y))
    predicted = clf.predict(X.iloc[valid])
    expected = accuracy_score(y[valid], predicted, sample_weight=weights[valid])
    assert abs(clf.history[-1, "valid_acc"] - expected) < 1e-9
    assert abs(expected - accuracy_score(y[valid], predicted)) > 1e-3  # the weights change it: the check can fail
    balanced = TabFormerClassifier(**SETTINGS, class_weight="balanced").fit(X, y)
    _, valid = balanced._holdout_split(len(y), balanced._encode_target(y))
    share = {label: np.mean(y == label) for label in np.unique(y)}
    row_weights = np.array([1 / share[label] for label in y[valid]])
    assert (
        abs(
            balanced.history[-1, "valid_acc"]
            - accuracy_score(y[valid], balanced.predict(X.iloc[valid]), sample_weight=row_weights)
        )
        < 1e-9
    )


def test_without_weights_the_scores_are_skorchs():
    X, y = make_table(n=200)
    clf = TabFormerClassifier(**SETTINGS).fit(X, y)
    _, valid = clf._holdout_split(len(y), clf._encode_target(y))
    assert abs(clf.history[-1, "valid_acc"] - accuracy_score(y[valid], clf.predict(X.iloc[valid]))) < 1e-9
    assert "valid_batch_weight" not in clf.history[-1, "batches"][-1]


@pytest.mark.parametrize(
    "class_weight, message",
    [
        ({"no": -3.0}, r"class_weight must be finite and non-negative; got \{'no': -3.0\}"),
        ({"no": np.nan}, r"class_weight must be finite and non-negative; got \{'no': nan\}"),
        ({"yes": np.inf}, r"class_weight must be finite and non-negative; got \{'yes': inf\}"),
        ({"no": 0, "yes": 0}, r"class_weight leaves no class with any weight"),
        ({"no": 0}, r"class_weight leaves only class 'yes' with any weight"),
    ],
)
def test_bad_class_weights_are_named(class_weight, message):
    # They trained unweighted (all 0), or failed naming sample_weight, the learning rate or the holdout
    X, y = make_table(n=60)
    with pytest.raises(ValueError, match=message):
        TabFormerClassifier(**SETTINGS, class_weight=class_weight).fit(X, y)


def test_balanced_class_weights_are_the_fits_and_continued_fits_keep_them():
    from sklearn.utils.class_weight import compute_class_weight

    X, y = make_table(n=200)
    clf = TabFormerClassifier(**SETTINGS, class_weight="balanced").fit(X, y)
    expected = compute_class_weight("balanced", classes=clf.classes_, y=y)
    np.testing.assert_allclose(clf.class_weight_, expected)
    chunk = np.flatnonzero(y == "yes")[:10].tolist() + np.flatnonzero(y == "no")[:40].tolist()  # another balance
    clf.partial_fit(X.iloc[chunk], y[chunk])  # recomputed from the chunk before: its own counts
    np.testing.assert_allclose(clf.class_weight_, expected)
    clf.set_params(class_weight={"yes": 3.0}).partial_fit(X.iloc[chunk], y[chunk])  # a dict is read afresh
    np.testing.assert_allclose(clf.class_weight_, [1.0, 3.0])
    refit = clf.set_params(class_weight="balanced").fit(X.iloc[chunk], y[chunk])  # a new fit weighs its own y
    np.testing.assert_allclose(refit.class_weight_, compute_class_weight("balanced", classes=clf.classes_, y=y[chunk]))


def test_a_class_weight_naming_a_label_a_fold_lacks_is_read_as_scikit_learn_does():
    # A rare class absent from a CV fold failed the fold ("names label(s) [2] not in y"); LogisticRegression ignores it
    X, y = make_table(n=60)
    labels = np.where(y == "yes", 1, 0)
    clf = TabFormerClassifier(**SETTINGS, class_weight={0: 1.0, 1: 2.0, 2: 5.0}).fit(X, labels)
    np.testing.assert_allclose(clf.class_weight_, [1.0, 2.0])
    with pytest.raises(
        ValueError, match=r"names label\(s\) \[2\] not in y, and not class\(es\) \[1\] of y; classes are \[0, 1\]"
    ):
        TabFormerClassifier(**SETTINGS, class_weight={0: 1.0, 2: 5.0}).fit(X, labels)  # a misspelt label, likely
