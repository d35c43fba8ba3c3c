"""A multi-label fit starts each label's output at its training prevalence: a label of one value in
every training row is predicted as that value, not as the random initial bias left it."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from tabformer import TabFormerClassifier
from tabformer.estimators._multilabel import PRIOR_CLIP

QUICK = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, verbose=0, ensemble_size=1)


def table_with_constant_labels(n=200, seed=0):
    """'big' (a > 0, about half), 'rare' (b > 1, about 16%), 'never' (0 in every row), 'always' (1 in every row)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    Y = np.column_stack([X["a"] > 0, X["b"] > 1, np.zeros(n), np.ones(n)]).astype(int)
    return X, Y


def fit_quietly(X, Y, sample_weight=None, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the constant labels' warning (tested in test_multilabel_collapse)
        return TabFormerClassifier(**{**QUICK, **settings}).fit(X, Y, sample_weight=sample_weight)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_constant_label_is_predicted_as_its_value_from_the_first_step(seed):
    X, Y = table_with_constant_labels()
    # lr ~ 0: the model as initialised. Its constant labels were answered 1 and 0 around 0.5 before.
    clf = fit_quietly(X, Y, max_epochs=1, lr=1e-7, random_state=seed)
    far = X * 50  # rows unlike any in training
    for rows in (X, far):
        proba, predicted = clf.predict_proba(rows), clf.predict(rows)
        assert (predicted[:, 2] == 0).all() and (predicted[:, 3] == 1).all()
        assert proba[:, 2].max() < 0.05 and proba[:, 3].min() > 0.95
    bias = clf.module_.head.net[-1].bias.detach().numpy()
    # the training rows': the early-stopping holdout (validation_fraction="auto") is left out
    train, _ = train_test_split(np.arange(len(Y)), test_size=clf.resolved_params_["validation_fraction"], random_state=seed + 1)
    prevalence = Y[train, :2].mean(0)
    np.testing.assert_allclose(bias[:2], np.log(prevalence / (1 - prevalence)), atol=1e-3)  # the log-odds of each label


def test_a_trained_constant_label_stays_its_value_on_any_row_while_the_others_are_learned():
    X, Y = table_with_constant_labels()
    clf = fit_quietly(X, Y, max_epochs=4, lr=3e-3, random_state=0, validation_fraction=None)
    predicted = clf.predict(pd.concat([X, X * 50, -X * 50]))
    assert (predicted[:, 2] == 0).all() and (predicted[:, 3] == 1).all()
    # 'big' is learned: before, the constant labels' loss (log 2 each at the start) held it at 0 for every row here
    assert 0 < clf.predict(X)[:, 0].sum() < len(X)


def test_sample_weight_weighs_the_prevalence_the_output_starts_at():
    X, Y = table_with_constant_labels(n=120)
    weight = np.where(Y[:, 0] == 1, 3.0, 1.0)  # 'big' positives count three times
    settings = dict(max_epochs=1, lr=1e-7, random_state=0, validation_fraction=None)
    weighed = fit_quietly(X, Y, **settings, sample_weight=weight)
    share = weight @ Y[:, 0] / weight.sum()
    bias = weighed.module_.head.net[-1].bias.detach().numpy()
    assert bias[0] == pytest.approx(np.log(share / (1 - share)), abs=1e-3)
    assert fit_quietly(X, Y, **settings).module_.head.net[-1].bias.detach().numpy()[0] < bias[0]


def test_the_prevalence_is_the_training_rows_the_early_stopping_holdout_left_out():
    X, Y = table_with_constant_labels(n=40)
    # the estimator's holdout: a train_test_split of the row numbers seeded by random_state + 1 (unstratified, multi-label)
    train, holdout = train_test_split(np.arange(40), test_size=0.25, random_state=1)
    Y[:, 1] = 0
    Y[holdout[:3], 1] = 1  # 'rare' is positive in three held-out rows, in no training row
    weight = np.linspace(0.5, 2.0, 40)
    # lr=0: the output's bias stays where it started
    clf = fit_quietly(X, Y, weight, max_epochs=1, lr=0.0, random_state=0, validation_fraction=0.25)
    share = weight[train] @ Y[train, 0] / weight[train].sum()  # 'big': the training rows', weighed
    np.testing.assert_allclose(clf._label_prior_[:2], [share, 0.0])
    bias = clf.module_.head.net[-1].bias.detach().numpy()
    floor = np.log(PRIOR_CLIP / (1 - PRIOR_CLIP))  # as a label never positive in training: it read 3/40 (-2.5) before
    np.testing.assert_allclose(bias[:2], [np.log(share / (1 - share)), floor], atol=1e-5)
