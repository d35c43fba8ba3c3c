"""A review of targets and weights: dates as regression targets, object labels, tag types, constant targets,
infinite labels, and sample weights beyond float32's range."""

import datetime

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier, TabFormerRegressor

FAST = dict(max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, batch_size=32, verbose=0)


def _table(n=60, seed=0):
    rng = np.random.RandomState(seed)
    return pd.DataFrame({"a": rng.randn(n), "b": rng.choice(["x", "y", "z"], n)})


_DAYS = pd.Series(pd.date_range("2020-01-01", periods=60, freq="D"))


@pytest.mark.parametrize(
    "y, held",
    [
        (_DAYS.astype("datetime64[ns]"), r"dates \(datetime64\[ns\]\)"),
        (_DAYS.astype("datetime64[s]").to_numpy(), r"dates \(datetime64\[s\]\)"),
        (_DAYS.dt.tz_localize("Europe/Paris"), r"dates \(datetime64\[.s, Europe/Paris\]\)"),
        (_DAYS.dt.to_period("D"), r"periods \(period\[D\]\)"),
        (pd.Series(pd.to_timedelta(np.arange(60), unit="h")), r"durations \(timedelta64\[.s\]\)"),
        ([datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in range(60)], r"dates \(dates as Python objects\)"),
        (pd.DataFrame({"price": np.arange(60.0), "when": _DAYS}), r"y column 1 \('when'\) holds dates \(datetime64\[.s\]\)"),
    ],
)
def test_a_regression_target_of_dates_or_durations_is_refused_naming_its_dtype_and_the_fix(y, held):
    # A datetime64 target trained on its raw count of the unit: predictions of 1.586e18 for [ns], 1.586e9 for [s].
    with pytest.raises(ValueError, match=held + r", not the numbers a regressor trains on.*Convert y to numbers first"):
        TabFormerRegressor(**FAST).fit(_table(), y)


def test_the_date_advice_round_trips():
    days = (_DAYS - _DAYS.min()).dt.days.to_numpy(dtype=float)
    assert (_DAYS.min() + pd.to_timedelta(days, unit="D") == _DAYS).all()


@pytest.mark.parametrize(
    "y, shown",
    [
        (pd.Series(np.arange(60) % 2, dtype=object), "0, of type int"),
        (_DAYS.iloc[np.arange(60) % 2].reset_index(drop=True).dt.tz_localize("UTC"), "of type Timestamp"),
        (_DAYS.iloc[np.arange(60) % 2].reset_index(drop=True).dt.to_period("D"), "of type Period"),
    ],
)
def test_object_labels_sklearn_cannot_read_are_refused_before_training(y, shown):
    # They trained, then the first epoch's scoring failed with sklearn's bare "unknown is not supported".
    expected = rf"Unknown label type: unknown. y's labels are Python objects \(dtype object; row 0 holds .*{shown}\)"
    with pytest.raises(ValueError, match=expected + r".*y.astype\(str\)"):
        TabFormerClassifier(**FAST).fit(_table(), y)


def test_datetime64_labels_are_classes_as_in_sklearn():
    y = _DAYS.iloc[np.arange(60) % 2].reset_index(drop=True)
    clf = TabFormerClassifier(**FAST).fit(_table(), y)
    assert clf.classes_.dtype.kind == "M" and set(clf.predict(_table()[:5])) <= set(y)


