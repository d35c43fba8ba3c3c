"""load_fashion_mnist reads the Debian package's idx files."""

import os

import numpy as np
import pytest

from tabformer.datasets import MissingDatasetError
from tabformer.datasets.images import FASHION_MNIST_DIR, load_fashion_mnist


@pytest.mark.skipif(not os.path.isdir(FASHION_MNIST_DIR), reason="apt-get install -y dataset-fashion-mnist")
def test_fashion_mnist_test_split():
    images, labels = load_fashion_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.dtype == np.int64 and np.bincount(labels).tolist() == [1000] * 10


def test_missing_dataset_names_the_install_command(tmp_path):
    with pytest.raises(MissingDatasetError, match="apt-get install -y dataset-fashion-mnist"):
        load_fashion_mnist("train", directory=str(tmp_path))
    with pytest.raises(ValueError, match="split must be"):
        load_fashion_mnist("valid")
