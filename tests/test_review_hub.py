"""Pretrained weights as a review loaded them (stop 41): each test failed, or answered wrong, before its fix."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from safetensors.torch import load_file, save_file  # noqa: E402
from test_hf_text_families import SENTENCES, _reference, _save_model  # noqa: E402

from tabformer.hub import load_text_folder  # noqa: E402


def _hidden(pretrained, sentences):
    batch = {key: torch.as_tensor(value) for key, value in pretrained.tokenizer.transform(sentences).items()}
    with torch.no_grad():
        return pretrained(**batch)


@pytest.mark.parametrize("weights", ["safetensors", "bin"])
def test_sharded_checkpoint_loads_every_shard(tmp_path, weights):
    # save_pretrained(max_shard_size=...) writes model-0000i-of-0000n.safetensors + model.safetensors.index.json
    model, tokenizer = _save_model("bert", tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    (tmp_path / "model.safetensors").unlink()
    keys = sorted(state)
    halves = {"model-00001-of-00002": keys[: len(keys) // 2], "model-00002-of-00002": keys[len(keys) // 2 :]}
    name = "model.safetensors" if weights == "safetensors" else "pytorch_model.bin"
    weight_map = {}
    for shard, shard_keys in halves.items():
        file = f"{shard}.safetensors" if weights == "safetensors" else f"pytorch_{shard}.bin"
        tensors = {key: state[key].contiguous() for key in shard_keys}
        save_file(tensors, tmp_path / file) if weights == "safetensors" else torch.save(tensors, tmp_path / file)
        weight_map.update(dict.fromkeys(shard_keys, file))
    (tmp_path / f"{name}.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    reference, mask = _reference(model, tokenizer, SENTENCES)
    assert (_hidden(load_text_folder(tmp_path), SENTENCES) - reference).abs()[mask].max() < 1e-4
    if weights == "safetensors":  # a weight map naming a file outside the folder is refused, as tabformer.load refuses one
        outside = tmp_path.parent / f"outside_{tmp_path.name}.safetensors"
        save_file({key: state[key].contiguous() for key in halves["model-00001-of-00002"]}, outside)
        weight_map.update(dict.fromkeys(halves["model-00001-of-00002"], f"../{outside.name}"))
        (tmp_path / f"{name}.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
        with pytest.raises(ValueError, match=r"names weight files outside"):
            load_text_folder(tmp_path)


def test_missing_weights_are_named_in_a_value_error(tmp_path):
    _save_model("bert", tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    del state["encoder.layer.1.output.LayerNorm.bias"], state["embeddings.LayerNorm.weight"]
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=r"lacks 2 .*embeddings\.LayerNorm\.weight.*encoder\.layer\.1\.output\.LayerNorm\.bias"):
        load_text_folder(tmp_path)


def test_relative_position_embeddings_are_refused(tmp_path):
    # transformers 4 wrote position_embedding_type="relative_key" for BERT-style models whose
    # attention adds distance terms; the absolute table alone would compute another function.
    _save_model("bert", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "position_embedding_type": "relative_key"}))
    with pytest.raises(ValueError, match="position_embedding_type 'relative_key'"):
        load_text_folder(tmp_path)