def test_labels_mixing_str_with_numbers_keep_their_message():
    y = np.array([1, "1", 0] * 20, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes label types \['int', 'str'\]"):
        TabFormerClassifier(**FAST).fit(_table(), y)


_WORDS = [["John", "lives", "in", "Paris"], ["Mary", "and", "John"]] * 10


@pytest.mark.parametrize(
    "tag, other, rest, message",
    [
        (1, "1", 0, r"y\[0\]\[3\] \(the tag of word 'Paris'\) is str \('1'\) where y\[0\]\[0\] \(of word 'John'\) is int \(1\)"),
        (1, 1.0, 0, r"y\[0\]\[3\] \(the tag of word 'Paris'\) is float \(1.0\) where y\[0\]\[0\] \(of word 'John'\) is int"),
        (True, 1, False, r"y\[0\]\[3\] \(the tag of word 'Paris'\) is int \(1\) where y\[0\]\[0\] \(of word 'John'\) is bool"),
    ],
)
def test_tags_mixing_types_are_refused_naming_both_tags(tag, other, rest, message):
    # str(tag) made 1 and "1" one tag, and 1 and 1.0 two, silently
    from tabformer import TabFormerTagger

    y = [[tag if word in ("John", "Mary") else other if word == "Paris" else rest for word in words] for words in _WORDS]
    with pytest.raises(ValueError, match=r"y mixes tag types: " + message + r".*one type"):
        TabFormerTagger(**FAST).fit(_WORDS, y)


def test_tags_of_one_type_numpy_or_python_train():
    from tabformer import TabFormerTagger

    y = [np.array([1 if word in ("John", "Mary") else 0 for word in words]) for words in _WORDS]  # numpy ints
    y[0] = [1, 0, 0, 0]  # and Python ints: one type
    assert TabFormerTagger(**FAST).fit(_WORDS, y).classes_.tolist() == ["0", "1"]


def test_a_constant_regression_target_is_warned_of_and_still_predicted_exactly():
    # It trained and scored R^2 = 1.0 without a word (the wrong column taken as y), where the classifier refuses one class.
    X = _table()
    with pytest.warns(UserWarning, match=r"^y is constant \(value 5.0\) in every training row: the regressor will predict it"):
        reg = TabFormerRegressor(**FAST).fit(X, np.full(len(X), 5.0))
    np.testing.assert_array_equal(reg.predict(X), 5.0)


def test_constant_output_columns_are_named():
    X = _table()
    Y = pd.DataFrame({"price": np.random.RandomState(0).randn(len(X)), "tax": 0.2, "fee": 3.0})
    with pytest.warns(
        UserWarning, match=r"^y's output columns 1 \('tax'\) \(value 0.2\), 2 \('fee'\) \(value 3.0\) are constant in"
    ):
        reg = TabFormerRegressor(**FAST).fit(X, Y)
    np.testing.assert_array_equal(reg.predict(X)[:, 1:], np.tile([0.2, 3.0], (len(X), 1)))
    with pytest.warns(
        UserWarning, match=r"^y's output column 1 is constant \(value 0.2\) in every training row: the regressor will predict it"
    ):
        TabFormerRegressor(**FAST).fit(X, Y.to_numpy()[:, :2])


def test_a_varying_target_and_a_partial_fits_first_batch_are_not_warned_of():
    import warnings

    X = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        TabFormerRegressor(**FAST).fit(X, X["a"].to_numpy())
        TabFormerRegressor(**FAST).partial_fit(X, np.full(len(X), 3.0))  # a first batch: later ones may vary


@pytest.mark.parametrize("sign", [1, -1])
def test_an_infinite_class_label_is_named_by_row_as_a_missing_one(sign):
    # sklearn's "Input contains infinity or a value too large for dtype('float64')", with a RuntimeWarning, and no row
    X = _table()
    y = (np.arange(len(X)) % 2).astype(float)
    y[3] = sign * np.inf
    with pytest.raises(ValueError, match=rf"^y holds 1 infinite label\(s\) \(first at row 3: {'-' * (sign < 0)}inf\); .*finite"):
        TabFormerClassifier(**FAST).fit(X, y)
    Y = pd.DataFrame({"red": np.arange(len(X)) % 2, "big": (np.arange(len(X)) // 2 % 2).astype(float)})
    Y.loc[5, "big"] = np.inf
    with pytest.raises(ValueError, match=r"first at row 5, column 1 \('big'\): inf"):
        TabFormerClassifier(**FAST).fit(X, Y)


@pytest.mark.parametrize("settings", [{}, {"validation_fraction": None}])
def test_sample_weights_beyond_float32s_range_are_refused_naming_it(settings):
    # One weight of 1e300 among 1s weighed every other row 0 in float32: the fit failed on a false "the holdout rows
    # ... have a total sample_weight of 0" (or an ensemble member's), or trained on that one row alone.
    X = _table()
    y = np.arange(len(X)) % 2
    w = np.ones(len(X))
    w[3] = 1e300
    with pytest.raises(ValueError, match=r"^sample_weight spans 1 to 1e\+300 among its positive weights: .*Rescale or clip"):
        TabFormerClassifier(**FAST, **settings).fit(X, y, sample_weight=w)
    w[3] = 1e30  # within float32's range: trains
    TabFormerClassifier(**FAST, **settings).fit(X, y, sample_weight=w)


def test_class_weights_that_take_sample_weights_beyond_float32s_range_are_refused():
    X = _table()
    y = np.arange(len(X)) % 2
    w = np.r_[np.full(10, 1e-10), np.ones(len(X) - 10)]
    clf = TabFormerClassifier(**FAST, validation_fraction=None, class_weight={0: 1e-30, 1: 1.0})
    with pytest.raises(ValueError, match=r"^sample_weight times class_weight spans 1e-40 to 1 among"):
        clf.fit(X, y, sample_weight=w)


def test_tag_type_message_shows_numpy_words_and_tags_as_plain_values():
    from tabformer import TabFormerTagger

    words = [np.array(sentence) for sentence in _WORDS]  # np.str_ words
    y = [np.array([1 if word in ("John", "Mary") else 0 for word in sentence]).tolist() for sentence in _WORDS]
    y[0] = [np.int64(1), np.int64(0), np.int64(0), "1"]
    with pytest.raises(
        ValueError,
        match=r"y\[0\]\[3\] \(the tag of word 'Paris'\) is str \('1'\) where y\[0\]\[0\] \(of word 'John'\) is int \(1\)",
    ):
        TabFormerTagger(**FAST).fit(words, y)


@pytest.mark.parametrize(
    "classes, message", [([0, 1, "1"], r"0 is int and '1' is str"), ([0, 1, 1.0], r"0 is int and 1.0 is float")]
)
def test_partial_fit_classes_mixing_types_are_refused(classes, message):
    # classes=[0, 1, "1"] listed "1" once (1 and "1" merged as str) and trained as if y's 1 were declared
    from tabformer import TabFormerTagger

    y = [[1 if word in ("John", "Mary") else 0 for word in words] for words in _WORDS]
    with pytest.raises(ValueError, match=r"classes mixes tag types: " + message + r".*one type"):
        TabFormerTagger(**FAST).partial_fit(_WORDS, y, classes=classes)
    assert TabFormerTagger(**FAST).partial_fit(_WORDS, y, classes=[0, 1, 2]).classes_.tolist() == ["0", "1", "2"]


def test_tagger_tags_say_y_is_required():
    from tabformer import TabFormerTagger

    assert TabFormerTagger().__sklearn_tags__().target_tags.required


def test_tagger_score_refuses_y_whose_tags_fit_never_saw_in_any_word():
    # Tags 1.0 on a fit of int tags 1 read "1.0" != "1": score returned 0.0 with no word of warning
    from tabformer import TabFormerTagger

    y = [[1 if word in ("John", "Mary") else 0 for word in words] for words in _WORDS]
    tagger = TabFormerTagger(**FAST).fit(_WORDS, y)
    as_floats = [[float(tag) for tag in row] for row in y]
    with pytest.raises(ValueError, match=r"y holds none of the tags fit saw: y has \['0.0', '1.0'\], fit saw \['0', '1'\]"):
        tagger.score(_WORDS, as_floats)
    assert 0.0 <= tagger.score(_WORDS, y) <= 1.0
    assert not TabFormerTagger().__sklearn_tags__().input_tags.allow_nan
