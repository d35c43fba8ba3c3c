"""Image augmentations for contrastive pretraining (torchvision transforms v2).

SimCLR's recipe (Chen et al., 2020): random resized crop, horizontal flip, colour jitter
and random grayscale (colour images only: on grey images saturation, hue and grayscale
do nothing), and Gaussian blur. Views are drawn afresh at every access, so every epoch
sees new ones, from a seed stream that makes a run reproducible without touching the
caller's global RNG.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = ["image_augmentation", "TwoViewDataset"]


def image_augmentation(
    image_size,
    n_channels: int,
    *,
    crop_scale=(0.3, 1.0),
    crop_ratio=(3 / 4, 4 / 3),
    flip_p=0.5,
    jitter_p=0.8,
    brightness=0.4,
    contrast=0.4,
    saturation=0.4,
    hue=0.1,
    grayscale_p=0.2,
    blur_p=0.5,
    blur_sigma=(0.1, 2.0),
    blur_kernel=3,
):
    """The SimCLR view transform for ``(C, H, W)`` float images in ``[0, 1]``.

    Parameters
    ----------
    image_size : (int, int)
        Output size of the random resized crop (the tokenizer's fitted size).
    n_channels : int
        1 (grey: no saturation, hue or grayscale step) or 3.
    crop_scale, crop_ratio : pairs of float
        Area fraction and aspect-ratio range of the random crop. SimCLR uses
        ``(0.08, 1)`` on ImageNet; small low-resolution images keep more of the object.
    flip_p : float
        Probability of a horizontal flip.
    jitter_p, brightness, contrast, saturation, hue : float
        Colour jitter, applied with probability ``jitter_p``.
    grayscale_p : float
        Probability of turning a colour view grey.
    blur_p, blur_sigma, blur_kernel
        Gaussian blur probability, sigma range and (odd) kernel size.

    Returns
    -------
    torchvision.transforms.v2.Compose
    """
    from torchvision.transforms import v2

    steps = [v2.RandomResizedCrop(tuple(image_size), scale=tuple(crop_scale), ratio=tuple(crop_ratio), antialias=True)]
    if flip_p:
        steps.append(v2.RandomHorizontalFlip(flip_p))
    colour = n_channels == 3
    jitter = v2.ColorJitter(brightness, contrast, saturation if colour else 0, hue if colour else 0)
    if jitter_p and (brightness or contrast or (colour and (saturation or hue))):
        steps.append(v2.RandomApply([jitter], p=jitter_p))
    if colour and grayscale_p:
        steps.append(v2.RandomGrayscale(grayscale_p))
    if blur_p:
        steps.append(v2.RandomApply([v2.GaussianBlur(blur_kernel, tuple(blur_sigma))], p=blur_p))
    return v2.Compose(steps)


class TwoViewDataset(Dataset):
    """Two independently augmented views of every image, new ones at every access.

    Yields ``({"view1": (C, H, W), "view2": (C, H, W)}, 0.0)``, so the default collate
    (or skorch's) stacks them into batches of the same keys.

    Parameters
    ----------
    pixels : ndarray or Tensor of shape (N, C, H, W), float in [0, 1]
    transform : callable
        ``(C, H, W) -> (C, H, W)``, e.g. :func:`image_augmentation`.
    random_state : int or None
        Seeds the stream of per-batch seeds; torchvision draws from the global torch
        RNG, which is forked around each batch so the caller's state is untouched.
    """

    def __init__(self, pixels, transform, random_state=None):
        self.pixels = torch.as_tensor(np.ascontiguousarray(pixels) if isinstance(pixels, np.ndarray) else pixels)
        if self.pixels.ndim != 4:
            raise ValueError(f"pixels must be (N, C, H, W), got shape {tuple(self.pixels.shape)}")
        self.transform = transform
        self.seeds = np.random.default_rng(random_state)

    def __len__(self) -> int:
        return len(self.pixels)

    def __getitem__(self, index):
        return self.__getitems__([index])[0]

    def __getitems__(self, indices):
        seed = int(self.seeds.integers(2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return [
                ({"view1": self.transform(self.pixels[i]), "view2": self.transform(self.pixels[i])}, 0.0)
                for i in indices
            ]
