"""Exact behaviour of table input handling: 2-D checks, category order, datetime parts, column
matching and its messages, the refusal of unseen categories and ``set_params`` on fitted nets.

Written against mutants that survived ``make mutation`` (docs/reliability.md) in
``_validation.py``, ``tokenizers/tabular.py`` and ``estimators/_params.py``: each test pins a
value, message or branch that a plausible edit could change while the broader tests stayed
green. Mutants left alive on purpose (equivalent ones) are listed in the issue note.
"""

from __future__ import annotations

import os
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, make_table
from sklearn.base import clone

from tabformer import TabFormerClassifier
from tabformer._validation import as_frame
from tabformer.estimators._categories import refuse_unseen_categories
from tabformer.estimators._params import _memory_limit_bytes, check_memory
from tabformer.tokenizers import TabularTokenizer


# --------------------------------------------------------------------------- 2-D input
@pytest.mark.parametrize("X", [[1, 2, 3], [5], [None, "a"], ("a", 1.5)])
def test_a_flat_list_is_refused_as_1d_with_sklearns_advice(X):
    with pytest.raises(ValueError, match=r"Expected 2D array, got 1D array instead: X must be \(n_samples, n_features\)"):
        as_frame(X)


def test_lists_of_rows_are_tables_and_an_empty_list_is_named_by_shape():
    frame, had_names = as_frame([[1, "a"], [2, "b"]])
    assert frame.shape == (2, 2) and list(frame.columns) == ["x0", "x1"] and not had_names
    with pytest.raises(ValueError, match=r"got 1D array instead: X has shape \(0,\)"):
        as_frame([])


# -------------------------------------------------------------------------- categories
def test_categories_are_sorted_by_value_and_mixed_types_by_text():
    numbers = pd.DataFrame({"c": pd.Series([10, 9, 2, 9], dtype=object)})
    assert list(TabularTokenizer(categorical_columns=["c"]).fit(numbers).categories_[0]) == [2, 9, 10]  # not "10" < "2"
    mixed = pd.DataFrame({"c": pd.Series(["b", 1, "a", 20, None, 3], dtype=object)})
    tokenizer = TabularTokenizer().fit(mixed)
    assert list(tokenizer.categories_[0]) == [1, 20, 3, "a", "b"]  # by str: "1" < "20" < "3" < "a"
    assert tokenizer.transform(mixed)["cat_ids"][:, 0].tolist() == [6, 2, 5, 3, 0, 4]


def test_missing_numbers_are_zero_with_a_missing_flag():
    X = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [np.nan, 5.0, 6.0]})
    batch = TabularTokenizer(numeric_transform=None).fit(X).transform(X)
    np.testing.assert_array_equal(batch["num_values"], [[1, 0], [0, 5], [3, 6]])
    assert batch["num_values"].dtype == np.float32
    np.testing.assert_array_equal(batch["num_missing"], [[False, True], [True, False], [False, False]])


def test_feature_names_out_are_an_object_array_numbers_first():
    X = pd.DataFrame({"city": ["a", "b"], "age": [1.0, 2.0]})
    names = TabularTokenizer().fit(X).get_feature_names_out()
    assert names.dtype == object and names.tolist() == ["age", "city"]


# --------------------------------------------------------------------------- datetimes
def test_datetime_columns_become_elapsed_years_and_calendar_phases():
    times = pd.to_datetime(pd.Series(["2020-01-01 00:00", "2020-07-01 12:00", None]))
    X = pd.DataFrame({"t": times, "x": [1.0, 2.0, 3.0]})
    tokenizer = TabularTokenizer(numeric_transform=None).fit(X)
    parts = ["elapsed", "month_sin", "month_cos", "weekday_sin", "weekday_cos", "hour_sin", "hour_cos"]
    assert tokenizer.datetime_parts_ == {"t": ["elapsed", "month", "weekday", "hour"]}
    assert tokenizer.numeric_columns_ == [f"t.{p}" for p in parts] + ["x"]
    batch = tokenizer.transform(X)
    values, missing = batch["num_values"], batch["num_missing"]
    days = (pd.Timestamp("2020-01-01") - pd.Timestamp("1970-01-01")).days
    month = 2 * np.pi * 182 / 366  # 1 July 2020 is day 183 of a leap year
    weekday = 2 * np.pi * (2 + 12 / 24) / 7  # a Wednesday at noon
    expected = [
        [days / 365.25, 0, 1, np.sin(2 * np.pi * 2 / 7), np.cos(2 * np.pi * 2 / 7), 0, 1, 1],
        [(days + 182.5) / 365.25, np.sin(month), np.cos(month), np.sin(weekday), np.cos(weekday), 0, -1, 2],
    ]
    np.testing.assert_allclose(values[:2], expected, atol=1e-6)
    assert missing[2, :7].all() and not missing[2, 7] and not missing[:2].any()


