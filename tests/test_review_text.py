"""Text inputs as a review fed them (stop 37): each case read wrong, crashed or misled before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.cli import main
from tabformer.tokenizers import WordPieceTokenizer

SMALL = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1, verbose=0, random_state=0)
TEXT = dict(SMALL, tokenizer="wordpiece", tokenizer__vocab_size=100)


def test_a_trained_vocabulary_splits_runs_longer_than_100_characters():
    """BERT's limit of 100 characters a word read every such run (DNA, Thai, kana) as one [UNK]."""
    rng = np.random.default_rng(0)
    texts = ["".join(rng.choice(list("ACT"), 120)) for _ in range(40)]
    tok = WordPieceTokenizer(vocab_size=120).fit(texts)
    ids = tok.transform(texts)["input_ids"]
    assert not (ids == tok.convert_tokens_to_ids(["[UNK]"])[0]).any()
    assert len({tuple(row) for row in ids}) == 40


def test_a_vocab_file_with_a_repeated_token_or_a_byte_order_mark(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bad", "film", "good", "the", "plot"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lists the token 'the' twice \(lines 6 and 10\)"):
        WordPieceTokenizer(vocab_file=str(tmp_path / "vocab.txt")).fit(["the film"])
    (tmp_path / "vocab.txt").write_text("\n".join(tokens[:-2]) + "\n", encoding="utf-8-sig")
    tok = WordPieceTokenizer(vocab_file=str(tmp_path / "vocab.txt")).fit(["the film"])
    assert tok.convert_ids_to_tokens([0]) == ["[PAD]"]


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
def test_a_vocab_files_folder_adds_the_tokens_its_tokenizer_config_adds(tmp_path):
    """added_tokens_decoder beside a vocab.txt was ignored: "<ent>" (id 12) read as "< e ##n ##t >"."""
    import json

    tokens = ["the", "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "film", "<", ">", "e", "##n", "##t"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    flags = dict(lstrip=False, rstrip=False, single_word=False, normalized=False)

    def config(decoder):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder}))

    config({"1": dict(flags, content="[PAD]", special=True), "12": dict(flags, content="<ent>", special=True)})
    tok = WordPieceTokenizer(vocab_file=str(tmp_path)).fit(["x"])
    assert tok.vocab_size_ == 13
    for text in ["the<ent>film", "the <ent> film"]:
        ids = tok.transform([text])["input_ids"][0]
        assert tok.source_ids_[ids].tolist() == [0, 12, 6, 4], text  # the file's ids, its [SEP] closing
    assert 0 not in tok.transform(["the [PAD] film"])["input_ids"][0]  # the five stay text when typed, as before
    config({"13": dict(flags, content="<ent>", special=True)})
    with pytest.raises(ValueError, match=r"'<ent>' at id 13 leaves ids 12\.\.12 empty"):
        WordPieceTokenizer(vocab_file=str(tmp_path / "vocab.txt")).fit(["x"])
    config({"6": dict(flags, content="<ent>", special=True)})
    with pytest.raises(ValueError, match=r"puts '<ent>' at id 6, which is 'film' in"):
        WordPieceTokenizer(vocab_file=str(tmp_path)).fit(["x"])


def test_one_text_column_named_by_a_string_is_one_column_not_its_letters():
    X = pd.DataFrame({"ab": ["good film", "bad plot"] * 10, "a": ["x"] * 20, "b": ["y"] * 20})
    tok = WordPieceTokenizer(vocab_size=60, text_columns="ab").fit(X)
    assert tok.n_features_in_ == 1 and list(tok.feature_names_in_) == ["ab"]


def test_a_text_pair_fitted_on_an_array_has_no_feature_names():
    pairs = np.array([["is it red", "yes"], ["how big", "large"]] * 10, dtype=object)
    clf = TabFormerClassifier(**TEXT).fit(pairs, [1, 0] * 10)
    assert not hasattr(clf, "feature_names_in_")
    frame = pd.DataFrame(pairs, columns=["premise", "hypothesis"])
    np.testing.assert_allclose(clf.predict_proba(frame), clf.predict_proba(pairs), atol=1e-6)


