"""Table values at predict that the model reads silently wrong, or refuses unclearly (found by a review)."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import TabFormerClassifier
from tabformer.tokenizers import TabularTokenizer, UnseenCategoryWarning

torch.set_num_threads(1)

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, batch_size=32, verbose=0, random_state=0)


def _table(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["x", "y", "z"], n), "c": rng.choice(["p", "q"], n)})


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def _of(caught, category):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


# ----------------------------------------------------------------------------- categories fit never saw
def test_new_categories_warn_once_naming_columns_rows_and_the_fix():
    X = _table()
    T = X.iloc[:12].copy()
    T["b"] = ["x"] * 6 + ["NEW"] * 6  # half new: the "none is a category" warning stays quiet
    T["c"] = ["p"] * 10 + ["r", "s"]
    tokenizer = TabularTokenizer().fit(X)
    messages = _of(_caught(lambda: tokenizer.transform(T)), UnseenCategoryWarning)
    assert len(messages) == 1, messages  # one message for the call, not one per column
    assert "'b' (6 row(s), e.g. 'NEW')" in messages[0] and "'c' (2 row(s), e.g. 'r')" in messages[0]
    assert "tokenizer__category_dropout=0.1" in messages[0] and "categories fit never saw" in messages[0]
    assert not _of(_caught(lambda: tokenizer.transform(X)), UnseenCategoryWarning)  # only known ones
    assert not _of(_caught(lambda: tokenizer.transform(T.assign(b=None, c=None))), UnseenCategoryWarning)  # missing


def test_new_categories_do_not_warn_after_masked_cell_pretraining_trained_the_unseen_id():
    # masked_cells hides a category as its column's unseen id, so pretraining trains that id: the warning said
    # "which no training row trained" of a classifier fine-tuned from such an encoder.
    from tabformer import TabFormerPretrainer

    X = _table(80)
    y = np.where(X["a"] > 0, "pos", "neg")
    T = X.iloc[:12].assign(b=["NEW"] * 6 + ["x"] * 6)
    pre = TabFormerPretrainer(objective="masked_cells", **SMALL).fit(X)
    tuned = TabFormerClassifier(encoder=pre.encoder_, ensemble_size=1, **SMALL).fit(X, y)
    assert not _of(_caught(lambda: tuned.predict(T)), UnseenCategoryWarning)
    scratch = TabFormerClassifier(ensemble_size=1, **SMALL).fit(X, y)
    assert len(_of(_caught(lambda: scratch.predict(T)), UnseenCategoryWarning)) == 1


def test_new_categories_do_not_warn_when_category_dropout_trains_the_unseen_id():
    X = _table()
    tokenizer = TabularTokenizer(category_dropout=0.02).fit(X)
    assert not _of(_caught(lambda: tokenizer.transform(X.iloc[:3].assign(b="NEW"))), UnseenCategoryWarning)


def test_a_column_with_no_fitted_category_gets_one_warning_not_two():
    X = _table()
    T = X.iloc[:20].assign(b=[f"B{i}" for i in range(20)], c=["p"] * 19 + ["r"])
    caught = _caught(lambda: TabularTokenizer().fit(X).transform(T))
    unseen = _of(caught, UnseenCategoryWarning)
    assert len(unseen) == 1 and "'c' (1 row(s), e.g. 'r')" in unseen[0] and "'b'" not in unseen[0], unseen
    assert any("categorical column 'b': none of its 20 values" in str(w.message) for w in caught)


def test_predict_warns_once_over_its_chunks_with_the_input_totals():
    X = _table(80)
    y = (X["a"] > 0).astype(int)
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    clf.inference_chunk_rows = 4
    T = X.iloc[:12].assign(b=["x", "NEW"] * 6)
    messages = _of(_caught(lambda: clf.predict(T)), UnseenCategoryWarning)
    assert len(messages) == 1 and "'b' (6 row(s), e.g. 'NEW')" in messages[0], messages


def test_a_continued_fit_that_grows_new_categories_does_not_warn_about_them():
    X = _table(80)
    y = (X["a"] > 0).astype(int)
    clf = TabFormerClassifier(**SMALL, new_categories="grow").fit(X, y)
    assert not _of(_caught(lambda: clf.partial_fit(X.assign(b="NEW"), y)), UnseenCategoryWarning)
    assert not _of(_caught(lambda: clf.predict(X.iloc[:3].assign(b="NEW"))), UnseenCategoryWarning)  # learned now


# ----------------------------------------------------------------------------- numbers far outside the fitted range
def _incomes(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"income": rng.gamma(2, 20, n), "b": rng.choice(["x", "y"], n)})  # in thousands
    return X, (X["income"] > 40).astype(int)


def _far(caught):
    return [str(w.message) for w in caught if "far outside the range fit saw" in str(w.message)]


@pytest.mark.parametrize("transform", ["quantile", "standard", None])
def test_numbers_far_outside_the_fitted_range_warn_naming_the_column_and_the_range(transform):
    X, _ = _incomes()
    tokenizer = TabularTokenizer(numeric_transform=transform).fit(X)
    dollars = X.iloc[:10].assign(income=X["income"].iloc[:10] * 1000)
    messages = _far(_caught(lambda: tokenizer.transform(dollars)))
    low, high = X["income"].min(), X["income"].max()
    assert len(messages) == 1 and "numeric column 'income': 10 of its 10 values" in messages[0], messages
    assert f"first: {dollars['income'].iloc[0]:g}" in messages[0] and f"fitted range {low:g} to {high:g}" in messages[0]
    assert "units" in messages[0] and ("nearest training extreme" in messages[0]) == (transform == "quantile")


def test_far_numbers_warn_from_a_tenth_of_the_values_on_and_not_within_a_range_width():
    X, _ = _incomes()
    tokenizer = TabularTokenizer().fit(X)
    low, high = X["income"].min(), X["income"].max()
    assert _far(_caught(lambda: tokenizer.transform(X.iloc[:1].assign(income=high * 50))))  # one row to score
    assert _far(_caught(lambda: tokenizer.transform(X.iloc[:1].assign(income=low - 1.01 * (high - low)))))  # below
    one_in_11 = X.iloc[:11].assign(income=[high * 50, *X["income"].iloc[1:11]])
    assert not _far(_caught(lambda: tokenizer.transform(one_in_11)))  # 1 of 11: under a tenth
    assert not _far(_caught(lambda: tokenizer.transform(X.iloc[:5].assign(income=2 * high - low - 1e-9))))  # not far
    assert not _far(_caught(lambda: tokenizer.transform(X.iloc[:5].assign(income=np.nan))))  # missing is no number


def test_a_date_far_after_the_fitted_ones_is_not_read_as_a_change_of_units():
    X = pd.DataFrame({"when": pd.date_range("2020-01-01", periods=40, freq="D"), "a": np.arange(40.0)})
    tokenizer = TabularTokenizer().fit(X)
    assert not _far(_caught(lambda: tokenizer.transform(X.assign(when=X["when"] + pd.Timedelta(days=3650)))))


def test_far_numbers_warn_after_save_and_load_and_a_model_saved_without_the_range_loads_silent(tmp_path):
    import json

    import tabformer

    X, y = _incomes()
    TabFormerClassifier(**SMALL).fit(X, y).save(tmp_path / "m")
    dollars = X.iloc[:10].assign(income=X["income"].iloc[:10] * 1000)
    loaded = tabformer.load(tmp_path / "m")
    assert len(_far(_caught(lambda: loaded.predict(dollars)))) == 1
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    del config["tokenizer"]["fitted"]["numeric_range_"]  # as models saved before it existed
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    older = tabformer.load(tmp_path / "m")
    assert not hasattr(older.tokenizer_, "numeric_range_")
    np.testing.assert_array_equal(older.predict_proba(dollars), loaded.predict_proba(dollars))
    assert not _far(_caught(lambda: older.predict(dollars)))


# ----------------------------------------------------------------------------- errors that name the column
def test_a_number_past_float32_unscaled_is_named_at_fit_before_the_piecewise_trees():
    X, y = _incomes(200)  # from 128 rows on, the piecewise bins come from trees, whose float32 check named no column
    X["big"] = np.abs(np.random.default_rng(1).normal(size=len(X))) * 1e39 + 1e39
    named = r"numeric column 'big' holds \S+ \(row 0\), which is not finite once scaled to a float32 token"
    with pytest.raises(ValueError, match=named):
        TabularTokenizer(numeric_transform=None, numeric_embedding="piecewise").fit(X, y)
    with pytest.raises(ValueError, match=named):
        TabFormerClassifier(**SMALL, tokenizer__numeric_transform=None).fit(X, y)


@pytest.mark.parametrize("tz", ["Europe/Paris", None])
def test_an_all_nat_datetime_column_reads_as_missing_as_an_all_none_one_does(tz):
    X = pd.DataFrame({"d": pd.date_range("2020-01-01", periods=40, freq="h", tz=tz), "a": np.arange(40.0)})
    tokenizer = TabularTokenizer().fit(X)
    nats = [pd.Series([pd.NaT] * 5, dtype=dtype) for dtype in ("datetime64[ns]", "datetime64[us]", "datetime64[ns, UTC]")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the untrained missing token: UntrainedMissingWarning
        expected = tokenizer.transform(X.iloc[:5].assign(d=None))
        for missing in [pd.NaT, *nats]:
            got = tokenizer.transform(X.iloc[:5].assign(d=missing))
            for key in expected:
                np.testing.assert_array_equal(got[key], expected[key])
    assert expected["num_missing"][:, :-1].all()  # every part of the date is missing


def test_a_numeric_column_of_category_numbers_at_predict_is_refused_with_the_fix():
    X, _ = _incomes()
    tokenizer = TabularTokenizer().fit(X)
    T = X.iloc[:5].assign(income=X["income"].iloc[:5].astype(object))
    expected = tokenizer.transform(X.iloc[:5])["num_values"]
    np.testing.assert_array_equal(tokenizer.transform(T)["num_values"], expected)  # object numbers are numbers
    convert = r"convert it \(X\['income'\] = X\['income'\]\.astype\(float\)"
    with pytest.raises(ValueError, match=r"numbers held as dtype category: " + convert + r"\)$"):
        tokenizer.transform(T.astype({"income": "category"}))
    with pytest.raises(ValueError, match=r"numbers written as text: convert them \(pd.to_numeric\)"):
        tokenizer.transform(T.astype({"income": str}))
