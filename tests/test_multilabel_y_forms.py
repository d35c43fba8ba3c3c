"""A y that is not a 0/1 indicator matrix, though close to one, is refused saying what it holds and how to make one."""

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import MultiLabelBinarizer

from tabformer import TabFormerClassifier, TabFormerRegressor

QUICK = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, random_state=0, verbose=0)
QUICK.update(ensemble_size=1, validation_fraction=None)


def table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "colour": rng.choice(["red", "blue"], n)})
    Y = pd.DataFrame({"big": (X["x"] > 0).astype(int), "red": (X["colour"] == "red").astype(int)})
    return X, Y


@pytest.mark.parametrize(("shift", "values"), [(lambda Y: 2 * Y - 1, r"\[-1, 1\]"), (lambda Y: Y + 1, r"\[1, 2\]")])
def test_a_two_valued_matrix_other_than_0_1_names_its_values(shift, values):
    X, Y = table()
    with pytest.raises(ValueError, match=rf"y of shape \(40, 2\) holds the values {values}: a multi-label y is a 0/1 indicator"):
        TabFormerClassifier(**QUICK).fit(X, shift(Y.to_numpy()))


def test_a_fitted_model_refuses_other_values_naming_them():
    X, Y = table()
    clf = TabFormerClassifier(**QUICK).fit(X, Y)
    with pytest.raises(ValueError, match=r"holds the values \[-1, 1\]"):
        clf.partial_fit(X, 2 * Y - 1)


def test_score_refuses_other_values_rather_than_scoring_them_against_0_1():
    # score read a -1/1 y as it came, against 0/1 predictions: subset accuracy 0, silently
    X, Y = table()
    clf = TabFormerClassifier(**QUICK).fit(X, Y)
    with pytest.raises(ValueError, match=r"holds the values \[-1, 1\]"):
        clf.score(X, 2 * Y - 1)
    assert 0 <= clf.score(X, Y) <= 1


@pytest.mark.parametrize("dtype", ["object", "category"])
def test_a_frame_of_0_1_of_object_or_category_dtype_names_the_dtype(dtype):
    X, Y = table()
    with pytest.raises(ValueError, match=rf"holds only 0 and 1, but of dtype {dtype}, .* pass y.astype\(int\)"):
        TabFormerClassifier(**QUICK).fit(X, Y.astype(dtype))


@pytest.mark.parametrize("kind", [list, set, tuple])
def test_each_rows_label_list_points_to_multilabel_binarizer(kind):
    X, Y = table()
    rows = [kind(name for name in Y.columns if row[name]) for _, row in Y.iterrows()]
    with pytest.raises(ValueError, match=r"each row's labels as lists or sets; .*MultiLabelBinarizer\(\).fit_transform\(y\)"):
        TabFormerClassifier(**QUICK).fit(X, rows)
    clf = TabFormerClassifier(**QUICK).fit(X, MultiLabelBinarizer().fit_transform(rows))  # the way out works
    assert clf.multilabel_


def test_a_matrix_of_class_names_points_to_multioutput_and_the_binarizer():
    X, _ = table()
    with pytest.raises(ValueError, match=r"it holds 'a'\. A class per column .* MultiOutputClassifier.*MultiLabelBinarizer"):
        TabFormerClassifier(**QUICK).fit(X, [["a", "b"], ["b", "c"]] * 20)


def test_a_regressors_nan_in_a_2d_target_names_its_column():
    X, Y = table()
    Y = Y.astype(float)
    Y.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite value\(s\) \(first at row 3, column 1 \('red'\): \[.*, nan\]\)"):
        TabFormerRegressor(**QUICK).fit(X, Y)
    with pytest.raises(ValueError, match=r"\(first at row 3, column 1: \["):
        TabFormerRegressor(**QUICK).fit(X, Y.to_numpy())
