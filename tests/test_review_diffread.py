"""Regression tests for the review of the day's diff (3b627c1..): each failed before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer.tokenizers import TabularTokenizer


def test_int_categories_read_floats_of_a_column_with_a_missing_cell_as_unseen_numbers():
    # An int category column that misses a cell at predict arrives as float64: 5.0 is a new number, not another
    # type (4fcf7a4 refused it once a fitted 1.0 sat beside it; before, the batch passed)
    X = pd.DataFrame({"a": [1, 2, 3] * 10, "b": np.arange(30.0)})
    tokenizer = TabularTokenizer(categorical_columns=["a"]).fit(X)
    seen = tokenizer.transform(pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 1.0]}))
    with pytest.warns(UserWarning):  # the missing cell fit never saw
        got = tokenizer.transform(pd.DataFrame({"a": [1.0, np.nan, 5.0], "b": [0.0, 1.0, 2.0]}))
    assert np.array_equal(got["cat_ids"][0], seen["cat_ids"][0])
    strings = TabularTokenizer(categorical_columns=["a"]).fit(X.astype({"a": str}))
    with pytest.raises(ValueError, match="held string values at fit"):  # another type still is refused
        strings.transform(pd.DataFrame({"a": ["1", 5], "b": [0.0, 1.0]}))


def test_date_hint_reads_distinct_values_not_every_cell(monkeypatch):
    # b18f5b8 mapped isinstance and a regex over every cell of every category/text column: fit took 3x as long on a
    # 200,000-row frame of 50 columns. The check reads a column's distinct values, once its first value is a date.
    from tabformer.tokenizers._column_hints import warn_odd_columns

    frame = pd.DataFrame({"city": ["Paris", "Oslo", "Lima"] * 40, "day": ["2024-03-01", "2024-03-02", "2024-03-03"] * 40})

    def every_cell(*args, **kwargs):
        raise AssertionError("a per-cell map over the column")

    monkeypatch.setattr(pd.Series, "map", every_cell)
    with pytest.warns(UserWarning, match="dates written as strings") as record:
        warn_odd_columns(frame, {"city": "categorical", "day": "categorical"})
    assert ["day" in str(w.message) for w in record] == [True]


def test_a_tokenizer_fitted_before_durations_read_in_seconds_predicts_as_it_did():
    # ea42ff5 reads a duration column in seconds; a tokenizer fitted before (a saved model) has its scaler fitted on
    # counts of nanoseconds, and fed seconds its tokens moved, silently (a saved regressor's predictions moved by 5.6)
    from sklearn.preprocessing import QuantileTransformer

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"d": pd.to_timedelta(rng.integers(0, 10**6, size=200), unit="s").astype("timedelta64[ns]")})
    X["n"] = rng.normal(size=200)
    new = TabularTokenizer(numeric_columns=["d", "n"]).fit(X)
    old = TabularTokenizer(numeric_columns=["d", "n"]).fit(X)
    old.__dict__.pop("duration_unit_", None)  # as fitted before ea42ff5, on counts of the dtype's unit
    counts = np.c_[X["d"].to_numpy().astype(np.int64).astype(np.float64), X["n"].to_numpy()]
    old.scaler_ = QuantileTransformer(n_quantiles=200, output_distribution="normal", subsample=10**9).fit(counts)
    assert np.allclose(old.transform(X)["num_values"], new.transform(X)["num_values"], atol=1e-5)


def test_partial_fit_chunks_hold_out_the_usual_tenth_not_a_small_tables_thirty_percent():
    # 64a5653 gives a table under 3,000 rows a 30% holdout; partial_fit's first chunk is no table, and its fraction
    # stayed for every later chunk (500-row chunks trained on 350 rows each instead of 450)
    from tabformer import TabFormerClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500)})
    y = (X["a"] > 0).astype(int).to_numpy()
    streamed = TabFormerClassifier(max_epochs=1, random_state=0, verbose=0).partial_fit(X, y, classes=[0, 1])
    assert streamed.resolved_params_["validation_fraction"] == pytest.approx(0.1)
    small = TabFormerClassifier(max_epochs=1, random_state=0, verbose=0).fit(X, y)
    assert small.resolved_params_["validation_fraction"] == pytest.approx(0.3)


def test_column_lists_given_as_an_index_under_auto_and_in_a_table_template():
    # X.select_dtypes("object").columns is a pd.Index: 87bcf63's ``or ()`` in tokenizer="auto" (the estimators'
    # default) raised "The truth value of a Index is ambiguous", as the mixed tokenizer's column hints did
    from tabformer.tokenizers import MixedTokenizer
    from tabformer.tokenizers.registry import make_tokenizer

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.choice(list("xyz"), size=60), "d": rng.choice(list("uv"), size=60), "n": rng.normal(size=60)})
    listed = X.select_dtypes("object").columns
    assert make_tokenizer("auto", X, {"categorical_columns": listed}).fit(X).categorical_columns_ == ["c", "d"]
    assert TabularTokenizer(categorical_columns=listed).fit(X).categorical_columns_ == ["c", "d"]
    mixed = MixedTokenizer(table=TabularTokenizer(categorical_columns=listed)).fit(X)
    assert mixed.column_kinds_ == {"c": "categorical", "d": "categorical", "n": "numeric"}


def test_a_balanced_classifier_that_answers_one_class_is_not_told_of_a_rare_class():
    # a62dd1c: any spread of probabilities above 0.01 replaced the collapse warning by a rare-class note, and an
    # untrained network's probabilities always vary with its inputs: a 1-epoch fit on 120 rows at 43% / 57% was told
    # "'0' is 43.3% of the training rows ... threshold predict_proba below 0.5 or pass class_weight='balanced'"
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from tabformer import TabFormerClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "c": rng.choice(list("xyz"), size=120)})
    y = rng.integers(0, 2, size=120)
    for seed in range(4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            TabFormerClassifier(max_epochs=1, validation_fraction=None, random_state=seed, verbose=0).fit(X, y)
        for message in [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]:
            assert "probabilities vary" not in message and "class_weight='balanced'" not in message, message
