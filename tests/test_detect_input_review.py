"""Inputs whose detection went silently wrong (a review of ``tokenizer="auto"``):

- one number in a column of free texts made every text a category (``tokenizers/registry.py``);
- numbers written as strings (a CSV read with ``dtype=str``, Adult's ``"?"``) were categories or
  sub-words without a word at fit (``tokenizers/_column_hints.py``);
- a list of texts whose row 0 is a number failed with sklearn's "Expected 2D array"
  (``tokenizers/detect.py``'s ``looks_like_text``).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import MixedTokenizer, TabularTokenizer
from tabformer.tokenizers.registry import make_tokenizer

N = 200
WORDS = "the cat sat on a mat while dog ran fast slow good bad movie film great awful"


def _reviews(n=N, seed=0):
    rng = np.random.RandomState(seed)
    return [" ".join(rng.choice(WORDS.split(), rng.randint(3, 12))) for _ in range(n)]


def _x(n=N):
    return np.random.default_rng(1).normal(size=n)


def _fit_auto(frame, **params):
    return make_tokenizer("auto", frame, params).fit(frame)


def _column_warnings(fit) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning) and "column" in str(w.message)]


# ------------------------------------------------------------------ one number among texts


def test_one_number_in_a_text_column_raises_naming_the_column_row_and_value():
    # The reviews fell back to a table: 200 categories, each new review "unseen", constant predictions
    review = pd.Series(_reviews(), dtype=object)
    review[3] = 5  # a star rating that slipped into the column
    X = pd.DataFrame({"review": review, "n": _x()})
    with pytest.raises(ValueError, match=r"column 'review' mixes strings with int values such as 5 \(row 3\)") as error:
        make_tokenizer("auto", X)
    assert "astype" in str(error.value) and "categorical_columns" in str(error.value)
    with pytest.raises(ValueError, match=r"'review' mixes strings with int values such as 5 \(row 3\)"):
        TabFormerClassifier(max_epochs=1, verbose=0).fit(X, np.arange(N) % 2)
    # The fixes the message names: the cell marked missing reads as text; listed, the column is the user's categories
    fixed = make_tokenizer("auto", X.assign(review=review.where(review.map(lambda v: isinstance(v, str)))))
    assert isinstance(fixed, MixedTokenizer)
    assert isinstance(make_tokenizer("auto", X, {"categorical_columns": ["review"]}), TabularTokenizer)


def test_a_categorical_column_mixing_strings_and_numbers_keeps_its_warning():
    # A code column read as ints from one file and strings from another: categories, not text
    code = pd.Series([i % 3 if i % 2 else str(i % 3) for i in range(N)], dtype=object)
    X = pd.DataFrame({"code": code, "x": _x()})
    assert isinstance(make_tokenizer("auto", X), TabularTokenizer)
    messages = _column_warnings(lambda: _fit_auto(X))
    assert any("'code' mixes strings and numbers" in m for m in messages), messages


# ------------------------------------------------------------------ numbers written as strings


def test_numbers_written_as_strings_with_a_sentinel_warn_at_fit():
    # Adult's "?": 62 ages became 62 categories, and "81" at predict was silently unseen
    rng = np.random.RandomState(0)
    age = pd.Series(rng.randint(18, 80, N).astype(str), dtype=object)
    age[5] = "?"
    X = pd.DataFrame({"age": age, "b": rng.choice(["x", "y"], N)})
    messages = [m for m in _column_warnings(lambda: _fit_auto(X)) if "'age'" in m]
    assert len(messages) == 1, messages
    assert "'age' holds numbers written as strings" in messages[0]
    assert "'?' does not parse" in messages[0] and "read as categories" in messages[0]
    assert "pd.to_numeric(X['age'], errors='coerce')" in messages[0] and "If these are codes" in messages[0]
    # naming the column's kind, or a category dtype, silences it
    assert not _column_warnings(lambda: _fit_auto(X, categorical_columns=["age"]))
    assert not _column_warnings(lambda: _fit_auto(X.assign(age=age.astype("category"))))


def test_decimal_strings_read_as_text_warn_as_numbers_not_as_an_identifier():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"price": [f"{v:.2f}" for v in rng.gamma(2, 10, N)], "b": rng.choice(["x", "y"], N)})
    messages = [m for m in _column_warnings(lambda: _fit_auto(X)) if "'price'" in m]
    assert len(messages) == 1, messages
    assert "'price' holds numbers written as strings" in messages[0] and "read as text (sub-word tokens)" in messages[0]


def test_the_numbers_warning_reads_the_same_in_every_cv_fold():
    rng = np.random.RandomState(0)
    age = pd.Series(rng.randint(18, 80, N).astype(str), dtype=object)
    age[[5, 70, 150]] = "?"
    X = pd.DataFrame({"age": age, "b": rng.choice(["x", "y"], N)})
    texts = {tuple(_column_warnings(lambda rows=rows: _fit_auto(X.iloc[rows]))) for rows in np.array_split(np.arange(N), 3)}
    assert len(texts) == 1, texts


@pytest.mark.parametrize(
    "values",
    [
        [f"{z:05d}" for z in np.random.RandomState(0).randint(1000, 99999, N)],  # zip codes: a leading zero is no number
        ["red", "green", "blue", "1"] * (N // 4),  # mostly words
        [str(i % 5) for i in range(N - 40)] + ["a", "b"] * 20,  # 80% numbers: a code list with letters
    ],
)
def test_codes_and_words_do_not_warn_as_numbers(values):
    X = pd.DataFrame({"code": pd.Series(values, dtype=object), "x": _x()})
    messages = _column_warnings(lambda: _fit_auto(X))
    assert not any("numbers written as strings" in m for m in messages), messages


# ------------------------------------------------------------------ a list of texts whose row 0 is a number


@pytest.mark.parametrize("row", [0, 7])
def test_a_number_among_texts_is_named_whatever_its_row(row):
    texts = _reviews()
    texts[row] = 5
    with pytest.raises(ValueError, match=rf"row {row} is a int"):
        TabFormerClassifier(max_epochs=1, verbose=0).fit(texts, np.arange(N) % 2)


def test_a_list_of_numbers_is_still_no_text():
    from tabformer.tokenizers.detect import looks_like_text

    assert not looks_like_text([1, 2, "?", 3])  # mostly numbers: the table tokenizer's own error
    assert not looks_like_text(np.arange(5.0)) and not looks_like_text(pd.Series([None, 1.0]))
    assert looks_like_text([5, None, "a b", "c d"]) and looks_like_text(pd.Series([np.nan, "a"]))