def test_dates_without_a_time_have_no_hour_and_time_zones_are_read_on_their_own_clock():
    dates = pd.DataFrame({"d": pd.to_datetime(pd.Series(["2021-03-01", "2021-03-02"]))})
    assert TabularTokenizer().fit(dates).datetime_parts_ == {"d": ["elapsed", "month", "weekday"]}
    paris = pd.DataFrame({"d": dates["d"].dt.tz_localize("Europe/Paris")})  # midnight in Paris, 23:00 the day before in UTC
    tokenizer = TabularTokenizer(numeric_transform=None).fit(paris)
    assert tokenizer.datetime_parts_ == {"d": ["elapsed", "month", "weekday", "local"]}  # no hour: dates, locally
    local, naive = (
        tokenizer.transform(paris)["num_values"],
        TabularTokenizer(numeric_transform=None).fit(dates).transform(dates)["num_values"],
    )
    np.testing.assert_allclose(local[:, 1:], naive[:, 1:], atol=1e-9)  # month and weekday where the dates were taken
    np.testing.assert_allclose(local[:, 0], naive[:, 0] - 1 / 24 / 365.25, atol=1e-9)  # elapsed: absolute time


# ------------------------------------------------------------------------ column kinds
def test_unknown_listed_columns_are_named_with_the_list_they_came_from():
    X = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"^categorical_columns names column\(s\) \['zz'\] that X does not have; X has \['a'\]$"):
        TabularTokenizer(categorical_columns=["zz"]).fit(X)
    with pytest.raises(ValueError, match=r"^numeric_columns names column\(s\) \['zz'\] that X does not have"):
        TabularTokenizer(numeric_columns=["zz"]).fit(X)


def test_listing_numeric_columns_leaves_the_others_to_detection():
    X = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 0.1]})
    tokenizer = TabularTokenizer(numeric_columns=["a"]).fit(X)
    assert tokenizer.categorical_columns_ == ["b"] and tokenizer.numeric_columns_ == ["a", "c"]


def test_a_column_of_another_kind_is_named_with_its_dtype_and_families_are_recorded():
    X = pd.DataFrame({"wait": pd.to_timedelta([1, 2], unit="s"), "t": pd.to_datetime(["2020-01-01", "2020-01-02"])})
    with pytest.raises(ValueError) as error:
        TabularTokenizer().fit(X)
    assert str(error.value) == (
        f"column 'wait' has dtype {X['wait'].dtype}, which is neither numeric nor categorical; "
        "convert it, or list it in categorical_columns / numeric_columns"
    )
    tokenizer = TabularTokenizer(categorical_columns=["wait"]).fit(X.assign(z=[1, 2], s=["a", "b"]))
    assert tokenizer.column_families_ == {"wait": "other", "t": "datetime", "z": "numeric", "s": "categorical"}
    drift = rf"column 't' changed kind .* it was datetime \(dtype {re.escape(str(X['t'].dtype))}\) at fit, it is categorical"
    with pytest.raises(ValueError, match=drift):
        tokenizer.transform(X.assign(z=[1, 2], s=["a", "b"], t=["x", "y"]))


# ------------------------------------------------------------------- column matching
def test_an_array_after_a_dataframe_fit_is_refused_naming_the_columns_and_shape():
    tokenizer = TabularTokenizer().fit(pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]}))
    with pytest.raises(ValueError, match=r"fitted as a DataFrame with columns \['a', 'b'\]; pass a DataFrame .* shape \(2, 2\)$"):
        tokenizer.transform(np.array([[1.0, "x"], [2.0, "y"]], dtype=object))


