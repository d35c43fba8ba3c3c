"""Table columns that would otherwise read silently wrong get a clear error or warning naming
the column (``tokenizers/_columns.py``; each case found by a review of bad inputs)."""

import datetime
import decimal
import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer.tokenizers import TabularTokenizer
from tabformer.tokenizers.tabular import MISSING_ID, UNSEEN_ID


def _frame(**columns):
    return pd.DataFrame({"x": np.arange(6, dtype=float), **columns})


@pytest.mark.parametrize(
    "values",
    [
        pd.Series([0.5, 1.5, 2.5, 3.5, 4.5, None], dtype=object),
        pd.Series([decimal.Decimal(i) for i in range(6)], dtype=object),
        pd.Series([1, 2, 3, pd.NA, 5, 6], dtype=object),
    ],
    ids=["floats", "decimals", "ints-with-NA"],
)
def test_numbers_in_an_object_column_are_read_as_numbers_as_in_an_array(values):
    # They were read as categories (with a warning): one id per value, every new value unseen at predict.
    # sklearn's SimpleImputer(...).set_output(transform="pandas") returns every column as object.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tokenizer = TabularTokenizer().fit(_frame(v=values))
    assert tokenizer.numeric_columns_ == ["x", "v"]
    floats = _frame(v=[np.nan if pd.isna(value) else float(value) for value in values])
    same = TabularTokenizer().fit(floats).transform(floats)
    assert same["num_values"].tolist() == tokenizer.transform(_frame(v=values))["num_values"].tolist()
    assert TabularTokenizer(categorical_columns=["v"]).fit(_frame(v=values)).categorical_columns_ == ["v"]  # the user's choice


@pytest.mark.parametrize(
    "values, what",
    [(pd.Series([datetime.date(2020, 1, i + 1) for i in range(6)], dtype=object), "dates \\(date\\)")],
    ids=["dates"],
)
def test_dates_in_an_object_column_warn_that_they_are_read_as_categories(values, what):
    with pytest.warns(UserWarning, match=rf"column 'v' holds only {what} in a object column, so it is read as categories"):
        TabularTokenizer().fit(_frame(v=values))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TabularTokenizer(categorical_columns=["v"]).fit(_frame(v=values))  # declared: the user's choice
        TabularTokenizer().fit(_frame(v=pd.Series(list("abcabc"), dtype=object)))


def test_a_column_whose_values_changed_type_is_refused_not_read_as_all_unseen():
    tokenizer = TabularTokenizer().fit(_frame(flag=["True", "False"] * 3, code=["1", "2", "3"] * 2))
    with pytest.raises(
        ValueError, match=r"column 'flag' held string values at fit \(e.g. 'False'\) and holds boolean values now"
    ):
        tokenizer.transform(_frame(flag=[True, False] * 3, code=["1", "2", "3"] * 2))
    # an object column of ints alone is read as numbers (as an int column is): refused as a change of kind
    with pytest.raises(ValueError, match=r"column 'code' changed kind .* categorical \(dtype str\) at fit, it is numeric"):
        tokenizer.transform(_frame(flag=["True"] * 6, code=pd.Series([1, 2, 3] * 2, dtype=object)))
    # New values of the fitted type are only unseen, and missing ones missing.
    ids = tokenizer.transform(_frame(flag=["maybe", None] * 3, code=["9"] * 6))["cat_ids"]
    assert (ids[:, 0] == [UNSEEN_ID, MISSING_ID] * 3).all() and (ids[:, 1] == UNSEEN_ID).all()


def test_a_value_of_another_type_is_refused_whatever_the_rows_beside_it():
    # The rule read the whole batch ("no value is a category"): 1 against fitted "1" was refused alone and
    # read as unseen, silently, beside a fitted "2" or a new "9".
    tokenizer = TabularTokenizer().fit(_frame(code=["1", "2", "3"] * 2))
    for beside in (["2"] * 5, ["9"] * 5):
        with pytest.raises(
            ValueError, match=r"column 'code' held string values at fit .* and holds integer values now \(e.g. 1\)"
        ):
            tokenizer.transform(_frame(code=pd.Series([*beside, 1], dtype=object)))
    with pytest.raises(ValueError, match=r"column 'code' changed kind"):  # ints alone: numbers
        tokenizer.transform(_frame(code=pd.Series([1] * 6, dtype=object)))


