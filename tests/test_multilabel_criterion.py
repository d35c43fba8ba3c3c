"""The loss of a multi-label y takes the user's criterion__* settings (BCEWithLogitsLoss's), and refuses the others by name."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import TabFormerClassifier

QUICK = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, random_state=0, verbose=0)
QUICK.update(ensemble_size=1, validation_fraction=None)


def rare_labels(n=200, seed=0):
    """Two labels read off ``x``: 'big' (x > 0, half the rows) and 'rare' (x > 1.3, about a tenth)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "colour": rng.choice(["red", "blue"], n)})
    return X, np.column_stack([X["x"] > 0, X["x"] > 1.3]).astype(int)


def test_pos_weight_reaches_the_loss_and_predicts_more_of_the_upweighted_label():
    X, Y = rare_labels()
    settings = {**QUICK, "max_epochs": 8, "lr": 3e-3}
    plain = TabFormerClassifier(**settings).fit(X, Y)
    weighted = TabFormerClassifier(**settings, criterion__pos_weight=[1.0, 20.0]).fit(X, Y)
    assert isinstance(weighted.criterion_, torch.nn.BCEWithLogitsLoss)
    assert weighted.criterion_.pos_weight.tolist() == [1.0, 20.0]
    assert weighted.predict(X)[:, 1].sum() > plain.predict(X)[:, 1].sum() + 20
    assert weighted.predict_proba(X)[:, 1].mean() > plain.predict_proba(X)[:, 1].mean() + 0.05


def test_weight_reaches_the_loss_with_sample_weight_too():
    X, Y = rare_labels(n=60)
    clf = TabFormerClassifier(**QUICK, criterion__weight=np.array([1.0, 3.0])).fit(X, Y, sample_weight=np.linspace(0.5, 1, 60))
    assert clf.criterion_.weight.tolist() == [1.0, 3.0] and clf.criterion_.reduction == "mean"


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ({"criterion__label_smoothing": 0.1}, r"criterion__label_smoothing: a multi-label y trains BCEWithLogitsLoss .* "),
        ({"criterion__ignore_index": 0}, r"takes no ignore_index; its settings are weight, pos_weight, reduction"),
        ({"criterion__pos_weight": [1.0, 2.0, 3.0]}, r"criterion__pos_weight has shape \(3,\); .* shape \(2,\)"),
        ({"criterion__weight": [1.0, -2.0]}, r"criterion__weight must be finite and non-negative"),
        ({"criterion__reduction": "sum"}, r"criterion__reduction='sum' is not supported: training minimises the rows' mean"),
        ({"criterion__reduction": "none"}, r"criterion__reduction='none' is not supported"),
        ({"class_weight": "balanced"}, r"class_weight is not supported with a multi-label y .* criterion__pos_weight"),
    ],
)
def test_settings_the_multilabel_loss_does_not_take_are_refused_by_name(setting, match):
    X, Y = rare_labels(n=40)
    with pytest.raises(ValueError, match=match):
        TabFormerClassifier(**QUICK, **setting).fit(X, Y)


def test_pos_weight_with_a_single_label_y_names_the_single_label_loss():
    X, Y = rare_labels(n=40)
    with pytest.raises(ValueError, match=r"this y is single-label, trained with CrossEntropyLoss, which takes no pos_weight"):
        TabFormerClassifier(**QUICK, criterion__pos_weight=[2.0]).fit(X, Y[:, 0])


def test_an_explicit_criterion_keeps_its_own_settings():
    X, Y = rare_labels(n=40)
    clf = TabFormerClassifier(**QUICK, criterion=torch.nn.BCEWithLogitsLoss, criterion__pos_weight=torch.tensor([1.0, 4.0]))
    assert clf.fit(X, Y).criterion_.pos_weight.tolist() == [1.0, 4.0]
    with pytest.raises(ValueError, match=r"criterion__reduction='sum' is not supported"):
        TabFormerClassifier(**QUICK, criterion__reduction="sum").fit(X, Y[:, 0])


def test_a_refit_on_a_multilabel_y_drops_the_previous_image_fits_label_smoothing():
    # The image recipe's label smoothing (CrossEntropyLoss's) stays in resolved_params_ until the
    # next fit resolves its own; the multi-label check read it as the user's and refused the refit.
    rng = np.random.default_rng(0)
    images = rng.random((30, 8, 8, 3)).astype("float32")
    Y = np.column_stack([np.arange(30) % 2, np.arange(30) % 3 == 0]).astype(int)
    clf = TabFormerClassifier(**QUICK).fit(images, Y[:, 0])
    assert clf.resolved_params_["criterion__label_smoothing"] == 0.1
    clf.fit(images, Y)
    assert type(clf.criterion_) is torch.nn.BCEWithLogitsLoss
    assert "criterion__label_smoothing" not in clf.resolved_params_
    mine = TabFormerClassifier(**QUICK, criterion__label_smoothing=0.1).fit(images, Y[:, 0])
    with pytest.raises(ValueError, match=r"criterion__label_smoothing: a multi-label y trains BCEWithLogitsLoss"):
        mine.fit(images, Y)  # the user's own setting is refused still


def test_set_params_after_fit_refuses_a_setting_the_multilabel_loss_lacks_by_name():
    # skorch rebuilds the criterion at set_params on a fitted net: torch raised "unexpected keyword argument"
    X, Y = rare_labels()
    clf = TabFormerClassifier(**QUICK).fit(X, Y)
    with pytest.raises(ValueError, match="criterion__label_smoothing: a multi-label y trains BCEWithLogitsLoss"):
        clf.set_params(criterion__label_smoothing=0.1)
