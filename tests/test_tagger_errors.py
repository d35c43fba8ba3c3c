"""TabFormerTagger's input errors say what is wrong, and its truncation warning counts only words that were cut."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerTagger

TINY = dict(
    tokenizer="wordpiece",
    tokenizer__vocab_size=60,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    batch_size=8,
    validation_fraction=None,
    verbose=0,
    random_state=0,
    max_epochs=1,
)
SENTENCES = [["alice", "visits", "paris"], ["bob", "stays", "home"]] * 4
TAGS = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"]] * 4

pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.usefixtures("one_torch_thread"),  # conftest: one torch thread, restored after
]


@pytest.fixture(scope="module")
def tagger():
    return TabFormerTagger(**TINY, tokenizer__max_length=6).fit(SENTENCES, TAGS)


@pytest.mark.parametrize(
    "weights, found",
    [
        # numpy said "inhomogeneous shape", or "got 2D array" where the sentences are equally long
        ([np.ones(len(s)) for s in SENTENCES[:7]] + [np.ones(2)], r"sample_weight\[0\] holds 3 numbers"),
        ([[1.0] * len(s) for s in SENTENCES], r"sample_weight\[0\] holds 3 numbers"),
        (pd.Series([np.ones(3)] * 8), r"sample_weight\[0\] holds 3 numbers"),
        (np.ones((8, 3)), r"sample_weight has shape \(8, 3\)"),
    ],
)
def test_per_word_sample_weight_is_refused_as_one_number_per_sentence(weights, found):
    message = found + r": sample_weight is one number per sentence .* not one per word"
    with pytest.raises(ValueError, match=message):
        TabFormerTagger(**TINY).fit(SENTENCES, TAGS, sample_weight=weights)
    with pytest.raises(ValueError, match=message):
        TabFormerTagger(**TINY).partial_fit(SENTENCES, TAGS, sample_weight=weights)


def test_a_tag_unseen_in_fit_is_named_among_plain_strings():
    tagger = TabFormerTagger(**dict(TINY, warm_start=True)).fit(SENTENCES, TAGS)
    for cont in (tagger.fit, tagger.partial_fit):
        with pytest.raises(ValueError) as caught:
            cont([["x"]], [["B-NEW"]])
        # it printed [np.str_('B-LOC'), np.str_('B-PER'), np.str_('O')]
        assert str(caught.value) == "y holds tag(s) ['B-NEW'] not seen in fit; tags are ['B-LOC', 'B-PER', 'O']"


@pytest.mark.parametrize(
    "X, message",
    [
        ([["a"], None], "X[1] is None; every sentence must be a list of words"),  # said "split the text into words first"
        ({0: ["a"], 1: ["b"]}, "X is a dict; pass a list of sentences"),  # said "X[0] ... got int"
        ({("a",), ("b",)}, "X is a set; pass a list of sentences"),
        ([["a"], {"b", "c"}], "X[1] is a set, which has no order"),  # was tagged, in an arbitrary order
        ([frozenset({"b", "c"})], "X[0] is a frozenset, which has no order"),
        ([{"b": 1}], "X[0] is a dict, whose keys would be read"),
        (["alice visits"], "X[0] must be a list of words (str), got str: split the text into words first"),
        ([["a"], 3], "X[1] must be a list of words (str), got int"),
    ],
)
def test_a_sentence_that_is_no_list_of_words_is_named(tagger, X, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        tagger.predict(X)
    assert "split the text" not in str(caught.value) or "got str" in str(caught.value)


def test_y_as_a_dict_or_with_a_none_row_is_named():
    with pytest.raises(ValueError, match=re.escape("y is a dict; pass a list of tag lists")):
        TabFormerTagger(**TINY).fit(SENTENCES, dict(enumerate(TAGS)))
    with pytest.raises(ValueError, match=re.escape("y[1] is None; every sentence must be a list of tags")):
        TabFormerTagger(**TINY).fit(SENTENCES[:2], [TAGS[0], None])


def _cut_warnings(tagger, X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predicted = tagger.predict(X)
    assert [len(p) for p in predicted] == [len(s) for s in X]
    return [str(w.message) for w in caught if "tokenizer__max_length" in str(w.message)]


def test_words_of_no_sub_word_after_a_full_sentence_are_not_counted_as_cut(tagger):
    # "bob" is one sub-word: 4 of them and [SEP] fill tokenizer__max_length=6 (with CLS)
    assert tagger.tokenizer_.transform([["bob"] * 4])["attention_mask"].sum() == 5
    # "\x00" and a zero-width space have no sub-word: they get default_tag_ at any length, nothing was cut
    assert _cut_warnings(tagger, [["bob"] * 4 + ["\x00"], ["bob"] * 4 + ["\x00", "\u200b"]]) == []
    X = [["bob"] * 4 + ["\x00"], ["bob"] * 5 + ["\x00"], ["bob"] * 4 + ["\x00", "bob", "bob", "\x00"], ["bob"]]
    (message,) = _cut_warnings(tagger, X)
    assert message.startswith("2 of 4 sentences are longer") and "the 3 words past it" in message, message


def test_the_cut_check_tokenizes_each_distinct_word_past_the_end_once(tagger, monkeypatch):
    # A review: the check tokenized every word past the end, one per row, on every predict: 2,000 sentences
    # of 400 words at max_length 16 took 13.7 s, against 3.3 s before it. Long sentences repeat their words.
    calls, transform = [], tagger.tokenizer_.transform
    monkeypatch.setattr(tagger.tokenizer_, "transform", lambda X, *a, **k: calls.append(len(X)) or transform(X, *a, **k))
    X = [["bob"] * 4 + ["alice", "paris", "\x00"] * 20] * 30
    (message,) = _cut_warnings(tagger, X)
    assert message.startswith("30 of 30 sentences are longer") and "the 1200 words past it" in message, message
    assert calls == [30, 3], calls  # the sentences, then "alice", "paris" and "\x00" once each


def test_explain_refuses_a_tagger_whose_head_never_reads_cls(tagger):
    # explain reported CLS's attention row, which the per-token head never reads: a silently meaningless answer
    from tabformer import inspection, plot

    for call in (
        lambda: tagger.explain(SENTENCES[:1]),
        lambda: inspection.explain(tagger, SENTENCES[:1], query="mean"),
        lambda: plot.attention(tagger, SENTENCES[:1]),
    ):
        with pytest.raises(TypeError, match=r"TabFormerTagger.*reads each sub-word's own output.*return_attention=True"):
            call()
    # the maps the message points to: one per layer, a query row per sub-word
    maps = tagger.forward_features(SENTENCES[:1], return_attention=True)[1]
    assert maps[0].shape[2] == 1 + tagger.tokenize(SENTENCES[:1])["word_ids"].shape[1]
