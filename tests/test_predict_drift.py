"""Data that drifts between fit and predict, as it does in production (found by a review).

Each case fitted fine and then, at predict, crashed with an unclear message, was refused
for a change that is none, or answered without a word.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import make_table

from tabformer import TabFormerClassifier, TabFormerRegressor
from tabformer.cli import category_kinds, main
from tabformer.nn.embedders.tabular import UNSEEN_ID as embedder_unseen_id
from tabformer.nn.embedders.tabular import TabularEmbedder
from tabformer.tokenizers import UnseenCategoryWarning, UntrainedMissingWarning
from tabformer.tokenizers.tabular import UNSEEN_ID

pa = pytest.importorskip("pyarrow")

SETTINGS = dict(
    encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=2, batch_size=16, verbose=0, random_state=0
)


@pytest.fixture(scope="module")
def drifting():
    """60 rows: a category of strings, a category of integers, codes with leading zeros, a date, a number."""
    rng = np.random.default_rng(0)
    n = 60
    X = pd.DataFrame(
        {
            "grade": pd.Series(rng.choice(["lo", "mid", "hi"], n)).astype("category"),
            "level": pd.Series(rng.integers(1, 4, n)).astype("category"),
            "code": pd.Series(rng.choice(["001", "002", "017"], n)).astype(pd.ArrowDtype(pa.string())),
            "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D"),
            "score": rng.normal(size=n),
        }
    )
    y = (X["score"] + (X["grade"] == "hi") > 0.5).astype(int).to_numpy()
    return X, y, TabFormerClassifier(**SETTINGS).fit(X, y)


def test_a_category_column_read_back_arrow_backed_is_a_category(drifting, tmp_path):
    """pd.read_parquet(..., dtype_backend="pyarrow") gives a category column as an arrow dictionary."""
    X, y, _ = drifting
    X = X.drop(columns="level")  # a category of integers reads back as int64[pyarrow]: a numeric column, refused as one
    clf = TabFormerClassifier(**SETTINGS).fit(X, y)
    path = tmp_path / "rows.parquet"
    X.to_parquet(path)
    arrow_backed = pd.read_parquet(path, dtype_backend="pyarrow")
    assert str(arrow_backed["grade"].dtype).startswith("dictionary<")
    np.testing.assert_allclose(clf.predict_proba(arrow_backed), clf.predict_proba(X), atol=1e-6)
    refit = TabFormerClassifier(**SETTINGS).fit(arrow_backed, y)
    assert refit.tokenizer_.categorical_columns_[0] == "grade"


@pytest.mark.parametrize("missing", [None, np.nan])
def test_a_record_without_a_date_is_a_missing_date(drifting, missing):
    X, _, clf = drifting
    rows = X.iloc[:3].copy()
    no_date = rows.assign(when=[missing] * 3)  # object or float dtype: pandas cannot tell it held dates
    np.testing.assert_allclose(clf.predict_proba(no_date), clf.predict_proba(rows.assign(when=pd.NaT)), atol=1e-6)


def test_the_command_line_reads_a_csv_back_as_fit_saw_it(drifting, tmp_path):
    """Integer categories, arrow strings with leading zeros and dates all came back from the CSV as other kinds."""
    X, _, clf = drifting
    clf.save(tmp_path / "model")
    assert category_kinds(clf) == {"grade": "string", "level": "integer", "code": "string"}
    X.iloc[:8].to_csv(tmp_path / "new.csv", index=False)
    assert main(
        ["predict", str(tmp_path / "model"), str(tmp_path / "new.csv"), "--proba", "--output", str(tmp_path / "out.csv")]
    ) in (
        0,
        None,
    )
    out = pd.read_csv(tmp_path / "out.csv")
    np.testing.assert_allclose(out[["proba_0", "proba_1"]].to_numpy(), clf.predict_proba(X.iloc[:8]), atol=1e-5)


def test_rows_without_any_input_warn_that_their_answer_reads_no_data():
    rng = np.random.default_rng(0)
    words = ["red", "blue", "green", "wool", "cotton", "silk", "hat", "shirt", "scarf", "big", "small", "old", "new"]
    X = pd.DataFrame(
        {
            "title": [" ".join(rng.choice(words, 4)) for _ in range(40)],
            "photo": [rng.integers(0, 256, (8, 8), dtype=np.uint8) for _ in range(40)],
        }
    )
    reg = TabFormerRegressor(**SETTINGS).fit(X, rng.normal(size=40))
    empty = pd.DataFrame({"title": [None, "red hat", None], "photo": [None, None, None]})
    with pytest.warns(UserWarning, match=r"2 row\(s\) hold no input: every text and image cell is missing \(rows \[0, 2\]\)"):
        reg.predict(empty)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.predict(X.iloc[:5].assign(photo=None))  # a text in every row: no "no input" warning
    # only that no training row lacked its photo (tests/test_mixed_missing_inputs.py)
    assert [w.category for w in caught] == [UntrainedMissingWarning] and "['photo']" in str(caught[0].message)


# ----------------------------------------------------------------------------- unseen categories
def _unseen_and_category_rows(clf):
    embedder = next(m for m in clf.module_.modules() if isinstance(m, TabularEmbedder))
    rows = embedder.category_embedding.weight.detach()
    return rows[embedder.category_offsets + UNSEEN_ID].clone(), rows[embedder.category_offsets + UNSEEN_ID + 1].clone()


def test_the_embedder_and_the_tokenizer_agree_on_the_unseen_id():
    assert embedder_unseen_id == UNSEEN_ID


@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_category_dropout_trains_the_unseen_id(rate):
    """Without it no training row holds the unseen id: only weight decay moves its embedding."""
    X, y = make_table(200)
    settings = dict(SETTINGS, tokenizer__category_dropout=rate, validation_fraction=None)
    unseen_1, category_1 = _unseen_and_category_rows(TabFormerClassifier(**dict(settings, max_epochs=1)).fit(X, y))
    unseen_4, category_4 = _unseen_and_category_rows(TabFormerClassifier(**dict(settings, max_epochs=4)).fit(X, y))
    unseen_moved = float((unseen_4 - unseen_1).norm(dim=1).mean())
    category_moved = float((category_4 - category_1).norm(dim=1).mean())
    assert (unseen_moved > 0.2 * category_moved) == (rate > 0), (unseen_moved, category_moved)


def test_category_dropout_is_off_at_predict_and_checked():
    X, y = make_table(120)
    clf = TabFormerClassifier(**SETTINGS, tokenizer__category_dropout=0.5).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(ValueError, match=r"category_dropout must be a probability in \[0, 1\), got 1.0"):
        TabFormerClassifier(**SETTINGS, tokenizer__category_dropout=1.0).fit(X, y)


def test_a_sentence_pair_given_in_another_column_order_is_read_in_the_fitted_order():
    from tabformer.tokenizers import WordPieceTokenizer

    pairs = pd.DataFrame(
        {"question": ["is it red", "how big is it", "who made it"] * 10, "answer": ["yes", "large", "a cat"] * 10}
    )
    tok = WordPieceTokenizer(vocab_size=60).fit(pairs)
    swapped, expected = tok.transform(pairs[["answer", "question"]]), tok.transform(pairs)
    for key in expected:
        np.testing.assert_array_equal(swapped[key], expected[key])
    with pytest.raises(ValueError, match="are not those seen in fit"):
        tok.transform(pairs.rename(columns={"answer": "reply"}))


# ----------------------------------------------------------------------------- tokens no training row trained
def test_a_column_whose_every_value_is_new_warns_and_names_the_respelling(drifting):
    X, _, clf = drifting
    with pytest.warns(
        UserWarning,
        match=r"categorical column 'grade': none of its 60 values is a category fit saw.*"
        r"match a fitted category once case and spaces are ignored \('(LO|MID|HI)' against '(lo|mid|hi)'\)",
    ):
        clf.predict(X.assign(grade=X["grade"].astype(str).str.upper()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # new values read the untrained 'unseen' id: that warning (tests/test_predict_input_review.py), not this one
        warnings.simplefilter("ignore", UnseenCategoryWarning)
        clf.predict(X.iloc[:3].assign(grade="new"))  # a few rows to score: a new value is no sign of a recoding
        clf.predict(X.assign(grade=np.where(np.arange(60) % 2, "new", X["grade"].astype(str))))  # half still known


def test_missing_values_in_a_column_that_had_none_at_fit_warn_until_a_continued_fit_trains_them():
    from tabformer.tokenizers import UntrainedMissingWarning

    X, y = make_table(120)
    X = X.assign(when=pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(120), unit="D"))
    clf = TabFormerClassifier(**SETTINGS, warm_start=True).fit(X, y)
    holes = X.copy()
    holes.loc[:4, "income"] = np.nan  # age and city miss values in fit already: no warning for them
    holes.loc[:1, "age"] = np.nan
    holes.loc[:1, "when"] = pd.NaT
    first, last = "income", "when"
    expected = rf"column\(s\) '{first}' \(5 missing\), '{last}' \(2 missing\) miss values now"
    with pytest.warns(UntrainedMissingWarning, match=expected):
        clf.predict(holes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedMissingWarning)
        clf.partial_fit(holes, y)  # trains those tokens: no warning, and none at predict after it
        clf.predict(holes)
    assert clf.tokenizer_.had_missing_[first] and clf.tokenizer_.had_missing_[last]
