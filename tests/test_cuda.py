"""Device and mixed-precision paths. CUDA tests skip cleanly without a GPU."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from tabformer import TabFormerClassifier
from tabformer.amp import MixedPrecision

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:64], data.target[:64]


def test_mixed_precision_autocasts_training_batches_only(digits, tiny):
    X, y = digits
    seen = []
    clf = TabFormerClassifier(tokenizer="patch", callbacks=[MixedPrecision("bf16")], random_state=0, **dict(tiny, max_epochs=1))
    clf.fit(X, y)
    clf.module_.head.net[-1].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    clf.partial_fit(X, y)
    assert torch.bfloat16 in seen and torch.float32 in seen  # training batches autocast (CPU bf16), validation not
    assert not torch.is_autocast_enabled("cpu")  # and the context was closed afterwards
    seen.clear()
    assert clf.predict_proba(X[:4]).dtype == np.float32
    with pytest.raises(ValueError, match="dtype must be one of"):
        TabFormerClassifier(tokenizer="patch", callbacks=[MixedPrecision("int8")], **tiny).fit(X, y)


@needs_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("precision", [None, "bf16"])
def test_patch_classifier_on_cuda(digits, tiny, precision):
    X, y = digits
    callbacks = [MixedPrecision(precision)] if precision else None
    clf = TabFormerClassifier(tokenizer="patch", device="cuda", callbacks=callbacks, random_state=0, **tiny).fit(X, y)
    assert next(clf.module_.parameters()).device.type == "cuda"
    assert clf.predict_proba(X[:8]).shape == (8, 10)
    assert clf.forward_features(X[:8]).shape == (8, tiny["encoder__d_model"])


@needs_cuda
@pytest.mark.cuda
def test_simclr_pretrainer_on_cuda(digits):
    from tabformer import TabFormerPretrainer

    pre = TabFormerPretrainer(objective="simclr", device="cuda", callbacks=[MixedPrecision("bf16")], max_epochs=1,
                              batch_size=32, encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, verbose=0)
    assert pre.fit(digits[0]).transform(digits[0][:4]).shape == (4, 16)
    assert pre.encoder_.encoder.cls_token.device.type == "cpu"  # encoder_ is handed back on CPU
