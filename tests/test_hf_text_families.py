"""Every supported Hugging Face text family, random-init and tiny, matches ``transformers``.

Each test builds a small random checkpoint with ``transformers`` (a test-only dependency),
saves it with its fast tokenizer as ``save_pretrained`` does, loads the folder with
tabformer, and compares the last hidden states of real tokens within 1e-4 (eval mode).
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from tabformer.hub import FAMILIES, load_pretrained, load_text_folder  # noqa: E402
from tabformer.tokenizers import PretrainedTextTokenizer, WordPieceTokenizer  # noqa: E402

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "tabformer loads pretrained weights without the hub",
    "a short one",
    "Naive cafe owners in Zurich disagree, unsurprisingly.",
    "the dog sat on the mat and the cat sat on the dog",
]
SENTENCES = ["the quick fox sat on the mat", "a dog", "Zurich owners disagree about the hub!"]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48}


def _wordpiece_fast(lowercase=True):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    # Specials at BERT's own places would be too easy: put [CLS] etc. after some words.
    trainer = trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[PAD]", "the", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    backend.train_from_iterator(CORPUS * 3, trainer=trainer)
    cls, sep = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )


def _byte_level_bpe_fast():
    from tokenizers import ByteLevelBPETokenizer, processors

    backend = ByteLevelBPETokenizer()
    backend.train_from_iterator(CORPUS * 3, vocab_size=300, min_frequency=1, special_tokens=ROBERTA_SPECIALS)
    backend._tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>"))
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
    )


def _unigram_fast():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    backend = Tokenizer(models.Unigram())
    backend.normalizer = normalizers.NFKC()
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=150, special_tokens=ROBERTA_SPECIALS, unk_token="<unk>")
    backend.train_from_iterator(CORPUS * 3, trainer=trainer)
    backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")), ("<s>", 0))
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", cls_token="<s>", sep_token="</s>", mask_token="<mask>"
    )


def _config(model_type, vocab_size):
    if model_type == "xlm-roberta":
        return transformers.XLMRobertaConfig(
            vocab_size=vocab_size, max_position_embeddings=42, pad_token_id=1, type_vocab_size=1, **SIZES
        )
    if model_type == "distilbert":
        return transformers.DistilBertConfig(
            vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4, hidden_dim=48, max_position_embeddings=40
        )
    if model_type == "roberta":
        return transformers.RobertaConfig(
            vocab_size=vocab_size, max_position_embeddings=42, pad_token_id=1, type_vocab_size=1, **SIZES
        )
    if model_type.startswith("electra"):  # electra-small: 16-wide embeddings projected to the 32-wide layers
        width = 16 if model_type == "electra-small" else 32
        return transformers.ElectraConfig(vocab_size=vocab_size, embedding_size=width, max_position_embeddings=40, **SIZES)
    return transformers.BertConfig(vocab_size=vocab_size, max_position_embeddings=40, **SIZES)


def _save_model(model_type, folder, head=False):
    torch.manual_seed(0)
    makers = {"roberta": _byte_level_bpe_fast, "xlm-roberta": _unigram_fast}
    tokenizer = makers.get(model_type, _wordpiece_fast)()
    config = _config(model_type, len(tokenizer))
    if head and model_type.startswith("electra"):
        model = transformers.ElectraForPreTraining(config)
    elif head:
        model = transformers.AutoModelForSequenceClassification.from_config(config)
    else:
        model = transformers.AutoModel.from_config(config)
    with torch.no_grad():  # random LayerNorm affine parameters, so a swapped norm shows
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name:
                parameter.add_(0.3 * torch.randn_like(parameter))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model.eval(), tokenizer


def _reference(model, tokenizer, sentences):
    encoded = tokenizer(sentences, padding=True, return_tensors="pt")
    inputs = {key: encoded[key] for key in ("input_ids", "attention_mask")}
    base = getattr(model, model.base_model_prefix, model)
    with torch.no_grad():
        hidden = base(**inputs).last_hidden_state
    return hidden, encoded["attention_mask"].bool()


@pytest.mark.parametrize("model_type", ["bert", "roberta", "xlm-roberta", "distilbert", "electra", "electra-small"])
@pytest.mark.parametrize("head", [False, True], ids=["bare", "with-head"])
def test_family_matches_transformers(model_type, head, tmp_path):
    model, tokenizer = _save_model(model_type, tmp_path, head)
    reference, mask = _reference(model, tokenizer, SENTENCES)
    pretrained = load_text_folder(tmp_path)
    assert isinstance(pretrained.tokenizer, PretrainedTextTokenizer)
    batch = pretrained.tokenizer.transform(SENTENCES)
    # Same ids as the model's tokenizer after its CLS, once tabformer's renumbering is undone.
    source = pretrained.tokenizer.source_ids_
    for i, sentence in enumerate(SENTENCES):
        theirs = tokenizer(sentence)["input_ids"]
        assert source[batch["input_ids"][i][batch["attention_mask"][i]]].tolist() == theirs[1:]
    with torch.no_grad():
        hidden = pretrained(**{key: torch.as_tensor(value) for key, value in batch.items()})
    assert hidden.shape == reference.shape
    diff = (hidden - reference).abs()[mask]
    assert diff.max() < 1e-4, float(diff.max())
    assert reference[mask].abs().max() > 1e-2


def test_bert_with_vocab_txt_only(tmp_path):
    model, tokenizer = _save_model("bert", tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab))  # as BertTokenizer writes it
    reference, mask = _reference(model, tokenizer, SENTENCES)
    pretrained = load_text_folder(tmp_path)
    assert type(pretrained.tokenizer) is WordPieceTokenizer
    batch = pretrained.tokenizer.transform(SENTENCES)
    with torch.no_grad():
        hidden = pretrained(**{key: torch.as_tensor(value) for key, value in batch.items()})
    assert (hidden - reference).abs()[mask].max() < 1e-4


def test_roberta_with_vocab_json_and_merges_only(tmp_path):
    model, tokenizer = _save_model("roberta", tmp_path)
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    (tmp_path / "tokenizer.json").unlink()
    vocab = spec["model"]["vocab"]  # as RobertaTokenizer (slow) writes them
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    reference, mask = _reference(model, tokenizer, SENTENCES)
    pretrained = load_text_folder(tmp_path)
    batch = {key: torch.as_tensor(value) for key, value in pretrained.tokenizer.transform(SENTENCES).items()}
    with torch.no_grad():
        assert (pretrained(**batch) - reference).abs()[mask].max() < 1e-4


def test_specials_take_tabformer_ids(tmp_path):
    _save_model("roberta", tmp_path)
    tok = load_text_folder(tmp_path).tokenizer
    assert tok.convert_ids_to_tokens(range(5)) == ["<pad>", "<unk>", "<s>", "</s>", "<mask>"]
    assert sorted(tok.source_ids_.tolist()) == list(range(tok.vocab_size_))
    pair = PretrainedTextTokenizer(tokenizer_file=tmp_path).fit(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    types = pair.transform(pd.DataFrame({"a": ["the dog"], "b": ["a cat"]}))["token_type_ids"]
    assert types[0, 0] == 0 and types[0, -1] == 1


def test_unsupported_model_type_lists_the_families(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match=r"'gpt2'.*\['bert', 'distilbert', 'electra', 'roberta', 'xlm-roberta'\]"):
        load_text_folder(tmp_path)
    assert sorted(FAMILIES) == ["bert", "distilbert", "electra", "roberta", "xlm-roberta"]


def test_max_length_beyond_positions_is_refused(tmp_path):
    _save_model("roberta", tmp_path)
    with pytest.raises(ValueError, match="max_length=100 exceeds the 40 positions"):
        load_text_folder(tmp_path, max_length=100)


@pytest.mark.parametrize("model_type", ["distilbert", "electra-small"])
def test_saved_and_reloaded_keeps_the_outputs(tmp_path, model_type):
    _save_model(model_type, tmp_path / "hf")
    pretrained = load_text_folder(tmp_path / "hf", max_length=16)
    pretrained.save(tmp_path / "saved")
    loaded = load_pretrained(tmp_path / "saved")
    batch = {key: torch.as_tensor(value) for key, value in loaded.tokenizer.transform(SENTENCES).items()}
    assert isinstance(loaded.tokenizer, PretrainedTextTokenizer)
    assert np.array_equal(loaded.tokenizer.source_ids_, pretrained.tokenizer.source_ids_)
    torch.testing.assert_close(loaded.eval()(**batch), pretrained(**batch), rtol=0, atol=0)


def test_from_pretrained_honours_routed_settings(tmp_path):
    from tabformer import TabFormerClassifier

    _save_model("distilbert", tmp_path)
    clf = TabFormerClassifier.from_pretrained(
        tmp_path,
        tokenizer__max_length=12,
        tokenizer__token_dropout=0.1,
        encoder__dropout=0.25,
        encoder__d_model=32,  # equal to the weights': accepted
        head__dropout=0.5,
        head__hidden=8,
        max_epochs=1,
        batch_size=4,
        validation_fraction=None,
        verbose=0,
        random_state=0,
    )
    assert clf.encoder.tokenizer.max_length == 12 and clf.encoder.embedder.token_dropout == 0.1
    assert clf.encoder.encoder.config["dropout"] == 0.25
    plain = load_text_folder(tmp_path)
    for key, value in plain.encoder.state_dict().items():
        torch.testing.assert_close(clf.encoder.encoder.state_dict()[key], value, rtol=0, atol=0)
    texts = ["the quick brown fox jumps over the lazy dog and the cat sat on the mat", "a dog"] * 4
    clf.fit(texts, ["long", "short"] * 4)
    assert clf.tokenizer_.transform(texts)["input_ids"].shape[1] == 11  # max_length 12 less the encoder's CLS
    dropouts = [layer.p for layer in clf.module_.head.net if isinstance(layer, torch.nn.Dropout)]
    assert dropouts == [0.5] and clf.module_.head.net[2].out_features == 8
    assert clf.get_params()["head__dropout"] == 0.5


@pytest.mark.parametrize(
    "setting, match",
    [
        ({"encoder__d_model": 64}, r"encoder__d_model=64 contradicts the pretrained weights \(d_model=32\)"),
        ({"encoder__n_layers": 3}, r"encoder__n_layers=3 contradicts"),
        ({"encoder__no_such": 1}, "not a parameter of TransformerEncoder"),
        ({"tokenizer__max_length": 64}, "exceeds the 40 positions"),
        ({"tokenizer__tokenizer_file": "elsewhere"}, "tokenizer__tokenizer_file=.elsewhere. contradicts the pretrained weights"),
    ],
)
def test_from_pretrained_refuses_settings_that_contradict_the_weights(tmp_path, setting, match):
    from tabformer import TabFormerClassifier

    _save_model("distilbert", tmp_path)
    with pytest.raises(ValueError, match=match):
        TabFormerClassifier.from_pretrained(tmp_path, **setting)


def test_a_model_in_the_hugging_face_cache_loads_by_name(tmp_path, monkeypatch):
    snapshot = tmp_path / "hf" / "hub" / "models--someone--tiny-roberta" / "snapshots" / "0123abc"
    model, tokenizer = _save_model("roberta", snapshot)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abc")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    pretrained = load_pretrained("someone/tiny-roberta")
    reference, mask = _reference(model, tokenizer, SENTENCES)
    batch = {key: torch.as_tensor(value) for key, value in pretrained.tokenizer.transform(SENTENCES).items()}
    with torch.no_grad():
        assert (pretrained(**batch) - reference).abs()[mask].max() < 1e-4
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_pretrained("someone/not-cached")


def test_roberta_tagger_words_get_the_ids_they_have_inside_a_sentence(tmp_path):
    from tabformer import TabFormerTagger

    _, reference = _save_model("roberta", tmp_path)
    words = [["the", "dog", "sat"], ["Zurich", "owners", "disagree"]]
    tok = load_text_folder(tmp_path).tokenizer
    batch = tok.transform(words)
    for i, row in enumerate(words):
        # add_prefix_space=True in transformers: every word as if preceded by a space
        theirs = reference(" " + " ".join(row))["input_ids"]
        assert tok.source_ids_[batch["input_ids"][i][batch["attention_mask"][i]]].tolist() == theirs[1:]
    assert tok.transform(["the dog sat"])["input_ids"].shape[1] == 4  # running text keeps its own spacing
    as_series = tok.transform(pd.Series(words))["input_ids"]
    np.testing.assert_array_equal(as_series, batch["input_ids"])
    tags = [["O", "B-ANIMAL", "O"], ["B-LOC", "O", "O"]] * 3
    tagger = TabFormerTagger.from_pretrained(tmp_path, max_epochs=1, batch_size=6, validation_fraction=None, verbose=0)
    tagger.fit(words * 3, tags)
    assert [len(p) for p in tagger.predict(words)] == [3, 3]
