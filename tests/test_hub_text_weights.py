"""Hugging Face text folders as a review of their weight loading found them: each test failed before its fix."""

import json
import re

import pytest
import torch

torch.set_num_threads(1)
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_hf_text_families import _save_model  # noqa: E402

from tabformer.hub import load_text_folder  # noqa: E402


def _ids(pretrained, text):
    """The ids tabformer gives ``text``, in the checkpoint's numbering, without the encoder's CLS."""
    batch = pretrained.tokenizer.transform([text])
    return pretrained.tokenizer.source_ids_[batch["input_ids"][0][batch["attention_mask"][0]]].tolist()


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
@pytest.mark.parametrize("model_type", ["roberta", "bert"])
def test_tokens_a_checkpoint_added_match_as_transformers_does(tmp_path, model_type):
    # add_special_tokens marks its tokens special, as it does [SEP]; tabformer read every special
    # token typed in a text as its characters: "<ent>" became "< e n t >" (RoBERTa), "[UNK] e ##n ##t [UNK]" (BERT).
    model, tokenizer = _save_model(model_type, tmp_path)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<ent>"]})
    tokenizer.add_tokens(["zzplain"])
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    pretrained = load_text_folder(tmp_path)
    for text in ["the <ent> dog", "the<ent>dog sat zzplain", "a zzplain <ent> cat <ent>"]:
        assert _ids(pretrained, text) == tokenizer(text)["input_ids"][1:], text
    # The five the encoder places itself stay text when a user types them (HF would read the mask id).
    mask, sep = tokenizer.mask_token, tokenizer.sep_token
    theirs = tokenizer(f"a {mask} b {sep}")["input_ids"][1:]
    ours = _ids(pretrained, f"a {mask} b {sep}")
    assert tokenizer.mask_token_id in theirs and tokenizer.mask_token_id not in ours
    assert ours.count(tokenizer.sep_token_id) == 1  # its own closing separator only
    encoded = tokenizer(["the <ent> dog"], return_tensors="pt")
    with torch.no_grad():
        reference = model.eval()(**encoded).last_hidden_state
        batch = pretrained.tokenizer.transform(["the <ent> dog"])
        hidden = pretrained(**{key: torch.as_tensor(value) for key, value in batch.items()})
    assert hidden.shape == reference.shape
    assert (hidden - reference).abs().max() < 1e-4


def _slow_bert_tokenizer():
    """transformers' python BERT tokenizer, which saves vocab.txt and no tokenizer.json (BertTokenizer before 5)."""
    return getattr(transformers, "BertTokenizerLegacy", None) or transformers.BertTokenizer


