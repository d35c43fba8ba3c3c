"""scikit-learn meta-estimators and inspection tools a review ran (stop 41): each failed, or answered wrong, before its fix."""

import warnings

import numpy as np
from conftest import TINY, make_table
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.inspection import partial_dependence, permutation_importance
from sklearn.model_selection import TunedThresholdClassifierCV, cross_val_predict

from tabformer import TabFormerClassifier


def test_bagging_reads_a_nullable_float_column_as_numbers():
    # BaggingClassifier turns the frame into an object array (check_array(dtype=None)); a
    # Float64 column (X.convert_dtypes(), read_parquet's nullable dtypes) keeps pd.NA there,
    # and the column was read as categories: every number a category of its own.
    X, y = make_table()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*read as categories")
        bag = BaggingClassifier(TabFormerClassifier(**TINY, random_state=0), n_estimators=1, random_state=0)
        bag.fit(X.convert_dtypes(), y)
    assert bag.estimators_[0].tokenizer_.numeric_columns_ == ["x0", "x2"]  # age and income
    assert bag.predict(X.convert_dtypes()[:3]).shape == (3,)


def test_calibration_stacking_voting_and_thresholds_keep_string_labels():
    # No bug found: each answers in the user's labels, in classes_ order, as sklearn's own classifiers do.
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, random_state=0)
    frozen = CalibratedClassifierCV(FrozenEstimator(clone(clf).fit(X, y))).fit(X, y)
    tools = [
        CalibratedClassifierCV(clf, cv=3),
        StackingClassifier([("a", clf)], cv=3),
        VotingClassifier([("a", clf), ("b", clone(clf).set_params(random_state=1))], voting="soft"),
        TunedThresholdClassifierCV(clf, cv=3),
    ]
    for tool in [frozen] + [tool.fit(X, y) for tool in tools]:
        assert list(tool.classes_) == ["no", "yes"]
        assert set(tool.predict(X)) <= {"no", "yes"}
        np.testing.assert_allclose(tool.predict_proba(X[:5]).sum(1), 1.0, rtol=1e-5)
    first, second = (cross_val_predict(clf, X, y, cv=3, method="predict_proba") for _ in range(2))
    np.testing.assert_array_equal(first, second)  # a fixed random_state: the same out-of-fold answers


def test_permutation_importance_and_partial_dependence_read_a_categorical_column():
    # No bug found: both shuffle or set the category column of the frame, and the model reads it.
    X, y = make_table(300)
    X = X.assign(city=X["city"].fillna("none"), age=X["age"].fillna(40.0))  # sklearn's grids refuse NaN
    model = TabFormerClassifier(**{**TINY, "max_epochs": 10}, random_state=0).fit(X, y)
    importances = permutation_importance(model, X, y, n_repeats=2, random_state=0).importances_mean
    assert importances[list(X.columns).index("city")] > 0.05
    city = partial_dependence(model, X, ["city"], categorical_features=["city"])
    assert city["grid_values"][0][np.argmax(city["average"][0])] == "rome"  # rome lifts the score by 1.5
    age = partial_dependence(model, X, ["age"], grid_resolution=5)["average"][0]
    assert age[-1] > age[0]  # older rows score higher
