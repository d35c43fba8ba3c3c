"""timm ViT checkpoints (random-init, saved by the test) load into PatchTokenizer + the shared
encoder and match timm's ``forward_features`` within 1e-4, at the checkpoint's size and at
another (positions interpolated by timm's own resampling)."""

import numpy as np
import pytest
import timm
import torch
from safetensors.torch import save_file

from tabformer import TabFormerClassifier
from tabformer.hub import load_pretrained, load_timm_vit


def _checkpoint(folder, name, img_size=32, num_classes=10):
    torch.manual_seed(0)
    model = timm.create_model(name, img_size=img_size, num_classes=num_classes)
    with torch.no_grad():  # timm initialises biases to 0 and norms to 1: randomise them so a swap shows
        for key, parameter in model.named_parameters():
            if "norm" in key or key.endswith("bias") or "gamma" in key:
                parameter.add_(0.2 * torch.randn_like(parameter))
    path = folder / f"{name}.safetensors"
    save_file(model.state_dict(), str(path))
    return path


def _compare(pretrained, reference, size):
    images = np.random.default_rng(0).integers(0, 256, (3, size, size, 3), dtype=np.uint8)
    batch = {k: torch.as_tensor(v) for k, v in pretrained.tokenizer.transform(images).items()}
    config = reference.pretrained_cfg
    mean = torch.tensor(config["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(config["std"]).view(1, 3, 1, 1)
    with torch.no_grad():
        ours = pretrained(**batch)
        theirs = reference.eval().forward_features((batch["pixels"] - mean) / std)
    assert ours.shape == theirs.shape
    assert (ours - theirs).abs().max() < 1e-4, float((ours - theirs).abs().max())
    assert theirs.abs().max() > 0.1


@pytest.mark.parametrize("name", ["vit_tiny_patch16_224", "deit3_small_patch16_224"])
def test_vit_matches_timm_forward_features(tmp_path, name):
    path = _checkpoint(tmp_path, name)
    pretrained = load_timm_vit(path, name, image_size=32)
    assert pretrained.tokenizer.grid_shape_ == (2, 2) and pretrained.encoder.norm_first
    reference = timm.create_model(name, img_size=32, num_classes=10, pretrained=True, pretrained_cfg_overlay={"file": str(path)})
    _compare(pretrained, reference, 32)


def test_positions_are_interpolated_to_the_input_size(tmp_path):
    path = _checkpoint(tmp_path, "vit_tiny_patch16_224")
    pretrained = load_pretrained(path, model="vit_tiny_patch16_224", image_size=64)
    assert pretrained.embedder.positions.weight.shape == (1, 16, 192)
    reference = timm.create_model(
        "vit_tiny_patch16_224", img_size=64, num_classes=10, pretrained=True, pretrained_cfg_overlay={"file": str(path)}
    )
    _compare(pretrained, reference, 64)


def test_non_vit_and_mismatched_checkpoints_are_refused(tmp_path):
    path = _checkpoint(tmp_path, "vit_tiny_patch16_224")
    with pytest.raises(ValueError, match="not a timm VisionTransformer"):
        load_timm_vit(path, "resnet10t")
    with pytest.raises(ValueError, match="does not fit vit_small_patch16_224"):
        load_timm_vit(path, "vit_small_patch16_224", image_size=32)


def test_classifier_from_a_vit_checkpoint(tmp_path):
    path = _checkpoint(tmp_path, "vit_tiny_patch16_224")
    X = np.random.default_rng(0).integers(0, 256, (16, 8, 8), dtype=np.uint8)  # grey, resized to 32
    y = np.arange(16) % 2
    clf = TabFormerClassifier.from_pretrained(
        path,
        model="vit_tiny_patch16_224",
        tokenizer__image_size=32,
        head__dropout=0.1,
        max_epochs=1,
        batch_size=8,
        validation_fraction=None,
        verbose=0,
        random_state=0,
    ).fit(X, y)
    assert clf.tokenizer_.image_size_ == (32, 32) and clf.tokenizer_.n_channels_ == 3
    assert clf.predict_proba(X[:2]).shape == (2, 2)


def test_a_timm_folder_in_the_hugging_face_cache_loads_by_name(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--timm--vit_tiny_patch16_224.test" / "snapshots" / "feed"
    snapshot.mkdir(parents=True)
    _checkpoint(tmp_path, "vit_tiny_patch16_224").rename(snapshot / "model.safetensors")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    pretrained = load_pretrained("timm/vit_tiny_patch16_224.test", model="vit_tiny_patch16_224")  # no refs/main
    assert pretrained.tokenizer.grid_shape_ == (14, 14)


@pytest.mark.parametrize(
    "name, img_size, reason",
    [
        ("vit_tiny_r_s16_p8_224", 64, "HybridEmbed patch embedding"),  # a ResNet stem before the patches
        ("vit_small_patch16_18x2_224", 224, "ParallelThingsBlock blocks"),  # two attention branches per block
    ],
)
def test_hybrid_and_parallel_vits_are_refused_by_name(tmp_path, name, img_size, reason):
    # Both used to fail deep in the mapping (a size mismatch, an AttributeError) or, for a
    # block with the same tensor names in another order, could have loaded a different model.
    path = _checkpoint(tmp_path, name, img_size=img_size)
    with pytest.raises(ValueError, match=f"{name} does not map onto tabformer's encoder: .*{reason}"):
        load_timm_vit(path, name, image_size=img_size)


def test_a_checkpoint_with_tensors_the_named_vit_lacks_is_refused(tmp_path):
    # A review loaded a LayerScale ViT-tiny (init_values) as plain vit_tiny: timm drops the
    # unexpected ls*.gamma with a log line, and the output differed from the file's model by ~4.
    torch.manual_seed(0)
    layer_scale = timm.create_model("vit_tiny_patch16_224", img_size=32, num_classes=10, init_values=0.01).state_dict()
    save_file(layer_scale, str(tmp_path / "ls.safetensors"))
    with pytest.raises(
        ValueError, match=r"holds 24 tensor\(s\) that vit_tiny_patch16_224 does not have.*ls1/ls2.gamma are LayerScale"
    ):
        load_timm_vit(tmp_path / "ls.safetensors", "vit_tiny_patch16_224", image_size=32)
    plain = timm.create_model("vit_tiny_patch16_224", img_size=32, num_classes=10).state_dict()
    save_file(dict(plain, reg_token=torch.zeros(1, 4, 192)), str(tmp_path / "reg.safetensors"))  # on the model itself
    with pytest.raises(ValueError, match=r"holds 1 tensor\(s\) .*\['reg_token'\]"):
        load_timm_vit(tmp_path / "reg.safetensors", "vit_tiny_patch16_224", image_size=32)
    save_file(plain, str(tmp_path / "plain.safetensors"))  # its 10-class head is legitimately unused
    assert load_timm_vit(tmp_path / "plain.safetensors", "vit_tiny_patch16_224", image_size=32).tokenizer.grid_shape_ == (2, 2)


def test_an_image_size_the_patches_do_not_tile_names_the_nearest_that_do(tmp_path):
    # It said "choose another patch_size", which pretrained weights fix.
    path = _checkpoint(tmp_path, "vit_tiny_patch16_224")
    with pytest.raises(ValueError, match=r"image_size=30 is not a multiple of .* patch size 16x16, .* the nearest 16 or 32$"):
        load_timm_vit(path, "vit_tiny_patch16_224", image_size=30)
    with pytest.raises(ValueError, match=r"the nearest \(16, 64\) or \(32, 64\)$"):
        load_timm_vit(path, "vit_tiny_patch16_224", image_size=(30, 64))
    with pytest.raises(ValueError, match=r"image_size must be an int or a \(height, width\) pair of ints, got 32.0"):
        load_timm_vit(path, "vit_tiny_patch16_224", image_size=32.0)
    assert load_timm_vit(path, "vit_tiny_patch16_224", image_size=np.int64(48)).tokenizer.grid_shape_ == (3, 3)


def test_a_checkpoint_of_another_patch_size_is_refused(tmp_path):
    # timm resamples a file's patch embedding to the named model's patch size: a patch-32
    # file named as a patch-16 model loaded silently, as another model.
    torch.manual_seed(0)
    save_file(timm.create_model("vit_small_patch32_224", img_size=64).state_dict(), str(tmp_path / "p32.safetensors"))
    with pytest.raises(ValueError, match=r"holds 32x32 patches \(patch_embed.proj\), vit_small_patch16_224 has 16x16"):
        load_timm_vit(tmp_path / "p32.safetensors", "vit_small_patch16_224", image_size=64)
    assert load_timm_vit(tmp_path / "p32.safetensors", "vit_small_patch32_224", image_size=64).tokenizer.grid_shape_ == (2, 2)


def test_an_older_in21k_file_with_pre_logits_loads(tmp_path):
    # A review: older in21k ViT files hold pre_logits.fc (a representation layer); timm's ViT filter drops
    # it, and they loaded, until the extra-tensor check refused them. The check now sees timm's filtered tensors.
    path = _checkpoint(tmp_path, "vit_tiny_patch16_224")
    state = dict(timm.models.load_state_dict(str(path)))
    state.update({"pre_logits.fc.weight": torch.zeros(192, 192), "pre_logits.fc.bias": torch.zeros(192)})
    save_file(state, str(tmp_path / "in21k.safetensors"))
    reference = timm.create_model("vit_tiny_patch16_224", img_size=32, num_classes=0)
    reference.load_state_dict({k: v for k, v in state.items() if not k.startswith(("pre_logits", "head"))})
    _compare(load_timm_vit(tmp_path / "in21k.safetensors", "vit_tiny_patch16_224", image_size=32), reference, 32)
    state["blocks.0.ls1.gamma"] = torch.ones(192)  # LayerScale stays refused, pre_logits or not
    save_file(state, str(tmp_path / "ls.safetensors"))
    with pytest.raises(ValueError, match=r"holds 1 tensor\(s\) .*ls1/ls2.gamma are LayerScale"):
        load_timm_vit(tmp_path / "ls.safetensors", "vit_tiny_patch16_224", image_size=32)
