"""TabFormerTagger (BIO tagging) and the CoNLL entity F1."""

import pickle

import numpy as np
import pytest

from tabformer import TabFormerTagger
from tabformer.metrics import bio_entities, entity_f1
from tabformer.nn.heads import IGNORE_INDEX

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


NAMES = ["alice", "bob", "carol", "dave"]
CITIES = ["paris", "london", "berlin", "madrid"]


def _corpus(n=40, seed=0):
    rng = np.random.default_rng(seed)
    sentences, tags = [], []
    for _ in range(n):
        name, city = rng.choice(NAMES), rng.choice(CITIES)
        if rng.random() < 0.5:
            words = [name.title(), "smith", "visited", city.title(), "today"]
            row = ["B-PER", "I-PER", "O", "B-LOC", "O"]
        else:
            words = ["yesterday", city.title(), "welcomed", name.title()]
            row = ["O", "B-LOC", "O", "B-PER"]
        sentences.append(words)
        tags.append(row)
    return sentences, tags


SMALL = dict(
    tokenizer__vocab_size=80,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    encoder__attention_dropout=0.0,
    lr=1e-2,
    batch_size=8,
    validation_fraction=None,
    verbose=0,
    random_state=0,
)


def test_bio_entities_follow_conlleval():
    assert bio_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [(0, 2, "PER"), (3, 4, "LOC")]
    # I- after O starts an entity; a type change splits; B- splits two entities of one type
    assert bio_entities(["O", "I-ORG", "I-ORG", "I-LOC"]) == [(1, 3, "ORG"), (3, 4, "LOC")]
    assert bio_entities(["B-PER", "B-PER", "I-PER"]) == [(0, 1, "PER"), (1, 3, "PER")]
    assert bio_entities([]) == []
    with pytest.raises(ValueError, match="not BIO"):
        bio_entities(["PER"])


def test_entity_f1_counts_exact_spans():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    assert entity_f1(true, true) == 1.0
    # one span too short (wrong), one type wrong, one right: P = 1/3, R = 1/3
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O"]]
    precision, recall, f1 = entity_f1(true, pred, return_precision_recall=True)
    assert precision == pytest.approx(1 / 3) and recall == pytest.approx(1 / 3) and f1 == pytest.approx(1 / 3)
    # extra predicted entity lowers precision only
    pred = [["B-PER", "I-PER", "B-MISC", "B-LOC"], ["B-ORG", "O"]]
    assert entity_f1(true, pred, return_precision_recall=True)[:2] == (0.75, 1.0)
    assert entity_f1([["O"]], [["O"]]) == 0.0
    with pytest.raises(ValueError, match="sentence 0"):
        entity_f1([["O", "O"]], [["O"]])


def test_tagger_aligns_first_subword_and_learns():
    sentences, tags = _corpus()
    tagger = TabFormerTagger(max_epochs=30, **SMALL).fit(sentences, tags)
    assert list(tagger.classes_) == ["B-LOC", "B-PER", "I-PER", "O"]
    # first sub-word labelled, the rest ignored
    batch = tagger.tokenizer_.transform(sentences[:5])
    labels = tagger._align(batch, tags[:5])
    for i in range(5):
        words = batch["word_ids"][i]
        labelled = words[labels[i] != IGNORE_INDEX]
        assert labelled.tolist() == list(range(len(sentences[i])))
    predicted = tagger.predict(sentences)
    assert [len(p) for p in predicted] == [len(s) for s in sentences]
    assert tagger.score(sentences, tags) >= 0.9
    test_sentences, test_tags = _corpus(10, seed=1)
    assert entity_f1(test_tags, tagger.predict(test_sentences)) >= 0.9


@pytest.mark.filterwarnings("ignore:.*longer than tokenizer__max_length:UserWarning")  # truncating is the point here
def test_tagger_predicts_one_tag_per_word_even_when_truncated():
    sentences, tags = _corpus(12)
    tagger = TabFormerTagger(max_epochs=1, tokenizer__max_length=6, **SMALL).fit(sentences, tags)
    long = [["alice"] * 20, [], ["\x00"]]
    predicted = tagger.predict(long)
    assert [len(p) for p in predicted] == [20, 0, 1]
    assert predicted[0][-1] == tagger.default_tag_ == "O"
    restored = pickle.loads(pickle.dumps(tagger))
    assert restored.predict(sentences) == tagger.predict(sentences)


def test_tagger_input_errors():
    sentences, tags = _corpus(4)
    with pytest.raises(ValueError, match="3 words but 2 tags"):
        TabFormerTagger(max_epochs=1, **SMALL).fit([["a", "b", "c"]], [["O", "O"]])
    with pytest.raises(ValueError, match="list of words"):
        TabFormerTagger(max_epochs=1, **SMALL).fit(["a b c"], [["O", "O", "O"]])
    with pytest.raises(ValueError, match="requires y to be passed"):
        TabFormerTagger(max_epochs=1, **SMALL).fit(sentences)


@pytest.mark.filterwarnings("ignore:.*longer than tokenizer__max_length:UserWarning")  # truncating is the point here
def test_predict_proba_is_per_word_and_predict_is_its_argmax():
    # predict_proba was per sub-word, (n, T, n_tags) with the tokenizer batch: no row per word, none for cut words
    sentences, tags = _corpus(12)
    tagger = TabFormerTagger(max_epochs=2, tokenizer__max_length=6, **SMALL).fit(sentences, tags)
    X = [sentences[0], ["alice"] * 20, [], ["\x00"], sentences[1]]  # the second is cut at 6 sub-words
    proba, predicted = tagger.predict_proba(X), tagger.predict(X)
    assert isinstance(proba, list) and [p.shape for p in proba] == [(len(s), len(tagger.classes_)) for s in X]
    for rows, tags_i in zip(proba, predicted):
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-5)
        assert tagger.classes_[rows.argmax(axis=1)].tolist() == tags_i
    # a word past max_length, or of no sub-word, is certain of default_tag_, as predict gives it
    default = np.zeros(len(tagger.classes_))
    default[list(tagger.classes_).index(tagger.default_tag_)] = 1.0
    np.testing.assert_array_equal(proba[1][-1], default)
    np.testing.assert_array_equal(proba[3][0], default)
    # the per-sub-word probabilities stay available, each word's first sub-word read into its row
    subword, batch = tagger.predict_subword_proba(X)
    assert subword.shape[:2] == batch["word_ids"].shape
    np.testing.assert_allclose(proba[0][0], subword[0, list(batch["word_ids"][0]).index(0)], rtol=1e-6)
