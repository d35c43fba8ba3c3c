"""Remember a frozen CNN stem's feature maps per image, so each image goes through the stem once.

A frozen stem in eval mode is a fixed function of the pixels, yet a fit runs it on every
training image at every epoch and on every validation image at every epoch: on CPU it is
about 90% of a mixed image + text fit (emoji, 800 rows, 2 epochs: 12.6 of 14 s in the stem).
Keyed by the image's bytes, a repeated image costs a hash instead of a forward pass.

The cache is on only inside :func:`caching_frozen_features` (the supervised estimators' fit
loop): a fitted model holds no cached memory, and ``predict`` computes exactly as before.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager

import torch

__all__ = ["CachedStemModule", "FrozenFeatureCache", "caching_frozen_features", "clear_feature_cache"]

#: Memory for cached feature maps per embedder. EfficientNet-Lite0's stage 5 on a 64x64 image is
#: 320 x 2 x 2 floats (5 KiB), so this holds about 100k images; past it, images are recomputed.
DEFAULT_MAX_BYTES = 512 * 2**20


class FrozenFeatureCache:
    """Feature maps of a frozen stem, looked up by a hash of each image's pixels.

    Embedders consult it only while ``enabled`` (see :func:`caching_frozen_features`).
    Only CPU tensors are cached: on a GPU the stem is cheap next to the copy a hash needs.
    Entries are stored in float32 whatever the autocast dtype, and never evicted: when
    ``max_bytes`` is reached, further images are computed every time. Copies of the owning
    module (``copy.deepcopy``, pickling) start empty.

    Parameters
    ----------
    max_bytes : int, default=512 MiB
        Memory the cached feature maps may take.

    Examples
    --------
    >>> import torch
    >>> cache = FrozenFeatureCache()
    >>> cache.enabled = True
    >>> stem = torch.nn.Conv2d(3, 8, 4, stride=4)
    >>> images = torch.rand(5, 3, 8, 8)
    >>> first = cache(stem, images)
    >>> torch.allclose(cache(stem, images), first), cache.hits
    (True, 5)
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.enabled = False
        self.clear()

    def clear(self) -> None:
        """Forget every cached feature map (after the stem's weights or device change)."""
        self._features: dict[bytes, torch.Tensor] = {}
        self.bytes = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._features)

    def __deepcopy__(self, memo):
        return FrozenFeatureCache(self.max_bytes)

    def __getstate__(self):
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state):
        self.__init__(state["max_bytes"])

    @staticmethod
    def key(image: torch.Tensor) -> bytes:
        """The lookup key of one ``(C, H, W)`` image: its shape, dtype and pixel bytes."""
        data = image.detach().contiguous().numpy().tobytes()
        return hashlib.blake2b(f"{tuple(image.shape)}{image.dtype}".encode() + data, digest_size=20).digest()

    def __call__(self, stem, pixels: torch.Tensor) -> torch.Tensor:
        """``stem(pixels)``, with each image's feature map read from the cache when it is there.

        Parameters
        ----------
        stem : callable
            Maps ``(B, C, H, W)`` pixels to ``(B, C', h, w)`` features; must be deterministic.
        pixels : Tensor of shape (B, C, H, W), on the CPU

        Returns
        -------
        features : Tensor of shape (B, C', h, w), float32
        """
        keys = [self.key(image) for image in pixels]
        missing = [i for i, key in enumerate(keys) if key not in self._features]
        self.hits += len(keys) - len(missing)
        computed = {}
        if missing:
            fresh = stem(pixels[missing]).float()
            for i, features in zip(missing, fresh):
                computed[i] = features
                size = features.numel() * features.element_size()
                if keys[i] not in self._features and self.bytes + size <= self.max_bytes:
                    self._features[keys[i]] = features.clone()  # not a view pinning the whole batch
                    self.bytes += size
        return torch.stack([computed[i] if i in computed else self._features[key] for i, key in enumerate(keys)])


@contextmanager
def caching_frozen_features(module: torch.nn.Module):
    """Turn on every :class:`FrozenFeatureCache` in ``module`` for the ``with`` block, then empty them.

    Parameters
    ----------
    module : nn.Module
        A model whose image embedders may own a ``feature_cache``.

    Examples
    --------
    >>> import torch
    >>> with caching_frozen_features(torch.nn.Linear(2, 2)):
    ...     pass
    """
    owned = (getattr(part, "feature_cache", None) for part in module.modules())
    caches = [cache for cache in owned if isinstance(cache, FrozenFeatureCache)]
    for cache in caches:
        cache.enabled = True
    try:
        yield caches
    finally:
        for cache in caches:
            cache.enabled = False
            cache.clear()


def clear_feature_cache(module, incompatible_keys=None) -> None:
    """Empty ``module.feature_cache``: a ``load_state_dict`` post-hook (loaded weights make cached
    features stale), a module-level function so that the embedder owning it still pickles.

    Parameters
    ----------
    module : nn.Module
        An embedder with a ``feature_cache``.
    incompatible_keys : ignored
        What ``load_state_dict`` passes its post-hooks.
    """
    module.feature_cache.clear()


class CachedStemModule(torch.nn.Module):
    """Base of the embedders owning a ``feature_cache`` (a frozen stem's outputs): the cache is
    emptied when the module moves to another device or dtype, and when weights are loaded."""

    def __init__(self):
        super().__init__()
        self.register_load_state_dict_post_hook(clear_feature_cache)

    def _apply(self, fn, *args, **kwargs):
        if hasattr(self, "feature_cache"):
            self.feature_cache.clear()  # a new device or dtype
        return super()._apply(fn, *args, **kwargs)
