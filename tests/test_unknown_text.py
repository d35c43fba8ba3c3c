"""Texts the vocabulary does not hold read as [UNK]: warned, not silent (a review's find)."""

import warnings

import pytest

from tabformer.tokenizers import WordPieceTokenizer

ENGLISH = [f"the {w} was good and the service was {v}" for w in ("food", "room", "staff", "view") for v in ("fast", "slow")]
THAI = ["อาหารอร่อยมาก", "ห้องพักสะอาด บริการดี", "พนักงานสุภาพ"] * 3


@pytest.fixture(scope="module")
def english():
    return WordPieceTokenizer(vocab_size=200).fit(ENGLISH * 5)


def test_texts_of_a_script_the_vocabulary_lacks_warn_with_the_share_and_a_row(english):
    # Every Thai word was one [UNK]: the model read the same token for every review, silently.
    with pytest.warns(UserWarning, match=r"100% of the sub-words of the texts are \[UNK\].*row 0: 1 of 1.*tokenizer='wordpiece'"):
        batch = english.transform(THAI)
    assert set(batch["input_ids"][batch["attention_mask"]].tolist()) <= {1, 3}  # [UNK] and [SEP]: what it warns about


def test_texts_the_vocabulary_reads_and_a_few_unknown_words_do_not_warn(english):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        english.transform(ENGLISH)
        english.transform([*ENGLISH, "the food was good 😀"])  # one unknown piece among many


def test_a_classifier_fitted_on_english_warns_once_when_it_predicts_thai():
    from tabformer import TabFormerClassifier

    small = dict(tokenizer="wordpiece", max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, verbose=0)
    clf = TabFormerClassifier(**small).fit(ENGLISH * 5, ["a", "b"] * 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict_proba(THAI * 2000)  # 18,000 rows: predicted in chunks, warned once for the whole input
    unknown = [w for w in caught if "[UNK]" in str(w.message)]
    assert len(unknown) == 1, [str(w.message) for w in caught]
