"""Columns a real DataFrame holds that are neither clean numbers nor clean categories: dates kept
as strings, identifiers and row counters, integers past 2**53, strings mixed with numbers.
Each read silently as something it is not; each now warns at fit naming the column
(``tokenizers/_column_hints.py``), and naming the column's kind silences it."""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import TabularTokenizer
from tabformer.tokenizers.registry import make_tokenizer

N = 200


def _days(n=N, span=900, seed=0):
    rng = np.random.default_rng(seed)
    return pd.Timestamp("2018-01-01") + pd.to_timedelta(rng.integers(0, span, n), unit="D")


def _x(n=N):
    return np.random.default_rng(1).normal(size=n)


def _fit_auto(frame):
    return make_tokenizer("auto", frame).fit(frame)


def _no_warning(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fit()


def test_iso_date_strings_read_as_text_warn_naming_the_column_and_pd_to_datetime(tiny):
    # 200 distinct "2018-03-01" strings became a text column of WordPiece sub-words, without a word.
    X = pd.DataFrame({"signup": _days().strftime("%Y-%m-%d"), "x": _x()})
    y = np.where(_x() > 0, "a", "b")
    with pytest.warns(
        UserWarning, match=r"column 'signup' holds dates written as strings \(as 'YYYY-MM-DD'\), so it is read as text"
    ):
        clf = TabFormerClassifier(**dict(tiny, max_epochs=1)).fit(X, y)
    assert clf.tokenizer_.column_kinds_["signup"] == "text"  # warned, not converted: the user converts
    # the conversion the warning names reads the column as dates, silently
    converted = X.assign(signup=pd.to_datetime(X["signup"]))
    assert _no_warning(lambda: _fit_auto(converted)).datetime_parts_ == {"signup": ["elapsed", "month", "weekday"]}


def test_iso_date_strings_read_as_categories_warn_unless_listed():
    # 20 distinct dates with times (and a missing one) were 20 categories
    when = pd.Series(_days(span=20).strftime("%Y-%m-%dT%H:%M:%S"), dtype=object).where(lambda s: s.index != 3)
    X = pd.DataFrame({"when": when, "x": _x()})
    with pytest.warns(UserWarning, match=r"column 'when' holds dates .* read as categories, not as dates.*hour.*pd.to_datetime"):
        TabularTokenizer().fit(X)
    _no_warning(lambda: TabularTokenizer(categorical_columns=["when"]).fit(X))  # the user's choice
    # strings that merely start like a date are not dates
    _no_warning(lambda: TabularTokenizer().fit(X.assign(when=[f"2018-01-0{i % 9 + 1} batch" for i in range(N)])))


@pytest.mark.parametrize(
    "column, values",
    [
        ("rownames", np.arange(1, N + 1)),  # the row counter Rdatasets adds
        ("Unnamed: 0", np.random.default_rng(0).permutation(2 * N)[:N]),  # to_csv's index, after train_test_split
        ("customer_id", pd.array(np.arange(5000, 5000 + N), dtype="Int64")),
    ],
)
def test_a_row_counter_warns_as_an_identifier_unless_listed(column, values):
    X = pd.DataFrame({column: values, "x": _x()})
    with pytest.warns(UserWarning, match=rf"column '{column}' looks like an identifier \(a different integer in"):
        TabularTokenizer().fit(X)
    _no_warning(lambda: TabularTokenizer(numeric_columns=[column]).fit(X))


def test_string_identifiers_warn_whether_read_as_text_or_categories():
    ids = [f"C{i:06d}" for i in range(N)]
    X = pd.DataFrame({"customer_id": ids, "x": _x()})
    pattern = r"'customer_id' looks like an identifier \(a different single-word value .*\), read as text"
    with pytest.warns(UserWarning, match=pattern):
        assert _fit_auto(X).column_kinds_["customer_id"] == "text"
    few = X.iloc[:60]
    with pytest.warns(UserWarning, match=r"'customer_id' looks like an identifier \(a different single-word .*categories"):
        TabularTokenizer().fit(few)


def test_measurements_and_texts_with_distinct_values_do_not_warn():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "fnlwgt": rng.choice(np.arange(10_000, 1_500_000), N, replace=False),  # distinct integers, spread thin
            "price": rng.normal(size=N),  # distinct floats
            "title": [f"red wool hat number {i}" for i in range(N)],  # distinct sentences
            "x": _x(),
        }
    )
    _no_warning(lambda: _fit_auto(X))
    _no_warning(lambda: TabularTokenizer().fit(pd.DataFrame({"rownames": np.arange(1, 21), "x": _x(20)})))  # a toy


