"""Pretrained weights, backbones and explanations as a review loaded them (stop 37): each case
answered wrong without a word, or failed with a raw error, before its fix."""

import numpy as np
import pandas as pd
import pytest
import timm
import torch
from safetensors.torch import save_file

from tabformer import TabFormerClassifier
from tabformer.hub_text import FAMILIES, _settings
from tabformer.inspection import aggregate_subwords
from tabformer.tokenizers import PatchTokenizer
from tabformer.tokenizers.text import _pair

SMALL = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1, verbose=0, random_state=0)


def test_a_timm_vit_refuses_float_images_it_would_divide_by_255(tmp_path):
    torch.manual_seed(0)
    save_file(timm.create_model("vit_tiny_patch16_224", img_size=32).state_dict(), str(tmp_path / "vit.safetensors"))
    images = np.random.default_rng(0).random((8, 32, 32, 3)).astype(np.float32)
    settings = dict(tokenizer__image_size=32, max_epochs=1, verbose=0, validation_fraction=None)
    clf = TabFormerClassifier.from_pretrained(str(tmp_path / "vit.safetensors"), model="vit_tiny_patch16_224", **settings)
    with pytest.raises(ValueError, match="has float pixels .* fitted on integer pixels"):
        clf.fit(images, [0, 1] * 4)
    floats = TabFormerClassifier.from_pretrained(
        str(tmp_path / "vit.safetensors"), model="vit_tiny_patch16_224", tokenizer__pixel_scale=1.0, **settings
    ).fit(images, [0, 1] * 4)
    assert float(floats.tokenize(images)["pixels"].max()) > 0.9  # read as [0, 1], not near-black


@pytest.mark.parametrize("setting", ["is_decoder", "add_cross_attention"])
def test_a_decoder_checkpoint_is_refused_not_read_as_an_encoder(setting):
    config = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64, setting: True}
    with pytest.raises(ValueError, match=f"sets {setting}=true: a decoder"):
        _settings(config, FAMILIES["bert"])


def test_pairs_are_cut_to_the_lengths_the_tokenizers_library_gives():
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = [f"w{i}" for i in range(30)]
    reference = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="w0"))
    reference.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    for budget in (3, 6, 7, 10):
        reference.enable_truncation(max_length=budget, strategy="longest_first")
        for n_a in range(1, 13):
            for n_b in range(1, 13):
                a, b = words[:n_a], words[15 : 15 + n_b]
                theirs = reference.encode(" ".join(a), " ".join(b))
                ours, types = _pair(a, b, budget)
                kept_a = types.count(0) - 1
                assert (kept_a, types.count(1) - 1) == (theirs.type_ids.count(0), theirs.type_ids.count(1)), (n_a, n_b, budget)


def test_byte_level_bpe_pieces_are_merged_into_words():
    labels = ["<s>", "the", "\u0120qu", "ick", "\u0120fox", "</s>"]
    frame = pd.DataFrame({"row": 0, "layer": 0, "token": range(6), "label": labels, "attention": [0.1] * 6})
    words = aggregate_subwords(frame)
    assert list(words["label"]) == ["<s>", "the", "quick", "fox", "</s>"]
    np.testing.assert_allclose(words["attention"], [0.1, 0.1, 0.2, 0.1, 0.1])


def test_explain_sums_a_datetime_column_as_one_column():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=60), "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(60), unit="D")})
    clf = TabFormerClassifier(**SMALL).fit(X, rng.integers(0, 2, 60))
    columns = clf.explain(X.iloc[:2], level="column")
    assert sorted(columns["column"].unique()) == ["when", "x"]
    assert set(columns.loc[columns["column"] == "when", "n_tokens"]) == {5}


def test_a_backbone_too_deep_for_tiny_images_says_so():
    images = np.random.default_rng(0).integers(0, 256, (4, 5, 5, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"5x5 images are too small for 'convnext_atto'"):
        PatchTokenizer(backbone="convnext_atto", backbone_blocks=2).fit(images)
