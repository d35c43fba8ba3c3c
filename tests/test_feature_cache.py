"""A frozen stem runs once per image: the feature cache of the hybrid (CNN stem) embedder."""

import contextlib
import copy
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from tabformer.estimators import _recipes
from tabformer.nn.embedders.feature_cache import FrozenFeatureCache
from tabformer.nn.embedders.image import HybridEmbedder


def _embedder(freeze=True, random_shift=0, count=True):
    torch.manual_seed(0)
    stem = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.BatchNorm2d(8))
    embedder = HybridEmbedder(stem, (2, 2), 16, (8, 8), freeze=freeze, random_shift=random_shift)
    embedder.feature_cache.enabled = True  # as inside a supervised fit loop
    calls = []
    if count:
        stem.register_forward_hook(lambda module, inputs, output: calls.append(len(inputs[0])))
    return embedder, calls


def test_each_image_goes_through_the_stem_once_with_equal_tokens():
    embedder, calls = _embedder()
    images = torch.rand(6, 3, 8, 8)
    first, _ = embedder(images)
    again, _ = embedder(images[[5, 0, 3]])  # cached images, another order and batch
    mixed, _ = embedder(torch.cat([images[:2], torch.rand(1, 3, 8, 8)]))  # two cached, one new
    assert calls == [6, 1]
    torch.testing.assert_close(again, first[[5, 0, 3]])
    torch.testing.assert_close(mixed[:2], first[:2])
    assert embedder.feature_cache.hits == 5 and len(embedder.feature_cache) == 7


def test_grey_images_are_cached_apart_from_colour_ones():
    embedder, calls = _embedder()
    grey = torch.rand(2, 1, 8, 8)
    tokens, _ = embedder(grey)
    colour, _ = embedder(grey.expand(-1, 3, -1, -1))
    assert calls == [2, 2]
    torch.testing.assert_close(tokens, colour)


@pytest.mark.parametrize("case", ["shifting", "unfrozen", "pixel gradients"])
def test_no_cache_when_the_stem_sees_other_pixels_or_learns(case):
    embedder, calls = _embedder(freeze=case != "unfrozen", random_shift=2 if case == "shifting" else 0)
    images = torch.rand(4, 3, 8, 8, requires_grad=case == "pixel gradients")
    embedder.train()
    embedder(images)
    embedder(images)
    assert calls == [4, 4] and len(embedder.feature_cache) == 0
    if case == "pixel gradients":
        embedder(images)[0].sum().backward()
        assert images.grad is not None and images.grad.abs().sum() > 0


def test_a_shifting_embedder_caches_at_predict_time():
    embedder, calls = _embedder(random_shift=2)
    images = torch.rand(4, 3, 8, 8)
    embedder.eval()
    embedder(images)
    embedder(images)
    assert calls == [4]


def test_new_weights_or_a_move_forget_the_cache():
    embedder, calls = _embedder()
    images = torch.rand(3, 3, 8, 8)
    embedder.eval()
    embedder(images)
    state = {key: value + 1 if key.startswith("stem.0.weight") else value for key, value in embedder.state_dict().items()}
    before, _ = embedder(images)
    embedder.load_state_dict(state)
    after, _ = embedder(images)
    assert calls == [3, 3] and not torch.allclose(before, after)
    embedder.double()
    assert len(embedder.feature_cache) == 0


def test_copies_start_empty_and_the_embedder_still_pickles():
    embedder, _ = _embedder(count=False)  # a test's lambda hook would not pickle
    embedder(torch.rand(2, 3, 8, 8))
    assert len(copy.deepcopy(embedder).feature_cache) == 0
    restored = pickle.loads(pickle.dumps(embedder))
    assert len(restored.feature_cache) == 0 and len(embedder.feature_cache) == 2


def test_past_its_memory_budget_the_cache_stops_growing_and_stays_right():
    stem = nn.Conv2d(3, 8, 4, stride=4)  # 8 x 2 x 2 float32 features: 128 bytes an image
    cache = FrozenFeatureCache(max_bytes=3 * 128)
    cache.enabled = True
    images = torch.rand(5, 3, 8, 8)
    features = cache(stem, images)
    assert len(cache) == 3 and cache.bytes == 384
    torch.testing.assert_close(features, stem(images))
    torch.testing.assert_close(cache(stem, images), stem(images))


def test_a_fit_runs_the_frozen_stem_once_per_image_and_keeps_no_cache(tiny, monkeypatch):
    from skorch.callbacks import Callback

    from tabformer import TabFormerClassifier
    from tabformer.tokenizers import PatchTokenizer

    class CacheLog(Callback):
        def initialize(self):
            self.seen = []
            return self

        def on_epoch_end(self, net, **kwargs):
            cache = net.module_.embedder.feature_cache
            self.seen.append((len(cache), cache.hits))

    X = np.random.default_rng(0).integers(0, 256, (40, 16, 16), dtype=np.uint8)
    y = np.arange(40) % 2
    log = CacheLog()
    tokenizer = PatchTokenizer(backbone="tf_efficientnet_lite0", backbone_weights=None, freeze_backbone=True, image_size=16)
    kwargs = dict(tiny, max_epochs=3, validation_fraction=0.25, patience=None)
    clf = TabFormerClassifier(tokenizer=tokenizer, callbacks=[log], random_state=0, **kwargs).fit(X, y)
    # 30 training + 10 validation images enter once; epochs 2 and 3 read all 40 from the cache.
    assert log.seen == [(40, 0), (40, 40), (40, 80)]
    cache = clf.module_.embedder.feature_cache
    assert len(cache) == 0 and not cache.enabled
    # The same fit with the stem run at every step: the same model, to float rounding.
    monkeypatch.setattr(_recipes, "caching_frozen_features", lambda module: contextlib.nullcontext())
    bare = CacheLog()
    uncached = TabFormerClassifier(tokenizer=tokenizer, callbacks=[bare], random_state=0, **kwargs).fit(X, y)
    assert bare.seen == [(0, 0)] * 3
    np.testing.assert_allclose(uncached.predict_proba(X), clf.predict_proba(X), atol=1e-5)