def test_integers_past_2_53_that_float64_merges_warn():
    # 64-bit ids read as numbers: 2**60 + i for 30 values were all the same float
    X = pd.DataFrame({"account": (np.arange(30) + 2**60).astype(np.int64), "x": _x(30)})
    assert X["account"].astype(float).nunique() == 1
    with pytest.warns(
        UserWarning, match=r"'account' holds integers past 2\*\*53, which float64 cannot hold exactly: distinct values read"
    ):
        TabularTokenizer().fit(X)
    _no_warning(lambda: TabularTokenizer().fit(X.assign(account=np.arange(30) * 2**54)))  # large, but told apart


def test_an_object_column_of_strings_and_numbers_names_the_clash():
    # a code column read as ints from one file and as strings from another: 1 and "1" were two categories
    code = pd.Series([i % 3 if i % 2 else str(i % 3) for i in range(12)], dtype=object)
    with pytest.warns(UserWarning, match=r"categorical column 'code' mixes strings and numbers \(\d and '\d' are both present"):
        TabularTokenizer().fit(pd.DataFrame({"code": code, "x": _x(12)}))
    _no_warning(lambda: TabularTokenizer(categorical_columns=["code"]).fit(pd.DataFrame({"code": code, "x": _x(12)})))


def test_clean_dates_booleans_and_declared_categories_do_not_warn():
    days = pd.Series(_days()).where(lambda s: s.index % 7 != 0)  # NaT in a datetime64 column
    X = pd.DataFrame(
        {
            "day": days,
            "day_utc": _days().tz_localize("UTC"),
            "flag": np.arange(N) % 2 == 0,
            "nflag": pd.array([True, False, None, True] * (N // 4), dtype="boolean"),
            "month": pd.Categorical(_days(span=60).strftime("%Y-%m-01")),  # declared categories, whatever they look like
            "size": pd.Categorical(["S", "M", "L", "M"] * (N // 4), categories=["S", "M", "L"], ordered=True),
            "x": _x(),
        }
    )
    tokenizer = _no_warning(lambda: _fit_auto(X))
    assert set(tokenizer.datetime_parts_) == {"day", "day_utc"}


def test_a_column_warning_reads_the_same_in_every_cv_fold_so_python_shows_it_once():
    # The identifier warning held its row count and first value, the date warning its first date: each of
    # GridSearchCV's folds warned again (5 folds x every candidate).
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "rownames": rng.permutation(2 * N)[:N],
            "signup": _days().strftime("%Y-%m-%d %H:%M"),
            "account": (np.arange(N) + 2**60).astype(np.int64),
            "x": _x(),
        }
    )
    texts = set()
    for fold in range(3):
        rows = np.setdiff1d(np.arange(N), np.arange(fold * 40, fold * 40 + 40))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            TabularTokenizer().fit(X.iloc[rows])
        texts.add(tuple(sorted(str(w.message) for w in caught if "column" in str(w.message))))
    assert len(texts) == 1 and len(next(iter(texts))) == 3, texts
    assert "as 'YYYY-MM-DD hh:mm'" in " ".join(next(iter(texts)))


def test_a_time_zone_aware_columns_calendar_parts_are_its_local_time():
    # Read in UTC, two Mondays in Tokyo were Sundays at 15:00, 1 January day 365, and dates gained an hour
    from tabformer.tokenizers._datetimes import LOCAL_CLOCK, expand_datetimes

    when = pd.Series(pd.to_datetime(["2024-01-01", "2024-06-03"])).dt.tz_localize("Asia/Tokyo")
    tokenizer = TabularTokenizer(numeric_transform=None).fit(pd.DataFrame({"d": when}))
    assert tokenizer.datetime_parts_["d"] == ["elapsed", "month", "weekday", LOCAL_CLOCK]  # no hour: dates only
    parts = expand_datetimes(pd.DataFrame({"d": when}), tokenizer.datetime_parts_)
    np.testing.assert_allclose(parts["d.weekday_sin"], 0.0, atol=1e-12)  # Monday, midnight: phase 0
    np.testing.assert_allclose(parts["d.month_sin"][0], 0.0, atol=1e-12)  # 1 January: the year's start
    legacy = expand_datetimes(pd.DataFrame({"d": when}), {"d": ["elapsed", "month", "weekday"]})  # a model saved before
    assert abs(legacy["d.weekday_sin"][0]) > 0.1  # still read in UTC, as it was trained
