"""A text or image column that misses cells at predict but missed none at fit: no training row was read without it."""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import MixedTokenizer, UntrainedMissingWarning, WordPieceTokenizer

WORDS = ["red wool hat", "blue cotton shirt", "green silk scarf", "black leather boot"]


def _frame(n=120, missing=()):
    """``n`` rows of a title (distinct words on every row: a text column, not categories) and a price."""
    rng = np.random.default_rng(0)
    titles = [f"{WORDS[i % 4]} number{i}" for i in range(n)]
    for row in missing:
        titles[row] = None
    return pd.DataFrame({"title": titles, "price": rng.normal(size=n)})


def _untrained(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, UntrainedMissingWarning)]


def _tokenizer(**params):
    return MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1), **params)


def test_a_text_column_missing_only_at_predict_warns_naming_it():
    # Rows without the title were read without that input, which no training row was, silently.
    tokenizer = _tokenizer().fit(_frame())
    messages = _untrained(lambda: tokenizer.transform(_frame(6, missing=[1, 4])))
    assert len(messages) == 1 and "['title'] miss cells now but missed none" in messages[0]
    assert "tokenizer__segment_dropout" in messages[0]
    assert not _untrained(lambda: tokenizer.transform(_frame(6)))


@pytest.mark.parametrize("how", ["missed at fit too", "segment dropout"])
def test_no_warning_where_training_read_rows_without_the_input(how):
    if how == "missed at fit too":
        tokenizer = _tokenizer().fit(_frame(missing=[3]))
    else:
        tokenizer = _tokenizer(segment_dropout=0.1).fit(_frame())
    assert not _untrained(lambda: tokenizer.transform(_frame(6, missing=[1])))


def test_the_estimator_warns_once_per_predict():
    X = _frame()
    y = np.where(X["price"] > 0, "pos", "neg")
    settings = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, ensemble_size=1, verbose=0)
    model = TabFormerClassifier(tokenizer="mixed", **settings).fit(X, y)
    assert len(_untrained(lambda: model.predict(_frame(6, missing=[0])))) == 1
