"""scikit-learn meta-estimators and inspection tools a review ran (stop 41): each failed, or answered wrong, before its fix."""

import warnings

from conftest import TINY, make_table
from sklearn.ensemble import BaggingClassifier

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