def test_unhashable_cells_are_named_at_fit_and_at_predict():
    with pytest.raises(ValueError, match=r"categorical column 'v' holds \[1, 2\] \(row 0\), a list, which cannot be a category"):
        TabularTokenizer().fit(_frame(v=[[1, 2]] * 6))
    tokenizer = TabularTokenizer().fit(_frame(v=list("abcabc")))
    with pytest.raises(ValueError, match=r"categorical column 'v' holds \['a'\] \(row 0\), a list"):
        tokenizer.transform(_frame(v=[["a"]] * 6))


def test_complex_numbers_are_refused_not_cut_to_their_real_part():
    with pytest.raises(ValueError, match=r"numeric column 'z' is complex \(complex128\)"):
        TabularTokenizer().fit(_frame(z=np.arange(6) + 1j))


def test_pyarrow_decimals_and_dates_with_missing_values_are_read():
    pa = pytest.importorskip("pyarrow")
    values = pd.array([1, None, 3, 4, 5, 6], dtype=pd.ArrowDtype(pa.decimal128(10, 2)))
    dates = pd.array([datetime.date(2020, 1, i + 1) for i in range(5)] + [None], dtype=pd.ArrowDtype(pa.date32()))
    tokenizer = TabularTokenizer().fit(_frame(amount=values, day=dates))
    batch = tokenizer.transform(_frame(amount=values, day=dates))
    assert batch["num_missing"][:, 1].tolist() == [False, True, False, False, False, False]  # amount's None
    assert batch["num_missing"][5, 2:].all() and not batch["num_missing"][:5, 2:].any()  # day's None: its parts


@pytest.mark.parametrize("fit_aware", [True, False])
def test_a_time_zone_that_appears_or_vanishes_at_predict_is_refused(fit_aware):
    times = pd.Series(pd.date_range("2020-01-01 08:00", periods=6, freq="13h"))
    aware = times.dt.tz_localize("Europe/Paris")
    tokenizer = TabularTokenizer().fit(_frame(t=aware if fit_aware else times))
    state = "time-zone aware" if fit_aware else "without a time zone"
    with pytest.raises(ValueError, match=rf"datetime column 't' was {state} at fit"):
        tokenizer.transform(_frame(t=times if fit_aware else aware))
    tokenizer.transform(_frame(t=aware.dt.tz_convert("UTC") if fit_aware else times))  # another zone is fine


def test_an_all_missing_categorical_column_is_refused_as_an_all_missing_numeric_one_is():
    with pytest.raises(ValueError, match=r"categorical column 'v' holds no values at fit time \(all missing\)"):
        TabularTokenizer().fit(_frame(v=pd.Series([None] * 6, dtype=object)))
    with pytest.raises(ValueError, match=r"numeric column 'v' holds no numbers at fit time \(all missing\)"):
        TabularTokenizer().fit(_frame(v=[np.nan] * 6))
    declared = pd.Series([None] * 6, dtype=pd.CategoricalDtype(["a", "b"]))
    assert list(TabularTokenizer().fit(_frame(v=declared)).categories_[0]) == ["a", "b"]  # declared: kept


def test_durations_listed_as_numbers_read_in_seconds_whatever_their_unit():
    # pd.to_numeric gave counts of the dtype's unit: the same durations as [us] at fit and [ns] at predict read
    # 1000x apart, silently (pandas 2 makes [ns] by default, pandas 3 [us]).
    durations = pd.Series(pd.to_timedelta([1, 2, 30, 60, 3600, np.nan], unit="s"))
    tokenizer = TabularTokenizer(numeric_columns=["d"], numeric_transform=None).fit(_frame(d=durations.astype("m8[us]")))
    for unit in ("m8[ns]", "m8[us]", "m8[s]"):
        values = tokenizer.transform(_frame(d=durations.astype(unit)))["num_values"][:, 1]
        np.testing.assert_allclose(values[:5], [1, 2, 30, 60, 3600])


def test_a_column_list_given_as_a_str_is_refused_on_a_table_and_on_a_mixed_frame():
    # A str is a list of its letters: "zip" named columns 'z', 'i', 'p' on a table ("X does not have"), and on a
    # mixed frame only the table template's substring test ("x" in "zip") decided which columns were listed.
    from tabformer.tokenizers import MixedTokenizer

    frame = _frame(zip=[f"z{i % 3}" for i in range(6)], title=[f"a long title number {i} of words" for i in range(6)])
    with pytest.raises(ValueError, match=r"^categorical_columns must be a list of columns, got 'zip'; pass \['zip'\]"):
        TabularTokenizer(categorical_columns="zip").fit(frame[["x", "zip"]])
    with pytest.raises(ValueError, match=r"^table__numeric_columns must be a list of columns, got 'x'"):
        MixedTokenizer(table=TabularTokenizer(numeric_columns="x"), max_categories=2).fit(frame)
