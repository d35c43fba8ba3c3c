"""``encoder=<a PretrainedEncoder or its folder>`` applies the user's ``tokenizer__*`` and
``encoder__*`` settings as ``from_pretrained`` does, or refuses them (a review found them
silently ignored)."""

import pytest
from conftest import TINY

from tabformer import PatchTokenizer, TabFormerClassifier, TabFormerPretrainer

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "birds fly high", "fish swim deep"] * 10
LABELS = ["a", "b"] * 20


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    pretrainer = TabFormerPretrainer(**TINY, tokenizer__vocab_size=60, random_state=0).fit(TEXTS)
    folder = tmp_path_factory.mktemp("saved") / "pretrainer"
    pretrainer.save(folder)
    return pretrainer.encoder_, folder


@pytest.mark.parametrize("as_folder", [False, True])
def test_settings_the_weights_allow_are_applied_and_others_refused(pretrained, as_folder):
    encoder = pretrained[1] if as_folder else pretrained[0]
    fit = dict(max_epochs=1, verbose=0, random_state=0)
    model = TabFormerClassifier(encoder=encoder, tokenizer__max_length=4, encoder__dropout=0.4, **fit).fit(TEXTS, LABELS)
    assert model.tokenize(TEXTS)["input_ids"].shape[1] <= 3  # max_length 4: CLS + 3 (was 128)
    assert model.module_.encoder.config["dropout"] == 0.4
    assert pretrained[0].encoder.config["dropout"] == 0.0  # the caller's encoder is left alone
    with pytest.raises(ValueError, match=r"tokenizer__vocab_size=1000 contradicts the pretrained weights \(vocab_size=60\)"):
        TabFormerClassifier(encoder=encoder, tokenizer__vocab_size=1000, **fit).fit(TEXTS, LABELS)
    with pytest.raises(ValueError, match=r"encoder__d_model=32 contradicts the pretrained weights \(d_model=16\)"):
        TabFormerClassifier(encoder=encoder, encoder__d_model=32, **fit).fit(TEXTS, LABELS)


def test_a_tokenizer_instance_cannot_replace_the_pretrained_one(pretrained):
    with pytest.raises(ValueError, match=r"a pretrained `encoder` brings its own fitted tokenizer"):
        TabFormerClassifier(encoder=pretrained[0], tokenizer=PatchTokenizer(), max_epochs=1).fit(TEXTS, LABELS)


def test_inputs_of_another_kind_say_what_the_pretrained_tokenizer_reads(pretrained):
    images = [[[0, 255], [255, 0]]] * 4
    with pytest.raises(
        (ValueError, TypeError), match=r"the pretrained encoder's WordPieceTokenizer reads text inputs and cannot read X"
    ):
        TabFormerClassifier(encoder=pretrained[0], max_epochs=1).fit(images, ["a", "b"] * 2)


def test_sentences_given_to_a_table_encoder_say_what_it_reads(tmp_path):
    # A tagger warm-started from a saved table model failed in numpy: "inhomogeneous shape after 1 dimensions"
    from conftest import TINY, make_table

    from tabformer import TabFormerTagger

    X, y = make_table(n=60)
    TabFormerClassifier(**TINY, ensemble_size=1).fit(X, y).save(tmp_path / "table")
    sentences, tags = [["the", "cat", "sat"], ["a", "dog", "ran", "far"]] * 5, [["O", "B", "O"], ["O", "B", "O", "O"]] * 5
    with pytest.raises((ValueError, TypeError), match=r"the pretrained encoder's TabularTokenizer reads table inputs"):
        TabFormerTagger.from_pretrained(tmp_path / "table", max_epochs=1).fit(sentences, tags)
    grow = TabFormerClassifier.from_pretrained(tmp_path / "table", max_epochs=1, new_categories="grow")
    with pytest.raises((ValueError, TypeError), match=r"the pretrained encoder's TabularTokenizer reads table inputs"):
        grow.fit([[["a"], ["b", "c"]]] * 10, [0, 1] * 5)
