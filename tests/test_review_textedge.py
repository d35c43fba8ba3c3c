"""Text and tagging inputs at their edges, as a review used them: each test failed, or answered wrong, before its fix."""

import warnings

import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from tabformer import TabFormerClassifier, TabFormerTagger

TINY = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    max_epochs=1,
    verbose=0,
    random_state=0,
    tokenizer="wordpiece",
    tokenizer__vocab_size=80,
)
SENTENCES = [["Alice", "visits", "Paris"], ["Bob", "stays", "home"]] * 4
TAGS = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"]] * 4


@pytest.fixture(scope="module")
def tagger():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # one epoch: the answers are not the point
        return TabFormerTagger(**TINY).fit(SENTENCES, TAGS)


def test_tagger_scores_a_one_column_frame_of_tags_as_fit_reads_it(tagger):
    # fit reads y given as a one-column DataFrame of tag lists; score read the frame's column
    # name as its one sentence: "y_true has 1 sentences but y_pred has 8".
    expected = tagger.score(SENTENCES, TAGS)
    assert tagger.score(SENTENCES, pd.DataFrame({"tags": TAGS})) == expected
    assert tagger.score(pd.DataFrame({"words": SENTENCES}), pd.DataFrame({"tags": TAGS})) == expected
    with pytest.raises(ValueError, match="sentence 0 has 3 words but 2 tags"):
        tagger.score(SENTENCES, [row[:2] for row in TAGS])


def test_texts_cut_to_max_length_are_counted_in_a_warning_at_fit_and_predict():
    # A text past tokenizer__max_length lost its end silently (the tagger warned of cut words, the
    # classifier did not): here 3 of 12 texts kept 15 of their 401 sub-words.
    texts = ["good film " * 200, "bad film", "good", "bad bad"] * 3
    labels = [1, 0, 1, 0] * 3
    with pytest.warns(UserWarning, match=r"3 of 12 texts are longer than max_length=16 sub-words .*the longest has 402"):
        clf = TabFormerClassifier(**TINY, tokenizer__max_length=16).fit(texts, labels)
    # predict reads its input in chunks: one warning for the whole input, not one per chunk.
    clf.inference_chunk_rows = 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(texts)
    cut = [str(w.message) for w in caught if "max_length=16" in str(w.message)]
    assert len(cut) == 1 and cut[0].startswith("texts longer than max_length=16 sub-words"), cut
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(texts[1:4])  # short texts: no warning
    pairs = pd.DataFrame({"q": ["is it good"] * 4, "a": ["yes " * 20, "no", "yes", "no"]})
    with pytest.warns(UserWarning, match=r"1 of 4 texts in column\(s\) \['q', 'a'\] are longer than max_length=16"):
        TabFormerClassifier(**TINY, tokenizer__max_length=16).fit(pairs, [1, 0, 1, 0])


def test_a_cut_sentence_is_counted_once_by_the_tagger_not_again_by_its_tokenizer(tagger):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tags = tagger.predict([["Alice"] + ["visits"] * 300])
    assert len(tags[0]) == 301
    assert [str(w.message)[:40] for w in caught] == ["1 of 1 sentences are longer than tokeniz"]


def test_a_pretrained_tokenizer_refuses_a_pair_without_room_for_both_texts(tmp_path):
    # WordPieceTokenizer refused max_length < 5 for pairs; a tokenizer.json read by PretrainedTextTokenizer
    # encoded the pair at max_length=4 as "[SEP] yes [SEP]": the question was cut to nothing, silently.
    from tabformer.tokenizers.pretrained_text import PretrainedTextTokenizer
    from tabformer.tokenizers.text import WordPieceTokenizer

    path = tmp_path / "tokenizer.json"
    path.write_text(WordPieceTokenizer(vocab_size=80, min_frequency=1).fit(["is it good", "yes very good"]).tokenizer_json_)
    pairs = pd.DataFrame({"q": ["is it good"], "a": ["yes very good"]})
    with pytest.raises(ValueError, match="max_length must be an int >= 5 for pairs"):
        PretrainedTextTokenizer(path, max_length=4).fit(pairs)
    assert PretrainedTextTokenizer(path, max_length=4).fit(pairs["q"]).n_features_in_ == 1  # one text: 4 is room enough
