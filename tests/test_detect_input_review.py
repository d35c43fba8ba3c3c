"""Inputs whose detection went silently wrong (a review of ``tokenizer="auto"``):

- one number in a column of free texts made every text a category (``tokenizers/registry.py``).
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