def _vocab_txt_folder_with_added_tokens(folder):
    """A tiny BERT saved as a slow tokenizer saves it (vocab.txt, no tokenizer.json) with "<ent>" and "zzplain" added."""
    model, fast = _save_model("bert", folder)
    (folder / "tokenizer.json").unlink()
    vocab = fast.convert_ids_to_tokens(range(len(fast)))
    (folder / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    tokenizer = _slow_bert_tokenizer()(str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<ent>"]})
    tokenizer.add_tokens(["zzplain"])
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "tokenizer.json").unlink(missing_ok=True)
    return model, tokenizer, vocab


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
def test_tokens_added_in_tokenizer_config_of_a_vocab_txt_folder_match_as_one_id(tmp_path):
    # A folder with vocab.txt and tokenizer_config.json only (a slow tokenizer's save): its
    # added_tokens_decoder was ignored, "<ent>" read as "[UNK] e ##n ##t [UNK]" and "zzplain" as pieces.
    model, tokenizer, _ = _vocab_txt_folder_with_added_tokens(tmp_path)
    decoder = json.loads((tmp_path / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    assert {entry["content"] for entry in decoder.values()} >= {"<ent>", "zzplain"}
    pretrained = load_text_folder(tmp_path)
    assert pretrained.tokenizer.vocab_size_ == len(tokenizer)
    for text in ["the <ent> dog", "the<ent>dog sat zzplain", "a zzplain <ent> cat <ent>"]:
        assert _ids(pretrained, text) == tokenizer(text)["input_ids"][1:], text
    encoded = tokenizer(["the <ent> dog"], return_tensors="pt")
    with torch.no_grad():
        reference = model.eval()(**encoded).last_hidden_state
        batch = pretrained.tokenizer.transform(["the <ent> dog"])
        hidden = pretrained(**{key: torch.as_tensor(value) for key, value in batch.items()})
    assert (hidden - reference).abs().max() < 1e-4


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
def test_tokens_added_in_a_legacy_added_tokens_json_match_as_one_id(tmp_path):
    # transformers before 4.34 saved added tokens only in added_tokens.json ({token: id}); such a
    # folder read "<ent>" as "[UNK] e ##n ##t [UNK]" and "zzplain" as pieces, where transformers reads one id each.
    _, _, vocab = _vocab_txt_folder_with_added_tokens(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder")  # as transformers before 4.34 wrote it
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    (tmp_path / "added_tokens.json").write_text(json.dumps({"<ent>": len(vocab), "zzplain": len(vocab) + 1}))
    legacy = _slow_bert_tokenizer().from_pretrained(str(tmp_path))
    pretrained = load_text_folder(tmp_path)
    assert pretrained.tokenizer.vocab_size_ == len(legacy) == len(vocab) + 2
    for text in ["the <ent> dog", "the<ent>dog sat zzplain", "a zzplain <ent> cat <ent>"]:
        assert _ids(pretrained, text) == legacy(text)["input_ids"][1:], text
    (tmp_path / "added_tokens.json").write_text(json.dumps({"<ent>": "120"}))
    with pytest.raises(
        ValueError, match=r"added_tokens.json: expected a JSON object of token -> integer id, got \('<ent>', '120'\)"
    ):
        load_text_folder(tmp_path)


def _cased_folder(folder, json_settings, config_settings, tokenizer_class="BertTokenizer"):
    """A tiny BERT whose tokenizer.json normalises with ``json_settings`` and tokenizer_config.json says ``config_settings``."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "The", "café", "Café", "cafe", "Cafe", "北", "京"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    transformers.AutoTokenizer.from_pretrained(folder).save_pretrained(folder)
    (folder / "vocab.txt").unlink()  # tokenizer.json alone describes the words
    spec = json.loads((folder / "tokenizer.json").read_text())
    assert spec["normalizer"]["type"] == "BertNormalizer"
    spec["normalizer"].update(json_settings)
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars", "tokenizer_class"):
        config.pop(key, None)
    config.update(config_settings)
    if tokenizer_class is not None:
        config["tokenizer_class"] = tokenizer_class
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    bert = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    )
    transformers.BertModel(bert).save_pretrained(folder)


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
@pytest.mark.parametrize(
    "json_settings, config_settings, tokenizer_class",
    [
        ({"lowercase": True}, {"do_lower_case": False}, "BertTokenizer"),  # a cased model's config, an uncased file
        ({"lowercase": False}, {"do_lower_case": True}, "BertTokenizerFast"),  # the other way
        ({"lowercase": False}, {}, "DistilBertTokenizerFast"),  # the class default (lower-case) wins too
        ({"lowercase": True, "strip_accents": None}, {"do_lower_case": True, "strip_accents": False}, None),  # model_type
        ({"lowercase": False, "handle_chinese_chars": True}, {"do_lower_case": False, "tokenize_chinese_chars": False}, None),
        ({"lowercase": True}, {"do_lower_case": False}, "TokenizersBackend"),  # a generic class keeps tokenizer.json's
    ],
)
def test_tokenizer_config_normalisation_wins_as_in_transformers(tmp_path, json_settings, config_settings, tokenizer_class):
    # tokenizer_config.json's do_lower_case (strip_accents, tokenize_chinese_chars) was ignored
    # when a tokenizer.json existed; BertTokenizerFast overrides the file's normaliser with them.
    _cased_folder(tmp_path, json_settings, config_settings, tokenizer_class)
    reference = transformers.AutoTokenizer.from_pretrained(tmp_path)
    pretrained = load_text_folder(tmp_path)
    for text in ["The Café", "the cafe Cafe", "The北京"]:
        assert _ids(pretrained, text) == reference(text)["input_ids"][1:], (text, reference.tokenize(text))


@pytest.mark.parametrize(
    "model_type, change, match",
    [
        (
            "bert",
            {"intermediate_size": 64},
            r"'encoder\.layer\.0\.intermediate\.dense\.weight' has shape \(48, 32\), but config\.json implies \(64, 32\) "
            r"\(intermediate_size=64 where the weights have 48\)",
        ),
        ("bert", {"hidden_size": 64}, r"has shape \(40, 32\), but config\.json implies \(40, 64\) \(hidden_size=64 where"),
        (
            "roberta",  # a table shorter than config.json's, RoBERTa's offset rows included
            {"max_position_embeddings": 50},
            r"'embeddings\.position_embeddings\.weight' has shape \(42, 32\), but config\.json implies \(50, 32\) "
            r"\(max_position_embeddings=50 where the weights have 42\)",
        ),
        ("distilbert", {"hidden_dim": 64}, r"'transformer\.layer\.0\.ffn\.lin1\.weight' has shape \(48, 32\).*hidden_dim=64"),
        ("electra-small", {"embedding_size": 8}, r"has shape \(40, 16\), but config\.json implies \(40, 8\) \(embedding_size=8"),
    ],
)
def test_a_config_that_contradicts_the_tensors_names_the_tensor_and_the_setting(tmp_path, model_type, change, match):
    # torch's "size mismatch for encoder.layers.0.feed_forward.linear1.weight" named tabformer's key, not the file's
    _save_model(model_type, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ValueError, match=match):
        load_text_folder(tmp_path)


def test_a_layer_norm_of_another_width_is_named(tmp_path):
    from safetensors.torch import load_file, save_file

    _save_model("bert", tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    key = "encoder.layer.1.output.LayerNorm.weight"
    state[key] = torch.ones(48)
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=rf"'{key}' has shape \(48,\), but config\.json implies \(32,\) \(hidden_size=32"):
        load_text_folder(tmp_path)


def _rewrite(folder, rename):
    from safetensors.torch import load_file, save_file

    state = load_file(folder / "model.safetensors")
    save_file({new: value.clone() for key, value in state.items() for new in rename(key)}, folder / "model.safetensors")


def _hidden(pretrained):
    batch = pretrained.tokenizer.transform(["the quick fox sat on the mat", "a dog"])
    with torch.no_grad():
        return pretrained(**{key: torch.as_tensor(value) for key, value in batch.items()})


@pytest.mark.parametrize(
    "model_type, head, wrapper",
    [("bert", False, "module."), ("bert", True, "model."), ("roberta", True, "module."), ("distilbert", False, "model.")],
)
def test_a_wrapper_prefix_on_every_key_is_taken_off(tmp_path, model_type, head, wrapper):
    # DataParallel's "module." (or "model." of a training module, around "bert." and a head) failed
    # with "the bert checkpoint lacks 37 tensor(s)", listing the unprefixed names.
    _save_model(model_type, tmp_path, head)
    plain = _hidden(load_text_folder(tmp_path))
    _rewrite(tmp_path, lambda key: [wrapper + key])
    torch.testing.assert_close(_hidden(load_text_folder(tmp_path)), plain, rtol=0, atol=0)


def test_an_ambiguous_prefix_is_named_not_guessed(tmp_path):
    _save_model("bert", tmp_path)
    _rewrite(tmp_path, lambda key: ["student." + key, "teacher." + key])  # two encoders: which one is meant?
    with pytest.raises(ValueError, match=r"lacks 37 tensor.*under the prefixes \['student\.', 'teacher\.'\]"):
        load_text_folder(tmp_path)
    _save_model("bert", tmp_path)
    _rewrite(tmp_path, lambda key: ["module." + key] + (["step"] if "word_emb" in key else []))  # not every key has it
    with pytest.raises(ValueError, match=r"under the prefixes \['module\.'\]"):
        load_text_folder(tmp_path)


def test_errors_name_the_keys_as_the_file_spells_them(tmp_path):
    _save_model("bert", tmp_path, head=True)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "intermediate_size": 64}))
    with pytest.raises(ValueError, match=r"'bert\.encoder\.layer\.0\.intermediate\.dense\.weight' has shape \(48, 32\)"):
        load_text_folder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
    with pytest.raises(ValueError, match=r"lacks 16 tensor.*'bert\.encoder\.layer\.2\."):
        load_text_folder(tmp_path)


def test_a_folder_without_a_usable_config_says_what_it_expects(tmp_path):
    from tabformer.hub import load_pretrained

    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    # "[Errno 2] No such file or directory: '.../config.json'" before
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp_path} has no config.json; a Hugging Face text")):
        load_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": None, "hidden_size": 32}))
    with pytest.raises(ValueError, match=r"config.json sets model_type to null; expected one of \['bert', 'distilbert'"):
        load_text_folder(tmp_path)  # "holds a None model" before
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config.json holds a list, not the object of settings"):
        load_text_folder(tmp_path)
    (tmp_path / "config.json").write_text("{'model_type': 'bert'}")
    with pytest.raises(ValueError, match=r"config.json is not valid JSON: Expecting property name"):
        load_text_folder(tmp_path)


@pytest.mark.filterwarnings("ignore:.*are \\[UNK\\]:UserWarning")
def test_tokens_added_without_resizing_the_embeddings_are_left_out_with_a_warning(tmp_path):
    # add_tokens without resize_token_embeddings: the added ids have no word-embedding row. Such a
    # vocab.txt folder loaded (added tokens read as text) until added_tokens_decoder was read; then
    # it was refused ("the tokenizer has 101 tokens but the word embeddings have 99 rows").
    model, fast = _save_model("bert", tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    vocab = fast.convert_ids_to_tokens(range(len(fast)))
    (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    tokenizer = _slow_bert_tokenizer()(str(tmp_path / "vocab.txt"), do_lower_case=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<ent>"]})
    tokenizer.add_tokens(["zzplain"])
    tokenizer.save_pretrained(tmp_path)  # the model keeps its rows
    (tmp_path / "tokenizer.json").unlink(missing_ok=True)
    rows = model.get_input_embeddings().weight.shape[0]
    assert rows == len(vocab) < len(tokenizer)
    message = rf"adds \['<ent>', 'zzplain'\] at ids {rows}\.\.{rows + 1}, past the model's {rows} word-embedding rows"
    with pytest.warns(UserWarning, match=message):
        pretrained = load_text_folder(tmp_path)
    assert pretrained.tokenizer.vocab_size_ == rows
    plain = _slow_bert_tokenizer()(str(tmp_path / "vocab.txt"), do_lower_case=True)  # without the added tokens
    for text in ["the dog", "the <ent> dog sat zzplain"]:
        ids = _ids(pretrained, text)
        assert max(ids) < rows and ids == plain(text)["input_ids"][1:], text
