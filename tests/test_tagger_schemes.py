"""How TabFormerTagger.score reads a tag set: entity F1 for BIO and BIOES (IOBES), word accuracy otherwise.

A BIOES tagger was scored by word accuracy: one answering "O" everywhere scored 0.86 on CoNLL.
"""

import warnings

import pytest

from tabformer import TabFormerTagger
from tabformer.metrics import bio_entities, entity_f1, is_bio_tag, tag_scheme

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


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


def test_tag_scheme_is_read_from_the_tag_set():
    assert tag_scheme(["O", "B-PER", "I-PER"]) == "BIO"
    assert tag_scheme(["O", "B-PER", "I-PER", "E-PER", "S-LOC"]) == tag_scheme(["S-LOC", "O"]) == "BIOES"
    for stray in (["0", "B-PER"], ["o", "b-per"], ["O", "B-"], ["NN", "VB"], ["O", "l-PER"]):
        assert tag_scheme(stray) is None, stray
    assert tag_scheme(["O", "B-PER", "L-PER", "U-LOC"]) == "BILOU"
    # an entity type must follow the dash
    assert not is_bio_tag("B-") and is_bio_tag("B-X") and not is_bio_tag("S-X")
    with pytest.raises(ValueError, match="no entity type"):
        bio_entities(["B-", "O"])


def test_bioes_entities_as_seqeval_default_mode_reads_them():
    assert bio_entities(["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "S-ORG", "S-ORG"]) == [
        (0, 1, "PER"),
        (1, 4, "LOC"),
        (5, 6, "ORG"),
        (6, 7, "ORG"),
    ]
    # lenient, as I-X after O in BIO: E-X or I-X after O, E or S starts an entity; B-X without E-X still ends at O
    assert bio_entities(["O", "E-PER", "E-PER", "I-LOC", "O", "B-ORG", "I-ORG", "O"]) == [
        (1, 2, "PER"),
        (2, 3, "PER"),
        (3, 4, "LOC"),
        (5, 7, "ORG"),
    ]


def test_bioes_entity_f1_by_hand():
    true = [["S-PER", "O", "B-LOC", "E-LOC"], ["B-ORG", "I-ORG", "E-ORG", "O", "S-MISC"]]
    # PER right; LOC cut short (S-LOC at 2 is (2,3), not (2,4)), E-LOC at 3 opens (3,4): two wrong;
    # ORG right; S-MISC missed. True 4 entities, predicted 4 of which 2 right: P = R = F1 = 1/2.
    pred = [["S-PER", "O", "S-LOC", "E-LOC"], ["B-ORG", "I-ORG", "E-ORG", "O", "O"]]
    assert entity_f1(true, pred, return_precision_recall=True) == (0.5, 0.5, 0.5)


def _bioes_corpus():
    sentences = [["alice", "smith", "visited", "paris"], ["yesterday", "bob", "left", "new", "york"]] * 8
    tags = [["B-PER", "E-PER", "O", "S-LOC"], ["O", "S-PER", "O", "B-LOC", "E-LOC"]] * 8
    return sentences, tags


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_bioes_tagger_is_scored_by_entity_f1(monkeypatch):
    sentences, tags = _bioes_corpus()
    tagger = TabFormerTagger(**TINY).fit(sentences, tags)
    assert tagger.score(sentences, tags) == entity_f1(tags, tagger.predict(sentences))
    # a model answering "O" everywhere finds no entity: F1 0, not the word accuracy 1/3 it scored
    monkeypatch.setattr(tagger, "predict", lambda X: [["O"] * len(words) for words in X])
    assert tagger.score(sentences, tags) == 0.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("stray", ["0", "o", "B-"])
def test_a_stray_tag_warns_at_fit_that_score_is_word_accuracy(stray):
    sentences, tags = _bioes_corpus()
    tags = [[stray if tag == "O" else tag for tag in row] for row in tags]
    with pytest.warns(UserWarning, match=rf"score will be word accuracy.*\['{stray}'\] are not BIO, BIOES or BILOU") as caught:
        tagger = TabFormerTagger(**TINY).fit(sentences, tags)
    assert sum("score will be word accuracy" in str(w.message) for w in caught) == 1
    predicted = tagger.predict(sentences)
    expected = sum(t == p for row, guess in zip(tags, predicted) for t, p in zip(row, guess)) / sum(map(len, tags))
    assert tagger.score(sentences, tags) == pytest.approx(expected)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pos_tags_are_word_accuracy_without_a_warning():
    sentences = [["the", "cat", "sat"], ["a", "dog", "ran"]] * 6
    tags = [["DT", "NN", "VBD"]] * 12
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tagger = TabFormerTagger(**TINY).fit(sentences, tags)
    assert not [w for w in caught if "score will be" in str(w.message)]
    right = sum(t == p for row, guess in zip(tags, tagger.predict(sentences)) for t, p in zip(row, guess))
    assert tagger.score(sentences, tags) == pytest.approx(right / 36)


def test_bilou_reads_as_bioes_under_its_own_letters():
    bioes = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "E-ORG"]
    bilou = ["U-PER", "B-LOC", "I-LOC", "L-LOC", "O", "L-ORG"]
    assert bio_entities(bilou) == bio_entities(bioes) == [(0, 1, "PER"), (1, 4, "LOC"), (5, 6, "ORG")]
    assert entity_f1([bilou], [["U-PER", "B-LOC", "I-LOC", "L-LOC", "O", "O"]]) == pytest.approx(0.8)
