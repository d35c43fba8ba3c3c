"""The tagger and the pretrainer as a review used them (stop 41): each test failed, or answered wrong, before its fix."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from skorch.callbacks import Callback

from tabformer import TabFormerPretrainer, TabFormerTagger

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, batch_size=32, verbose=0)


def _texts(n=40, seed=0):
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "and", "then", "came", "back", "home"]
    return [" ".join(rng.choice(words, 8)) for _ in range(n)]


class _MasksSeen(Callback):
    def __init__(self):
        self.masks = []

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        if training:
            self.masks.append(batch[0]["mlm_labels"].clone())


def _mlm(seen):
    return TabFormerPretrainer(
        objective="mlm",
        tokenizer="wordpiece",
        tokenizer__vocab_size=80,
        max_epochs=1,
        random_state=0,
        validation_fraction=None,
        iterator_train__shuffle=False,
        callbacks=[("seen", seen)],
        **{**TINY, "batch_size": 64},
    )


def test_a_continued_mlm_fit_draws_fresh_masks_not_the_first_fits_again():
    # Every partial_fit (and warm_start fit) rebuilt the masked dataset from the fit's seed, so
    # each call replayed the very masks of the first epoch: "afresh at every epoch" held inside
    # one fit only, and a loop of partial_fit calls trained on one masking of the texts.
    texts, seen = _texts(), _MasksSeen()
    _mlm(seen).fit(texts).partial_fit(texts).set_params(warm_start=True).fit(texts)
    first, second, third = seen.masks
    assert not torch.equal(first, second) and not torch.equal(second, third)
    again = _MasksSeen()  # still reproducible: the same calls with the same seed draw the same masks
    _mlm(again).fit(texts).partial_fit(texts)
    assert torch.equal(again.masks[1], second)


def _sentences(n=60, seed=0):
    rng = np.random.default_rng(seed)
    sentences, tags = [], []
    for _ in range(n):
        words = [str(w) for w in rng.choice(["the", "a", "visits", "sees", "in", "Alice", "Paris"], rng.integers(2, 7))]
        sentences.append(words)
        tags.append(["B-PER" if w == "Alice" else "B-LOC" if w == "Paris" else "O" for w in words])
    return sentences, tags


def test_words_cut_off_by_max_length_are_not_tagged_silently():
    # Words past tokenizer__max_length got default_tag_ ("O") with no word of warning, at fit
    # (never trained on) and at predict (never read): a long sentence's entities vanished.
    sentences, tags = _sentences()
    tagger = TabFormerTagger(tokenizer="wordpiece", tokenizer__vocab_size=80, max_epochs=1, random_state=0, **TINY)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # sentences that fit raise nothing
        warnings.simplefilter("ignore", ConvergenceWarning)  # a 1-epoch tagger answering "O" is not the point here
        tagger.fit(sentences, tags)
        assert [len(row) for row in tagger.predict([["Alice", "", "visits"], []])] == [3, 0]  # an empty word is no cut
    long = ["the"] * 200 + ["Alice"]
    with pytest.warns(UserWarning, match=r"1 of 2 sentences.*tokenizer__max_length=128.*default_tag_") as record:
        predicted = tagger.predict([long, ["Paris"]])
    assert len(predicted[0]) == 201 and "words" in str(record[0].message)
    with pytest.warns(UserWarning, match="tokenizer__max_length"):
        tagger.fit(sentences + [long], tags + [["O"] * 200 + ["B-PER"]])


def test_a_tagger_that_answers_one_tag_for_every_word_warns_as_the_classifier_does():
    # A from-scratch tagger stopped early answered "O" for every word (entity F1 0) and said
    # nothing, where a classifier that answers one class warns (docs/defaults.md).
    sentences, tags = _sentences()
    with pytest.warns(ConvergenceWarning, match=r"predicts one tag \('O'\) for every word.*max_epochs; resolved: 1"):
        tagger = TabFormerTagger(tokenizer="wordpiece", tokenizer__vocab_size=80, max_epochs=1, random_state=0, **TINY)
        tagger.fit(sentences, tags)
    assert {tag for row in tagger.predict(sentences) for tag in row} == {"O"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a tagger that learnt the entities is quiet
        learnt = TabFormerTagger(tokenizer="wordpiece", tokenizer__vocab_size=80, max_epochs=10, lr=1e-2, random_state=0, **TINY)
        assert learnt.fit(sentences, tags).score(sentences, tags) > 0.9


def test_a_dataframe_column_of_word_lists_is_read_as_sentences():
    # A one-column DataFrame of word lists (how tokenized corpora often sit) was iterated over its
    # column names: "X[0] must be a list of words (str), got str", pointing at the wrong thing.
    sentences, tags = _sentences(40)
    frame = pd.DataFrame({"tokens": sentences, "tags": tags})
    tagger = TabFormerTagger(tokenizer="wordpiece", tokenizer__vocab_size=80, max_epochs=1, random_state=0, **TINY)
    tagger.fit(frame[["tokens"]], frame[["tags"]])
    assert tagger.predict(frame[["tokens"]]) == tagger.predict(sentences)
    with pytest.raises(ValueError, match=r"X is a DataFrame of 2 columns \['tokens', 'tags'\].*X\['tokens'\]"):
        tagger.predict(frame)
