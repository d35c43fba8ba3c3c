"""Explanations and plots as a review checked them (stop 41): each test failed, or answered wrong, before its fix."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY, make_table

from tabformer import TabFormerClassifier
from tabformer.inspection import aggregate_subwords, attention_map, explain, modality_ablation
from tabformer.tokenizers import MixedTokenizer, SentenceTokenizer, TabularTokenizer, WordPieceTokenizer

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from tabformer import plot  # noqa: E402

WORDS = ["red", "blue", "green", "wool", "silk", "hat", "shirt", "scarf", "big", "small", "old", "new"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_column_ablation_is_filled_when_two_sub_tokenizers_share_a_kind():
    # Two text columns routed to two WordPiece tokenizers: modality_ablation names each modality after its
    # sub-tokenizer ("t1", "t2"), and explain(level="column", y=...) mapped drops by kind ("text"): NaN.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    X = pd.DataFrame(
        {
            "title": [" ".join(rng.choice(WORDS, 3)) for _ in y],
            "notes": [" ".join(rng.choice(WORDS, 2)) + (" good" if t else " poor") for t in y],
            "price": rng.normal(size=len(y)),
        }
    )
    text = dict(vocab_size=60, min_frequency=1)
    tokenizer = MixedTokenizer(
        [
            ("t1", WordPieceTokenizer(**text), ["title"]),
            ("t2", WordPieceTokenizer(**text), ["notes"]),
            ("tab", TabularTokenizer(), ["price"]),
        ]
    )
    clf = TabFormerClassifier(tokenizer=tokenizer, **{**TINY, "max_epochs": 4, "lr": 3e-3, "random_state": 0}).fit(X, y)
    drops = modality_ablation(clf, X, y).set_index("modality")["drop"]
    columns = explain(clf, X, level="column", y=y, layer=0)
    assert not columns["ablation"].isna().any()
    by_column = columns.groupby("column")["ablation"].first()
    assert by_column["title"] == drops["t1"] and by_column["notes"] == drops["t2"] and by_column["price"] == drops["table"]


def test_history_marks_the_epoch_the_model_kept():
    # Without early stopping (patience=None) the model ends with its last epoch's weights; history drew its
    # dotted line at the lowest valid_loss (epoch 5 here) as if that epoch's model had been kept.
    X, y = make_table(n=200)
    settings = {**TINY, "max_epochs": 6, "validation_fraction": 0.25, "lr": 5e-2, "random_state": 1}
    clf = TabFormerClassifier(ensemble_size=1, **settings, patience=None).fit(X, y)
    losses = clf.history_[:, "valid_loss"]
    assert int(np.argmin(losses)) != len(losses) - 1  # the best validation epoch is not the last one
    fig, ax = plt.subplots()
    plot.history(clf, ax=ax)
    marks = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 6 and "epoch 6" in marks[0].get_label()
    assert plt.get_fignums() == [fig.number]  # drawn on the given axes, no figure of its own


def test_text_attention_draws_unknown_words_too():
    # A word the vocabulary lacks (an emoji) is one [UNK] token with its own attention; the text view left it
    # out with [SEP], so the drawn sentence lost the word (and the attention it got) without a sign.
    texts = ["a good fun film", "a dull bad film", "good good fun", "bad dull boring"] * 10
    clf = TabFormerClassifier(
        **{**TINY, "max_epochs": 1, "random_state": 0}, tokenizer="wordpiece", tokenizer__vocab_size=60
    ).fit(texts, ["pos", "neg", "pos", "neg"] * 10)
    labels = explain(clf, ["good \U0001f600 film"])["label"].tolist()
    assert labels == ["good", "[UNK]", "film", "[SEP]"]
    ax = plot.attention(clf, "good \U0001f600 film")
    assert [text.get_text() for text in ax.texts] == ["good", "[UNK]", "film"]


def test_layer_out_of_range_or_not_an_int_is_refused_with_the_range():
    # attention_map indexed the list of maps directly: layer=1 of a 1-layer model raised a bare IndexError, "all"
    # a TypeError, and True read layer 1; explain took True for 1 as well.
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (32, 8, 8))
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 1, "random_state": 0}, tokenizer__patch_size=4).fit(
        images, rng.integers(0, 2, 32)
    )
    assert attention_map(clf, images[:2], layer=-1).shape == (2, 2, 2)
    for layer in (1, -2, "all", True, 0.0):
        with pytest.raises(ValueError, match=r"layer must be 'mean' or an int in \[-1, 0\]"):
            attention_map(clf, images[:2], layer=layer)
    with pytest.raises(ValueError, match=r"layer must be 'mean' or an int in \[-1, 0\]"):
        plot.attention(clf, images[0], layer=1)
    X, y = make_table(n=60)
    deep = TabFormerClassifier(**{**TINY, "max_epochs": 1, "encoder__n_layers": 2}).fit(X, y)
    with pytest.raises(ValueError, match=r"layer must be 'all' or an int in \[-2, 1\], got True"):
        explain(deep, X.iloc[:2], layer=True)


def test_a_sentence_tokenizers_leading_token_is_labelled_and_the_words_keep_their_own_weights(tmp_path):
    # SentenceTokenizer's embedder puts a [SENTENCE] token before the words. Read on its own (not inside a mixed
    # frame), explain labelled positions from 0 with the words: each word got its left neighbour's weight, and the
    # last real token's weight was dropped.
    texts = ["a good fun film", "a dull bad film", "good good fun", "bad dull boring"] * 10
    words = WordPieceTokenizer(vocab_size=60, min_frequency=1).fit(texts)
    (tmp_path / "tokenizer.json").write_text(words.tokenizer_json_)
    stem = dict(d_model=16, n_layers=1, n_heads=2, d_ff=32, positions="learned", max_length=64, embedding_norm=True)
    tokenizer = SentenceTokenizer(stem_folder=str(tmp_path), encoder_config=stem, vocab_size=60, min_frequency=1)
    clf = TabFormerClassifier(tokenizer=tokenizer, **{**TINY, "max_epochs": 1, "random_state": 0}).fit(texts, ["p", "n"] * 20)
    rows = ["a good fun film", "bad"]
    frame = explain(clf, rows, layer=0, query="cls")
    assert frame.loc[frame["row"] == 1, "label"].tolist() == ["[SENTENCE]", "bad", "[SEP]"]
    _, maps = clf.forward_features(clf.tokenize(rows), return_attention=True)
    cls = maps[0].mean(axis=1)[:, 0, 1:]
    for row, tokens in frame.groupby("row"):
        np.testing.assert_allclose(tokens["attention"], cls[row, tokens["token"]], rtol=1e-6)
        assert tokens["attention"].sum() == pytest.approx(1 - maps[0].mean(axis=1)[row, 0, 0], abs=1e-5)


def test_an_upsampled_attention_map_has_the_size_of_the_images_given():
    # Images the tokenizer resizes (image_size set; the default stem upscales anything under 64 px) got a map of
    # the model's size: 16x16 over an 8x8 image, so the overlay the docs show covered the wrong pixels.
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (32, 8, 8))
    settings = {**TINY, "max_epochs": 1, "random_state": 0}
    clf = TabFormerClassifier(**settings, tokenizer__patch_size=4, tokenizer__image_size=16).fit(images, rng.integers(0, 2, 32))
    grid = attention_map(clf, images[:3])
    assert grid.shape == (3, 4, 4)
    upsampled = attention_map(clf, images[:3], upsample=True)
    assert upsampled.shape == (3, 8, 8)
    assert attention_map(clf, list(images[:2]), upsample=True).shape == (2, 8, 8)
    # the top-left patch of the model's 16x16 image is the top-left 2x2 pixels of the 8x8 one
    assert upsampled[:, :2, :2].mean() == pytest.approx(grid[:, 0, 0].mean(), rel=0.2)
    ax = plot.attention(clf, images[0])
    assert ax.images[0].get_extent() == ax.images[1].get_extent()


def test_a_one_word_text_of_a_byte_level_bpe_model_stays_one_word():
    # Byte-level BPE (RoBERTa, GPT-2) marks a word's start with "Ġ" on every word but the first. A call whose
    # texts are all one word has no marker at all: aggregate_subwords read the frame as WordPiece, where a piece
    # without "##" opens a word, and split "unbelievable" into its three pieces.
    frame = pd.DataFrame(
        {
            "row": [0, 0, 0, 0, 1, 1],
            "layer": 0,
            "token": [0, 1, 2, 3, 0, 1],
            "column": "text",
            "label": ["un", "bel", "ievable", "</s>", "ok", "</s>"],
            "attention": [0.1, 0.2, 0.3, 0.1, 0.5, 0.2],
        }
    )
    words = aggregate_subwords(frame)
    assert words["label"].tolist() == ["unbelievable", "</s>", "ok", "</s>"]
    assert words["attention"].tolist() == pytest.approx([0.6, 0.1, 0.5, 0.2])
    # WordPiece frames ([SEP]) keep reading "##" continuations
    wordpiece = frame.assign(label=["un", "##bel", "film", "[SEP]", "ok", "[SEP]"])
    assert aggregate_subwords(wordpiece)["label"].tolist() == ["unbel", "film", "[SEP]", "ok", "[SEP]"]


def test_explain_reads_the_queries_a_mean_pooling_head_averages():
    # A mean-pooling head (the text recipes') averages the outputs of CLS and every real token; explain reported
    # CLS's attention row alone, one query of 1+T and not the one the prediction reads.
    texts = ["a good film", "bad", "a very very good and moving film indeed", "awful awful"] * 10
    settings = dict(TINY, max_epochs=2, random_state=0, head__pooling="mean")
    clf = TabFormerClassifier(tokenizer="wordpiece", tokenizer__vocab_size=60, tokenizer__min_frequency=1, **settings)
    clf.fit(texts, [1, 0, 1, 0] * 10)
    inputs = {key: torch.as_tensor(value) for key, value in clf.tokenize(texts[:4]).items()}
    clf.module_.eval()
    with torch.no_grad():
        for layer in clf.module_.encoder.layers:  # 2 tiny epochs leave attention near uniform: sharpen it
            layer.attention.query.weight.mul_(30)
        (_, maps), mask = clf.module_.encode(True, **inputs)  # the mask mean pooling itself reads
    pooled = torch.cat([torch.ones_like(mask[:, :1]), mask], dim=1).float()  # CLS and the real tokens
    last = maps[-1].mean(dim=1)
    expected = ((last * pooled[:, :, None]).sum(dim=1) / pooled.sum(dim=1, keepdim=True))[:, 1:].numpy()
    frame = explain(clf, texts[:4], layer=-1)
    assert (frame.groupby("row").size().to_numpy() == mask.sum(dim=1).numpy()).all()  # "bad" is padded in the batch
    for row, tokens in frame.groupby("row"):
        np.testing.assert_allclose(tokens["attention"], expected[row, tokens["token"]], atol=1e-6)
        assert not np.allclose(tokens["attention"], last[row, 0, 1:][tokens["token"].to_numpy()].numpy(), atol=1e-4)
    by_cls = explain(clf, texts[:4], layer=-1, query="cls")
    cls_row = [last[row, 0, 1 + token] for row, token in zip(by_cls["row"], by_cls["token"])]
    np.testing.assert_allclose(by_cls["attention"], cls_row, atol=1e-6)
    with pytest.raises(ValueError, match="query must be 'auto', 'cls' or 'mean', got 'last'"):
        explain(clf, texts[:1], query="last")


def test_an_attention_map_follows_the_heads_pooling():
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (32, 8, 8))
    settings = {**TINY, "max_epochs": 1, "random_state": 0, "tokenizer__patch_size": 4}
    mean_head = TabFormerClassifier(**settings, head__pooling="mean").fit(images, rng.integers(0, 2, 32))
    _, maps = mean_head.forward_features(mean_head.tokenize(images[:3]), return_attention=True)
    heads = maps[-1].mean(axis=1)  # every patch is real: CLS and all 4 patches are pooled
    np.testing.assert_allclose(attention_map(mean_head, images[:3]).reshape(3, -1), heads[:, :, 1:].mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(attention_map(mean_head, images[:3], query="cls").reshape(3, -1), heads[:, 0, 1:], atol=1e-6)
