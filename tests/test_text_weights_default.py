"""Texts (and a tagger's sentences) default to fine-tuning the installed all-MiniLM-L6-v2
(docs/defaults.md, "Texts now: pretrained weights by default"); settings of a model of one's
own turn it off."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.base import clone

from tabformer import TabFormerClassifier, TabFormerRegressor, TabFormerTagger, load
from tabformer.estimators import _text_recipes
from tabformer.tokenizers.base import SEP

pytestmark = pytest.mark.pretrained_text
pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)

ADJECTIVES = ["good", "great", "fine", "lovely", "bad", "awful", "poor", "dull"]
NOUNS = ["film", "plot", "cast", "score", "script", "ending"]


def _reviews(n=48, seed=0):
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        adjective = ADJECTIVES[i % len(ADJECTIVES)]
        texts.append(f"the {rng.choice(NOUNS)} was {adjective}, review number {i}")
        labels.append("pos" if ADJECTIVES.index(adjective) < 4 else "neg")
    return texts, np.asarray(labels)


def test_texts_fine_tune_the_installed_weights_with_the_pretrained_recipe():
    texts, y = _reviews()
    clf = TabFormerClassifier(max_epochs=2, verbose=0, random_state=0).fit(texts, y)
    assert clf.pretrained_weights_ == _text_recipes.text_weights_folder()
    assert clf.module_.encoder.d_model == 384 and clf.module_.encoder.config["n_layers"] == 6  # MiniLM, not d_model 256
    assert type(clf.tokenizer_).__name__ == "PretrainedTextTokenizer"
    resolved = clf.resolved_params_
    assert (resolved["lr"], resolved["max_epochs"], resolved["batch_size"], resolved["monitor"]) == (5e-5, 2, 32, "valid_acc")
    assert clf.get_params()["encoder"] is None and clf.get_params()["tokenizer"] == "auto"  # resolved, never written back
    assert not hasattr(clone(clf), "pretrained_weights_")
    # the pretrained words carry the sentiment: 2 epochs on 43 rows at lr 5e-5 already separate them
    assert clf.score(texts, y) > 0.8


def test_a_regressor_and_a_frame_of_one_text_column_get_the_weights_too():
    texts, y = _reviews()
    target = (y == "pos").astype(float) + np.linspace(0, 0.1, len(y))
    reg = TabFormerRegressor(max_epochs=1, verbose=0, random_state=0).fit(texts, target)
    assert reg.pretrained_weights_ is not None and reg.module_.encoder.d_model == 384
    frame = pd.DataFrame({"review": texts})
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(frame, y)
    assert clf.pretrained_weights_ is not None and clf.predict(frame.iloc[:3]).shape == (3,)
    # the column's name is recorded, as from scratch (the copied tokenizer kept none: a review's find)
    assert list(clf.feature_names_in_) == ["review"] and list(clf.tokenizer_.feature_names_in_) == ["review"]


def test_a_sentence_pair_fine_tunes_the_weights_as_a_pair():
    texts, y = _reviews()
    pairs = pd.DataFrame({"premise": texts, "hypothesis": texts[::-1]})
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(pairs, y)  # raised "fitted on 1" column
    assert clf.pretrained_weights_ is not None and clf.tokenizer_.n_features_in_ == 2
    ids = clf.tokenize(pairs.iloc[:2])["input_ids"]
    assert (ids == SEP).sum(axis=1).tolist() == [2, 2]  # a [SEP] b [SEP]
    with pytest.raises(ValueError, match="1 text column.*fitted on 2"):
        clf.predict(pairs["premise"])
    # a renamed column may hold other texts: refused, as scikit-learn refuses other feature names
    with pytest.raises(ValueError, match=r"\['premise', 'answer'\] are not those seen in fit, \['premise', 'hypothesis'\]"):
        clf.predict(pairs.rename(columns={"hypothesis": "answer"}))
    # the shared weights' own tokenizer still reads one column
    assert _text_recipes.default_text_weights(clf.pretrained_weights_).tokenizer.n_features_in_ == 1


@pytest.mark.parametrize(
    "settings",
    [
        dict(tokenizer="wordpiece"),  # a tokenizer of the user's choice
        dict(encoder__d_model=32, encoder__n_heads=2, encoder__n_layers=1),  # an architecture
        dict(tokenizer__vocab_size=500),  # a vocabulary
    ],
    ids=["tokenizer", "architecture", "vocabulary"],
)
def test_a_model_of_ones_own_trains_from_scratch(settings):
    texts, y = _reviews()
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0, **settings).fit(texts, y)
    assert clf.pretrained_weights_ is None and type(clf.tokenizer_).__name__ == "WordPieceTokenizer"
    assert clf.resolved_params_["lr"] == 3e-4  # the from-scratch text recipe


def test_settings_the_weights_take_apply_to_them():
    texts, y = _reviews()
    clf = TabFormerClassifier(tokenizer__max_length=16, encoder__dropout=0.2, max_epochs=1, verbose=0).fit(texts, y)
    assert clf.pretrained_weights_ is not None
    assert clf.tokenizer_.max_length == 16 and clf.module_.encoder.config["dropout"] == 0.2
    assert clf.tokenize(texts[:2])["input_ids"].shape[1] <= 16
    # one they cannot take says where the weights came from, and how to train from scratch
    with pytest.raises(ValueError, match=r"exceeds the 512 positions.*by default; tokenizer='wordpiece'"):
        TabFormerClassifier(tokenizer__max_length=1000, max_epochs=1, verbose=0).fit(texts, y)
    scratch = TabFormerClassifier(tokenizer="wordpiece", tokenizer__max_length=1000, max_epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"longer than the encoder's 512 positions.*encoder__max_length=1000"):
        scratch.set_params(**TINY).fit(texts, y)  # from scratch, the encoder's positions must hold the texts too
    assert scratch.set_params(encoder__max_length=1000).fit(texts, y).tokenizer_.max_length == 1000


def test_other_inputs_and_estimators_keep_their_recipes(table, monkeypatch):
    X, y = table
    assert TabFormerClassifier(max_epochs=1, verbose=0).fit(X, y).pretrained_weights_ is None
    three_texts = pd.DataFrame({c: _reviews(seed=s)[0] for s, c in enumerate("abc")})
    assert not _text_recipes.wants_text_weights(TabFormerClassifier(), three_texts)  # a mixed frame
    # without the package, texts train from scratch
    monkeypatch.setattr(_text_recipes, "text_weights_available", lambda: False)
    texts, labels = _reviews()
    assert TabFormerClassifier(max_epochs=1, verbose=0).fit(texts, labels).pretrained_weights_ is None
    assert TabFormerTagger(max_epochs=1, verbose=0).fit(*_sentences()).pretrained_weights_ is None


def _sentences():
    sentences = [["Anna", "lives", "in", "Rome"], ["Bob", "likes", "Oslo"], ["Carla", "left", "Paris", "today"]] * 8
    tags = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-LOC"], ["B-PER", "O", "B-LOC", "O"]] * 8
    return sentences, tags


def test_the_tagger_fine_tunes_the_weights_with_its_pretrained_recipe():
    sentences, tags = _sentences()
    tagger = TabFormerTagger(max_epochs=2, verbose=0, random_state=0).fit(sentences, tags)
    assert tagger.pretrained_weights_ is not None and tagger.module_.encoder.d_model == 384
    assert (tagger.resolved_params_["lr"], tagger.resolved_params_["lr_schedule"]) == (1e-4, "cosine")  # "tagger, pretrained"
    assert [len(t) for t in tagger.predict(sentences[:3])] == [4, 3, 4]
    scratch = TabFormerTagger(tokenizer="wordpiece", max_epochs=1, verbose=0).fit(sentences, tags)
    assert scratch.pretrained_weights_ is None and not scratch.tokenizer_.lowercase  # the cased from-scratch recipe


def test_a_saved_model_loads_without_reading_the_weights_again(tmp_path, monkeypatch):
    texts, y = _reviews()
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(texts, y)
    clf.save(tmp_path / "model")

    def absent(folder):
        raise AssertionError(f"load read the default weights at {folder}")

    monkeypatch.setattr(_text_recipes, "default_text_weights", absent)
    back = load(tmp_path / "model")
    np.testing.assert_array_equal(back.predict_proba(texts), clf.predict_proba(texts))
    assert back.pretrained_weights_ == clf.pretrained_weights_


def test_freezing_the_default_weights_is_a_linear_probe():
    texts, y = _reviews()
    clf = TabFormerClassifier(freeze_encoder=True, freeze_embedder=True, max_epochs=1, verbose=0).fit(texts, y)
    trainable = {name for name, p in clf.module_.named_parameters() if p.requires_grad}
    assert trainable and all(name.startswith("head.") for name in trainable)


def test_small_text_sets_fine_tune_for_at_least_300_steps():
    from tabformer.estimators._text_finetune import pretrained_text_epochs

    # 930 icon names at batch 32: 27 steps an epoch, so 10 epochs (the cap); 2,192 names: 5; 10,000 texts: BERT's 3
    assert [pretrained_text_epochs(n, 32) for n in (930, 2192, 10_000)] == [10, 5, 3]
    assert pretrained_text_epochs(2192, 64) == 10 and pretrained_text_epochs(100_000, 8) == 3
    assert pretrained_text_epochs(930, np.int64(32)) == 10 and pretrained_text_epochs(930, -1) == 3  # -1: one step an epoch
    texts, y = _reviews()
    clf = TabFormerClassifier(verbose=0, random_state=0, patience=None, max_epochs="auto")
    clf.set_params(max_epochs=1).fit(texts, y)  # the user's epochs win
    assert clf.resolved_params_["max_epochs"] == 1
    from tabformer.estimators._recipes import resolve_recipe

    resolved = resolve_recipe(TabFormerClassifier(), clf.tokenizer_, texts, len(texts), pretrained=True)
    assert resolved["max_epochs"] == 10 and resolved["batch_size"] == 32
    resolved = resolve_recipe(TabFormerClassifier(batch_size=8), clf.tokenizer_, texts * 200, 9600, pretrained=True)
    assert resolved["max_epochs"] == 3  # 1,080 steps an epoch