def test_an_array_with_the_wrong_width_names_both_counts():
    tokenizer = TabularTokenizer().fit(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(ValueError, match=r"^X has 3 features, but TabularTokenizer is expecting 2 features as input$"):
        tokenizer.transform(np.ones((2, 3)))


def test_a_dataframe_after_an_array_fit_warns_once_naming_the_columns():
    tokenizer = TabularTokenizer().fit(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.warns(UserWarning, match=r"X has feature names \['a', 'b'\], but TabularTokenizer was fitted without") as record:
        tokenizer.transform(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    assert len(record) == 1  # (its stack level is not pinned: mutmut's trampolines add frames)


def test_column_mismatch_names_only_what_is_wrong():
    tokenizer = TabularTokenizer().fit(pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}))
    with pytest.raises(ValueError) as extra:
        tokenizer.transform(pd.DataFrame({"a": [1.0], "b": [2.0], "c": [0.0]}))
    assert "unexpected column(s) ['c']" in str(extra.value) and "missing" not in str(extra.value)
    with pytest.raises(ValueError) as missing:
        tokenizer.transform(pd.DataFrame({"a": [1.0]}))
    assert "missing column(s) ['b']" in str(missing.value) and "unexpected" not in str(missing.value)


# -------------------------------------------------------------------- unseen categories
def test_unseen_categories_are_named_by_column_or_by_position():
    tokenizer = TabularTokenizer().fit(pd.DataFrame({"a": ["x", "y"]}))
    ids = np.array([[2, 2], [3, 1]])  # column 1 has no name in this tokenizer
    with pytest.raises(ValueError, match=r"in column\(s\) \['1'\]: a continued fit") as error:
        refuse_unseen_categories(tokenizer, {"cat_ids": ids})
    assert "with warm_start=True) keeps the fitted tokenizer, whose categories are fixed, so they would be trained " in str(
        error.value
    )
    assert "as 'unseen'. Refit with warm_start=False to learn them" in str(error.value)
    assert str(error.value).endswith("or set those values to missing (None)")
    refuse_unseen_categories(tokenizer, {"cat_ids": np.array([[2], [0]])})  # missing is not unseen
    refuse_unseen_categories(tokenizer, [{"cat_ids": ids}])  # a dataset is not checked


# ------------------------------------------------------------- set_params, fitted or not
def test_set_params_on_a_fitted_net_stores_later_settings_and_rebuilds_the_optimizer():
    X, y = make_table(60)
    clf = TabFormerClassifier(**dict(TINY, max_epochs=1), random_state=0).fit(X, y)
    module = clf.module_
    clf.set_params(encoder__d_model=8, tokenizer__numeric_transform="standard", iterator_valid__batch_size=7)
    clf.set_params(tokenizer__text__vocab_size=50)
    assert clf.module_ is module  # nothing rebuilt: read at the next fit or call
    params = clf.get_params()
    assert params["encoder__d_model"] == 8 and params["iterator_valid__batch_size"] == 7
    assert params["tokenizer__text__vocab_size"] == 50
    clf.set_params(optimizer__weight_decay=0.5)  # not read later: skorch applies it now
    assert clf.optimizer_.param_groups[0]["weight_decay"] == 0.5


def test_set_params_before_fit_only_stores_callback_settings():
    clf = TabFormerClassifier(**TINY)
    clf.set_params(callbacks=[("bad", 5)], callbacks__nonfinite__action="warn")
    clf.set_params(lr=0.25)  # skorch would rebuild the bad callbacks here and raise
    assert clf.lr == 0.25 and clone(clf).get_params()["callbacks__nonfinite__action"] == "warn"


# ---------------------------------------------------------------------- memory limit
def test_the_memory_limit_is_in_gib_and_the_estimate_may_equal_it():
    mine = SimpleNamespace(memory_limit=2.0, device="cpu")
    check_memory(mine, 2 * 2**30, "this")  # exactly the limit passes
    with pytest.raises(MemoryError) as error:
        check_memory(mine, 3 * 2**30, "resizing the images")
    assert str(error.value) == (
        "SimpleNamespace: resizing the images needs about 3.0 GiB, over the memory_limit of 2.0 GiB (yours); "
        "choose smaller settings, or set memory_limit (GiB, None: no check) if the estimate is wrong"
    )
    check_memory(SimpleNamespace(memory_limit=None, device="cpu"), 1e30, "this")  # None: no check


def test_auto_is_the_machines_memory_on_cpu():
    physical = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    assert _memory_limit_bytes(SimpleNamespace(device="cpu")) == physical  # no memory_limit attribute: "auto"
    auto = SimpleNamespace(memory_limit="auto", device="cpu")
    check_memory(auto, physical, "this")
    with pytest.raises(MemoryError, match=rf"over the memory_limit of {physical / 2**30:,.1f} GiB \(the device memory\); choose"):
        check_memory(auto, 2 * physical, "this")