def test_texts_whose_first_value_is_pd_na_are_named_as_missing_text():
    texts = pd.Series([pd.NA, "good film", "bad plot"] * 10, dtype="string")
    with pytest.raises(ValueError, match=r"missing text \(None/NaN\) at row\(s\) \[0, 3"):
        TabFormerClassifier(**SMALL).fit(texts, [1, 0, 1] * 10)  # tokenizer="auto" reads them as texts


def test_masked_token_pretraining_masks_a_token_of_every_text_and_refuses_texts_without_words():
    """Short texts often drew no mask: such a holdout scored 0 and early stopping kept an untrained epoch."""
    settings = dict(SMALL, objective="mlm", batch_size=4, tokenizer__vocab_size=100, lr_schedule=None)
    three = TabFormerPretrainer(**dict(settings, max_epochs=3)).fit(["good", "bad", "fine", "ok"] * 25)
    assert all(loss > 0 for loss in three.history_[:, "valid_loss"])
    assert three.score(["good"]) < 0
    with pytest.raises(ValueError, match="masked-token pretraining needs words"):
        TabFormerPretrainer(**settings).fit(["", "\u200b"] * 20)


def test_explain_names_each_text_of_a_pair_by_its_column():
    df = pd.DataFrame({"question": ["is it good", "is it bad"] * 10, "answer": ["yes it is", "no it is not"] * 10})
    clf = TabFormerClassifier(**TEXT).fit(df, [1, 0] * 10)
    tokens = clf.explain(df.iloc[:1])
    assert list(tokens["column"]) == ["question"] * 4 + ["answer"] * 4
    assert list(clf.explain(df.iloc[:1], level="column")["column"]) == ["question", "answer"]


def test_the_cli_keeps_blank_lines_of_a_text_file_as_rows(tmp_path, capsys):
    pd.DataFrame({"review": ["good film", "bad plot"] * 20, "label": ["pos", "neg"] * 20}).to_csv(
        tmp_path / "train.csv", index=False
    )
    args = ["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "m"), "--quiet"]
    assert main([*args, "--set", "tokenizer=wordpiece", "--set", "max_epochs=1", "--set", "encoder__d_model=16"]) == 0
    (tmp_path / "new.txt").write_text("good film\n\nbad plot\n\nawful end\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "new.txt")]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 5


def test_tokens_added_past_the_models_embedding_rows_are_left_out_with_a_warning(tmp_path):
    """add_tokens without resize_token_embeddings: added ids past config.json's vocab_size have no row.
    They were read as text until added_tokens_decoder was read; then the weights loader refused the folder."""
    import json

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "<", ">", "e", "##n", "##t"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 12}))
    decoder = {"12": {"content": "<ent>", "special": True}, "13": {"content": "zz", "special": False}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder}))
    message = r"adds \['<ent>', 'zz'\] at ids 12\.\.13, past the model's 12 word-embedding rows .* read as ordinary text"
    with pytest.warns(UserWarning, match=message):
        tok = WordPieceTokenizer(vocab_file=str(tmp_path)).fit(["x"])
    assert tok.vocab_size_ == 12
    ids = tok.transform(["the <ent> film"])["input_ids"][0]
    assert tok.source_ids_[ids].tolist() == [5, 7, 9, 10, 11, 8, 6, 3]  # "< e ##n ##t >", as before
    decoder["15"] = decoder.pop("13")  # a gap stays malformed, past the rows too
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder}))
    with pytest.raises(ValueError, match=r"'zz' at id 15 leaves ids 13\.\.14 empty"):
        WordPieceTokenizer(vocab_file=str(tmp_path)).fit(["x"])
