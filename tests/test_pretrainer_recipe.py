"""The pretrainer's "auto" settings follow the supervised recipes where their rule fits: an image's patch grid,
a table's batch size."""

import numpy as np
import pandas as pd
import pytest
from conftest import PRETRAINER_SMALL

from tabformer import TabFormerPretrainer
from tabformer.estimators._image_recipes import auto_patch_size

SMALL = PRETRAINER_SMALL
IMAGES_30 = np.random.default_rng(0).random((8, 30, 30)).astype("float32")


def test_image_patch_size_resolves_as_the_classifiers():
    # The tokenizer's default patch of 4 refused 30x30 images, which the classifier reads with its auto patch.
    pre = TabFormerPretrainer(**SMALL).fit(IMAGES_30)
    assert pre.tokenizer_.patch_size == pre.resolved_params_["tokenizer__patch_size"] == auto_patch_size(30, 30) == 6
    assert "tokenizer__patch_size" not in pre.get_params()
    assert pre.transform(IMAGES_30).shape == (8, 16)
    images_28 = IMAGES_30[:, :28, :28]
    resized = TabFormerPretrainer(**SMALL, tokenizer__image_size=(30, 30)).fit(images_28)
    assert resized.tokenizer_.patch_size == 6  # the size the images are resized to decides
    assert TabFormerPretrainer(**SMALL, tokenizer__image_size=(28, 28)).fit(IMAGES_30).tokenizer_.patch_size == 4


def test_images_the_default_patch_divides_keep_it():
    # A review: the auto patch applied to every size, so 28/32/64 px images that pretrained with the
    # tokenizer's default patch of 4 (49/64/256 tokens) got 7/8/16 (16 tokens): it is for the sizes 4 refused.
    for side in (28, 32):
        images = np.random.default_rng(0).random((8, side, side, 3)).astype("float32")
        pre = TabFormerPretrainer(**SMALL).fit(images)
        assert pre.tokenizer_.patch_size == 4 and "tokenizer__patch_size" not in pre.resolved_params_
        assert pre.tokenizer_.grid_shape_ == (side // 4, side // 4)


def test_image_patch_size_the_user_sets_is_kept_and_checked():
    pre = TabFormerPretrainer(**SMALL, tokenizer__patch_size=5).fit(IMAGES_30)
    assert pre.tokenizer_.patch_size == 5
    with pytest.raises(ValueError, match="image size 30x30 is not divisible by patch_size=7"):
        TabFormerPretrainer(**SMALL, tokenizer__patch_size=7).fit(IMAGES_30)


def test_table_batch_size_follows_the_rows_as_a_classifiers():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.choice(list("xyz"), 200)})
    # 128 rows a batch left 200 rows two steps an epoch; the supervised table rule gives 16 (13 steps here)
    pre = TabFormerPretrainer(**SMALL).fit(X)
    assert pre.resolved_params_["batch_size"] == 16 and pre.get_params()["batch_size"] == "auto"
    assert len(pre.history_[-1]["batches"]) == 13
    assert TabFormerPretrainer(**SMALL, batch_size=64).fit(X).resolved_params_["batch_size"] == 64
    # SimCLR keeps its large batch: NT-Xent's negatives are the batch's other rows
    images = rng.random((8, 8, 8)).astype("float32")
    assert TabFormerPretrainer(**SMALL, tokenizer__patch_size=4).fit(images).resolved_params_["batch_size"] == 128
