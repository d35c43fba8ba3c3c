"""Any timm CNN as the hybrid ViT's stem, with weights from a local file through timm's loading."""

import numpy as np
import pytest
import timm
import torch
from safetensors.torch import save_file

from tabformer import TabFormerClassifier
from tabformer.nn.embedders.backbone import load_backbone
from tabformer.tokenizers import PatchTokenizer


@pytest.fixture(scope="module")
def resnet_file(tmp_path_factory):
    """A random-init resnet10t with a 10-class head, saved as a user's fine-tuned checkpoint would be."""
    torch.manual_seed(0)
    model = timm.create_model("resnet10t", num_classes=10)
    path = tmp_path_factory.mktemp("weights") / "resnet10t.safetensors"
    save_file(model.state_dict(), str(path))
    return path, model.state_dict()


def test_any_timm_cnn_is_a_stem_with_local_weights(resnet_file):
    path, state = resnet_file
    stem = load_backbone("resnet10t", 3, weights=path).eval()
    for key, value in stem.features.state_dict().items():
        torch.testing.assert_close(value, state[key], rtol=0, atol=0)
    reference = timm.create_model("resnet10t", features_only=True, out_indices=(2,))
    reference.load_state_dict({k: v for k, v in state.items() if k in reference.state_dict()})
    pixels = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(stem(pixels), reference.eval()(pixels)[-1])
    assert stem(pixels).shape == (2, 128, 4, 4)  # stage 3: stride 8


def test_torch_save_files_load_and_bad_files_are_refused(resnet_file, tmp_path):
    path, state = resnet_file
    torch.save({"state_dict": state}, tmp_path / "resnet.pth")  # a training script's checkpoint
    stem = load_backbone("resnet10t", 2, weights=tmp_path / "resnet.pth")
    torch.testing.assert_close(stem.features.conv1[0].weight, state["conv1.0.weight"])
    save_file({k: v for k, v in state.items() if not k.startswith("layer1.")}, str(tmp_path / "partial.safetensors"))
    with pytest.raises(ValueError, match=r"lack \d+ tensor\(s\) that resnet10t up to stage 2 needs"):
        load_backbone("resnet10t", 2, weights=tmp_path / "partial.safetensors")
    with pytest.raises(ValueError, match="backbone_blocks must be in 1..5 for resnet10t, got 7"):
        load_backbone("resnet10t", 7, weights=None)
    with pytest.raises(ValueError, match="no offline weights known for 'resnet10t'"):
        load_backbone("resnet10t", 2)


def test_classifier_with_a_timm_backbone_from_a_file(resnet_file, tiny):
    path, state = resnet_file
    X = np.random.default_rng(0).integers(0, 256, (24, 16, 16), dtype=np.uint8)
    y = np.arange(24) % 2
    clf = TabFormerClassifier(
        tokenizer="patch",
        tokenizer__backbone="resnet10t",
        tokenizer__backbone_weights=str(path),
        **dict(tiny, max_epochs=1, batch_size=8),
        validation_fraction=None,
        random_state=0,
    ).fit(X, y)
    assert clf.tokenizer_.grid_shape_ == (4, 4)  # stage 2 of a ResNet: stride 4
    torch.testing.assert_close(clf.module_.embedder.stem.features.conv1[0].weight, state["conv1.0.weight"])
    assert clf.predict(X[:3]).shape == (3,)


def test_hybrid_models_saved_with_the_old_stem_names_still_load(tmp_path, tiny):
    from safetensors.torch import load_file

    import tabformer

    X = np.random.default_rng(0).integers(0, 256, (16, 16, 16), dtype=np.uint8)
    tokenizer = PatchTokenizer(backbone="tf_efficientnet_lite0", backbone_weights=None, image_size=16)
    clf = TabFormerClassifier(tokenizer=tokenizer, **dict(tiny, max_epochs=1), random_state=0).fit(X, np.arange(16) % 2)
    clf.save(tmp_path / "model")
    weights = tmp_path / "model" / "model.safetensors"
    old_names = {"conv_stem": "0", "bn1": "1"}
    state = {}
    for key, value in load_file(str(weights)).items():
        if ".stem.features." in key:  # as the Sequential stem of earlier versions named it
            head, rest = key.split(".stem.features.")
            part, _, tail = rest.partition(".")
            if part == "blocks":
                index, _, tail = tail.partition(".")
                part = str(2 + int(index))
            key = f"{head}.stem.{old_names.get(part, part)}.{tail}"
        state[key] = value
    assert any(".stem.0." in key for key in state)
    save_file(state, str(weights))
    loaded = tabformer.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_a_deeper_variants_file_is_refused_where_its_extra_blocks_would_be_dropped(tmp_path):
    # A review loaded resnet34 weights as a resnet18 stem: timm loads features-only models
    # non-strictly, so layer1.2 (a third block resnet18 lacks) was dropped and the stem
    # computed another model, silently.
    path = tmp_path / "resnet34.safetensors"
    save_file(timm.create_model("resnet34", num_classes=10).state_dict(), str(path))
    with pytest.raises(ValueError, match=r"holds 10 tensor\(s\) that resnet18 up to stage 2 does not have, .*'layer1\.2\."):
        load_backbone("resnet18", 2, weights=path)
    with pytest.raises(ValueError, match=r"Pass the timm model name the file was saved from"):
        load_backbone("resnet18", 3, weights=path)
    load_backbone("resnet18", 1, weights=path)  # the stem before layer1 is the same in both: nothing is dropped
    load_backbone("resnet34", 2, weights=path)


