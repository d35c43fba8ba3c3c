"""Image datasets that ship in Debian packages (no network needed).

Re-exported by :mod:`tabformer.datasets` (``from tabformer.datasets import load_fashion_mnist``).
"""

from __future__ import annotations

import gzip
import os

import numpy as np

from ._files import MissingDatasetError

__all__ = ["load_fashion_mnist", "FASHION_MNIST_CLASSES"]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_INSTALL = "apt-get update && apt-get install -y dataset-fashion-mnist"
#: Fashion-MNIST class names, indexed by label
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)


def _read_idx(path: str, header: int, ndim: int) -> np.ndarray:
    with gzip.open(path, "rb") as handle:
        raw = handle.read()
    magic = int.from_bytes(raw[:4], "big")
    # idx magic: two zero bytes, type 0x08 (uint8), then the number of dimensions.
    if magic != 0x0800 + ndim:
        raise ValueError(f"{path} is not an idx file of {ndim}-D uint8 data (magic {magic:#x})")
    shape = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=header)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header announces shape {shape} but holds {data.size} values")
    return data.reshape(shape)


def load_fashion_mnist(split: str = "train", directory: str | None = None):
    """Fashion-MNIST (Zalando): 28x28 grey clothing images in 10 classes.

    Parameters
    ----------
    split : {"train", "test"}, default="train"
        60,000 training or 10,000 test images.
    directory : str or None, default=None
        Where the ``*-ubyte.gz`` files are; default the Debian package's
        ``/usr/share/datasets/fashion-mnist``.

    Returns
    -------
    images : ndarray of shape (n, 28, 28), uint8
    labels : ndarray of shape (n,), int64
        Classes 0..9 (names in ``FASHION_MNIST_CLASSES``).

    Raises
    ------
    MissingDatasetError
        If the files are not in ``directory`` (the message names the apt-get command).
    ValueError
        If ``split`` is unknown or a file is not a valid idx file.
    """
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    directory = directory or FASHION_MNIST_DIR
    images_path = os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz")
    labels_path = os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz")
    if not (os.path.exists(images_path) and os.path.exists(labels_path)):
        raise MissingDatasetError(f"Fashion-MNIST is not in {directory}; install it with:  {FASHION_MNIST_INSTALL}")
    images = _read_idx(images_path, header=16, ndim=3)
    labels = _read_idx(labels_path, header=8, ndim=1).astype(np.int64)
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels in {directory}")
    return images, labels
