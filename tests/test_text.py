"""WordPiece tokenizer and text classification on tiny data."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from tabformer import TabFormerClassifier
from tabformer.inspection import aggregate_subwords
from tabformer.tokenizers import WordPieceTokenizer, make_tokenizer
from tabformer.tokenizers.base import CLS, MASK, PAD, SEP, UNK

POS = [
    "a wonderful moving film",
    "great acting and a superb script",
    "i loved every minute",
    "brilliant and funny",
    "a delight from start to finish",
    "warm clever and wonderful",
]
NEG = [
    "a dull boring mess",
    "terrible acting and an awful script",
    "i hated every minute",
    "tedious and stupid",
    "a disaster from start to finish",
    "cold lazy and boring",
]
TEXTS = POS * 3 + NEG * 3
LABELS = ["fresh"] * 18 + ["rotten"] * 18

SMALL = dict(
    tokenizer__vocab_size=120,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    encoder__attention_dropout=0.0,
    lr=5e-3,
    batch_size=12,
    validation_fraction=None,
    verbose=0,
    random_state=0,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


@pytest.fixture(scope="module")
def tok():
    return WordPieceTokenizer(vocab_size=120, min_frequency=1, max_length=8).fit(TEXTS)


def test_specials_have_shared_ids(tok):
    assert tok.convert_ids_to_tokens([PAD, UNK, CLS, SEP, MASK]) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 5 < tok.vocab_size_ <= 120


def test_transform_truncates_pads_and_ends_with_sep(tok):
    long = "great " * 40
    batch = tok.transform(["i loved it", long, ""])
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids.shape == (3, 7)  # max_length 8 minus the encoder's CLS
    assert ids.dtype == np.int64 and mask.dtype == bool
    assert mask.sum(1).tolist()[1:] == [7, 1]
    assert ids[1, -1] == SEP and ids[2, 0] == SEP  # the empty text is [SEP] alone
    assert (ids[~mask] == PAD).all()
    assert (batch["token_type_ids"] == 0).all()
    # Padding only up to the longest row of *this* call
    short = tok.transform(["great"])
    assert short["attention_mask"].all() and short["input_ids"].shape[1] < 7


def test_unknown_characters_become_unk(tok):
    ids = tok.transform(["愛"])["input_ids"][0]
    assert ids.tolist() == [UNK, SEP]


def test_missing_text_raises_naming_rows(tok):
    with pytest.raises(ValueError, match=r"row\(s\) \[1\]"):
        tok.transform(["fine", None])
    with pytest.raises(ValueError, match="single str"):
        tok.transform("not a list")
    with pytest.raises(ValueError, match="must hold str"):
        tok.transform(["ok", 3])


def test_accepts_series_and_dataframe_and_pairs():
    tok = WordPieceTokenizer(vocab_size=120, min_frequency=1).fit(pd.Series(TEXTS))
    assert tok.n_features_in_ == 1
    frame = pd.DataFrame({"a": TEXTS, "b": TEXTS[::-1]})
    pair = WordPieceTokenizer(vocab_size=120, min_frequency=1, max_length=10).fit(frame)
    assert list(pair.feature_names_in_) == ["a", "b"]
    batch = pair.transform(frame.iloc[:2])
    types, ids, mask = batch["token_type_ids"][0], batch["input_ids"][0], batch["attention_mask"][0]
    seps = np.flatnonzero(ids == SEP)
    assert len(seps) == 2 and seps[1] == mask.sum() - 1
    assert (types[: seps[0] + 1] == 0).all() and (types[seps[0] + 1 : seps[1] + 1] == 1).all()
    assert mask.sum() <= 9
    with pytest.raises(ValueError, match="fitted on 2"):
        pair.transform(TEXTS[:2])
    with pytest.raises(ValueError, match="one text column or two"):
        WordPieceTokenizer().fit(pd.DataFrame({"a": ["x"], "b": ["y"], "c": ["z"]}))


def test_vocab_file_remaps_specials(tmp_path):
    tokens = ["[PAD]", "hello", "world", "##s", "[unused]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cat"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n")
    tok = WordPieceTokenizer(vocab_file=str(tmp_path / "vocab.txt")).fit(["ignored"])
    assert tok.vocab_size_ == len(tokens)
    assert tok.convert_ids_to_tokens(range(5)) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    ids = tok.transform(["Hello worlds cat dog"])["input_ids"][0]
    assert tok.convert_ids_to_tokens(ids) == ["hello", "world", "##s", "cat", "[UNK]", "[SEP]"]
    # source_ids_ maps tabformer ids back to vocab.txt lines
    assert [tokens[i] for i in tok.source_ids_[ids]] == ["hello", "world", "##s", "cat", "[UNK]", "[SEP]"]


def test_pickle_and_clone_keep_or_drop_the_vocabulary(tok):
    restored = pickle.loads(pickle.dumps(tok))
    np.testing.assert_array_equal(restored.transform(POS)["input_ids"], tok.transform(POS)["input_ids"])
    assert not hasattr(clone(tok), "vocab_size_")


def test_auto_picks_wordpiece_for_text():
    assert isinstance(make_tokenizer("auto", TEXTS), WordPieceTokenizer)
    assert isinstance(make_tokenizer("auto", pd.Series(TEXTS)), WordPieceTokenizer)
    assert isinstance(make_tokenizer("auto", [["a", "b"], ["c"]]), WordPieceTokenizer)
    assert not isinstance(make_tokenizer("auto", pd.DataFrame({"x": [1.0, 2.0]})), WordPieceTokenizer)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_classifier_learns_toy_sentiment(positions):
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=40, encoder__positions=positions, **SMALL).fit(TEXTS, LABELS)
    assert clf.module_.encoder.config["positions"] == positions
    accuracy = (clf.predict(["a wonderful film", "a boring mess"]) == ["fresh", "rotten"]).mean()
    assert (clf.predict(TEXTS) == np.array(LABELS)).mean() >= 0.9
    assert accuracy == 1.0
    assert clf.predict_proba(pd.Series(TEXTS[:3])).shape == (3, 2)


def test_padding_does_not_change_the_cls_embedding():
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, **SMALL).fit(TEXTS, LABELS)
    alone = clf.forward_features(["brilliant and funny"])
    padded = clf.forward_features(["brilliant and funny", "great acting and a superb script " * 3])[:1]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


def test_sentence_pairs_use_segments():
    frame = pd.DataFrame({"premise": TEXTS, "hypothesis": TEXTS[:18][::-1] + TEXTS[18:][::-1]})
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=15, **SMALL).fit(frame, LABELS)
    assert clf.n_features_in_ == 2 and list(clf.feature_names_in_) == ["premise", "hypothesis"]
    assert (clf.predict(frame) == np.array(LABELS)).mean() >= 0.9
    # segment embeddings take part: swapping the segment ids changes the output
    batch = clf.tokenizer_.transform(frame.iloc[:4])
    flipped = dict(batch, token_type_ids=np.where(batch["attention_mask"], 1 - batch["token_type_ids"], 0))
    assert not np.allclose(clf.forward_features(batch), clf.forward_features(flipped))


def test_explain_labels_subwords_and_aggregates_words():
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=2, **SMALL).fit(TEXTS, LABELS)
    frame = clf.explain(["a wonderful film", "boring"])
    first = frame[(frame.row == 0) & (frame.layer == 0)]
    assert "".join(first.label).replace("##", "").endswith("[SEP]")
    assert set(frame.layer) == {0}
    totals = frame.groupby(["row", "layer"]).attention.sum()
    assert (totals <= 1 + 1e-5).all() and (totals > 0).all()
    words = aggregate_subwords(frame)
    assert words[words.row == 0].label.tolist() == ["a", "wonderful", "film", "[SEP]"]
    np.testing.assert_allclose(words.groupby("row").attention.sum(), frame.groupby("row").attention.sum(), rtol=1e-6)


def test_fitted_classifier_pickles_with_vocabulary():
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, **SMALL).fit(TEXTS, LABELS)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(restored.predict_proba(TEXTS), clf.predict_proba(TEXTS), atol=1e-6)


def test_none_in_training_texts_is_a_clear_error():
    with pytest.raises(ValueError, match="missing text"):
        TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, **SMALL).fit(TEXTS[:-1] + [None], LABELS)


def test_trimming_only_while_training(tok):
    embedder = tok.build_embedder(8)
    batch = {k: torch.as_tensor(v) for k, v in tok.transform(["great", "great acting and a superb"]).items()}
    short = {k: v[:1] for k, v in batch.items()}
    assert embedder.train()(**short)[0].shape[1] == int(short["attention_mask"].sum()) < batch["input_ids"].shape[1]
    assert embedder.eval()(**short)[0].shape[1] == batch["input_ids"].shape[1]


def test_grid_search_over_text_classifier():
    from sklearn.model_selection import GridSearchCV

    params = {k: v for k, v in SMALL.items() if k != "encoder__n_layers"}
    search = GridSearchCV(
        TabFormerClassifier(tokenizer="wordpiece", max_epochs=2, **params),
        {"encoder__n_layers": [1, 2], "tokenizer__max_length": [6, 16]},
        cv=2,
        error_score="raise",
    ).fit(TEXTS, LABELS)
    assert set(search.cv_results_["param_encoder__n_layers"]) == {1, 2}
    best = search.best_estimator_
    assert best.tokenizer_.max_length == best.get_params()["tokenizer__max_length"]
    assert best.tokenizer_.transform(TEXTS)["input_ids"].shape[1] <= best.tokenizer_.max_length - 1


def test_mean_pooling_head_ignores_padding():
    import torch

    from tabformer.nn.heads import ClassificationHead

    head = ClassificationHead(4, 2, pooling="mean")
    hidden = torch.randn(2, 4, 4)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    padded = hidden.clone()
    padded[0, 3] = 1e3  # a padding position: must not move row 0
    assert torch.allclose(head(hidden, mask)[0], head(padded, mask)[0])
    assert torch.allclose(head(hidden, mask)[0], head.net(hidden[0, :3].mean(dim=0)))
    clf = TabFormerClassifier(
        tokenizer="wordpiece",
        head__pooling="mean",
        max_epochs=2,
        verbose=0,
        random_state=0,
        tokenizer__vocab_size=60,
        tokenizer__min_frequency=1,
        encoder__d_model=16,
        encoder__n_heads=2,
        encoder__n_layers=1,
    )
    texts = ["a good film", "a bad film", "good fun", "bad plot"] * 8
    clf.fit(texts, [1, 0, 1, 0] * 8)
    assert clf.predict_proba(texts).shape == (32, 2)
    with pytest.raises(ValueError, match="head pooling must be 'cls' or 'mean'"):
        ClassificationHead(4, 2, pooling="max")


def test_token_dropout_masks_only_real_words_while_training(tok):
    tok = clone(tok).set_params(token_dropout=0.5).fit(TEXTS)
    embedder = tok.build_embedder(8)
    batch = {k: torch.as_tensor(v) for k, v in tok.transform(TEXTS).items()}
    seen = []
    embedder.word_embeddings.register_forward_hook(lambda module, args, out: seen.append(args[0].clone()))
    torch.manual_seed(0)
    embedder.train()(**batch)
    ids, real = batch["input_ids"][:, : seen[0].shape[1]], batch["attention_mask"][:, : seen[0].shape[1]].bool()
    changed = seen[0] != ids
    assert (seen[0][changed] == MASK).all()
    words = real & (ids > MASK)
    assert not changed[~words].any()  # [SEP] and padding untouched
    assert 0.35 < changed[words].float().mean() < 0.65
    embedder.eval()(**batch)
    assert torch.equal(seen[1], batch["input_ids"])


def test_token_dropout_is_routed_and_validated():
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, tokenizer__token_dropout=0.2, **SMALL).fit(TEXTS, LABELS)
    assert clf.module_.embedder.token_dropout == 0.2
    with pytest.raises(ValueError, match="token_dropout must be"):
        TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, tokenizer__token_dropout=1.0, **SMALL).fit(TEXTS, LABELS)


def test_saved_vocabulary_reproduces_ids_and_renumbering_is_canonical(tok, tmp_path):
    path = tok.save_vocabulary(tmp_path / "vocab.txt")
    again = WordPieceTokenizer(vocab_file=path, max_length=8).fit(TEXTS)
    np.testing.assert_array_equal(again.transform(TEXTS)["input_ids"], tok.transform(TEXTS)["input_ids"])
    tokens = tok.convert_ids_to_tokens(range(tok.vocab_size_))
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and tokens[5:] == sorted(tokens[5:])


def test_fits_on_the_same_texts_give_the_same_vocabulary():
    # huggingface/tokenizers#1794: the trainer numbered "##c" pieces in hash-map order and
    # broke merge ties with those ids; 10 fits of these 300 reviews gave 10 vocabularies
    from tabformer.datasets import load_rotten_tomatoes

    texts = list(load_rotten_tomatoes()[0])[:300]
    vocabularies = {
        tuple(sorted(WordPieceTokenizer(vocab_size=1000).fit(texts)._backend_cache.get_vocab().items())) for _ in range(6)
    }
    assert len(vocabularies) == 1


def test_continuing_pieces_are_the_characters_that_can_follow_inside_a_word():
    from tabformer.tokenizers._vocab import continuing_pieces

    backend = WordPieceTokenizer()._new_backend()
    pieces = continuing_pieces(backend, ["Naïve café, OK!", "日本語のテキスト"])
    # lower-cased and accents stripped as the normalizer does; punctuation and CJK
    # ideographs are split off as words of their own, so they never continue one
    assert pieces == ["##a", "##c", "##e", "##f", "##i", "##k", "##n", "##o", "##v", "##の", "##キ", "##ス", "##テ", "##ト"]
    assert "##," not in pieces and "##日" not in pieces
    # after the fit they are ordinary tokens: a text holding "##e" is not one special token
    tokenizer = WordPieceTokenizer(vocab_size=60).fit(["naive cafe ok"] * 3)
    assert tokenizer._backend_cache.encode("x##e", add_special_tokens=False).tokens[:2] != ["x", "##e"]