def test_a_full_checkpoint_with_its_head_loads_into_early_stages(tmp_path):
    # The head, the stages after the one kept, and EfficientNet's blocks past it are legitimately unused.
    for name, deeper in (("tf_efficientnet_lite0", "tf_efficientnet_lite1"), ("convnext_atto", None)):
        torch.manual_seed(0)
        state = timm.create_model(name, num_classes=5).state_dict()
        save_file(state, str(tmp_path / f"{name}.safetensors"))
        for stage in (1, 2):
            stem = load_backbone(name, stage, weights=tmp_path / f"{name}.safetensors")
            some = next(k for k in stem.features.state_dict() if k.endswith("weight"))
            torch.testing.assert_close(
                stem.features.state_dict()[some], state[some.replace("stages_", "stages.").replace("stem_", "stem.")]
            )
        if deeper:
            save_file(timm.create_model(deeper).state_dict(), str(tmp_path / f"{deeper}.safetensors"))
            with pytest.raises(ValueError, match=rf"that {name} up to stage 2 does not have, .*'blocks\.1\.2\."):
                load_backbone(name, 2, weights=tmp_path / f"{deeper}.safetensors")


def test_a_stem_whose_flattened_names_join_words_loads(tmp_path):
    # FeatureListNet flattens densenet's "features" Sequential into "features_conv0",
    # "features_denseblock1"...: only "name_<digit>" was mapped back, so every densenet
    # (and cspnet) file was refused as lacking tensors it holds.
    torch.manual_seed(0)
    state = timm.create_model("densenet121", num_classes=5).state_dict()
    save_file(state, str(tmp_path / "densenet121.safetensors"))
    stem = load_backbone("densenet121", 2, weights=tmp_path / "densenet121.safetensors")
    torch.testing.assert_close(stem.features.features_conv0.weight, state["features.conv0.weight"], rtol=0, atol=0)
    extra = dict(state, **{"features.denseblock1.denselayer7.conv1.weight": torch.zeros(1)})
    save_file(extra, str(tmp_path / "extra.safetensors"))
    with pytest.raises(ValueError, match=r"holds 1 tensor\(s\) .*'features\.denseblock1\.denselayer7\.conv1\.weight'"):
        load_backbone("densenet121", 2, weights=tmp_path / "extra.safetensors")


@pytest.mark.parametrize("name", ["tiny_vit_5m_224", "swin_tiny_patch4_window7_224"])
def test_a_file_holding_the_models_non_persistent_buffers_loads(tmp_path, name):
    # A review: files from Microsoft's Swin/TinyViT releases (and older timm) hold relative_position_index,
    # attn_mask or attention_bias_idxs, buffers the model rebuilds and leaves out of state_dict() (timm's
    # filters drop them); they loaded, then the extra-tensor check refused them as another architecture's.
    torch.manual_seed(0)
    model = timm.create_model(name, num_classes=3)
    state = {key: tensor.contiguous() for key, tensor in model.state_dict().items()}
    buffers = {key: tensor.contiguous() for key, tensor in model.named_buffers() if key not in state}
    assert any(key.startswith(("stages.1.", "layers.1.")) for key in buffers)  # inside a stage kept
    save_file(dict(state, **buffers), str(tmp_path / "release.safetensors"))
    stem = load_backbone(name, 2, weights=tmp_path / "release.safetensors")
    assert stem(torch.zeros(1, 3, 224, 224)).shape[0] == 1
    stray = ("stages" if name.startswith("tiny") else "layers") + ".1.blocks.0.attn.stray_index"  # no buffer of the model
    save_file(dict(state, **buffers, **{stray: torch.zeros(2)}), str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match=rf"holds 1 tensor\(s\) .*'{stray}'"):
        load_backbone(name, 2, weights=tmp_path / "other.safetensors")
