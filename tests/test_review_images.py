"""Images and their pretraining as a review ran them (stop 37): each case answered wrong without
a word, or refused a fix it had itself suggested, before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.estimators._image_recipes import stem_settings
from tabformer.tokenizers import PatchTokenizer

SMALL = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1, verbose=0, random_state=0)


def test_images_the_recipe_upscales_must_keep_the_training_size():
    """The stem recipe resized any image to 64 px: one (8, 8, 3) image gave 8 answers, silently."""
    assert stem_settings((8, 8))["accept_any_size"] is False
    colour = np.random.default_rng(0).integers(0, 256, (20, 8, 8, 3), dtype=np.uint8)
    tok = PatchTokenizer(patch_size=4, image_size=16, accept_any_size=False).fit(colour)
    assert tok.transform(colour[:2])["pixels"].shape[-2:] == (16, 16)
    with pytest.raises(ValueError, match=r"X of shape \(8, 8, 3\) reads as 8 grey images.*pass \[X\] or X\[None\]"):
        tok.transform(colour[0])
    # accept_any_size=True resizes any size, but no one means 8 grey images 3 pixels wide (stop 38: refused too)
    with pytest.raises(ValueError, match=r"reads as 8 grey images 8x3 pixels"):
        PatchTokenizer(patch_size=4, image_size=16).fit(colour).transform(colour[0])


def test_8_bit_images_into_a_16_bit_model_are_refused():
    deep = np.random.default_rng(0).integers(0, 65536, (10, 8, 8), dtype=np.uint16)
    tok = PatchTokenizer(patch_size=4).fit(deep)
    with pytest.raises(ValueError, match=r"image 0 is 8-bit \(uint8\) but the tokenizer was fitted on 16-bit images"):
        tok.transform((deep[:2] // 257).astype(np.uint8))


def test_auto_pretraining_of_an_image_only_frame_is_simclr():
    images = list(np.random.default_rng(0).integers(0, 256, (40, 8, 8), dtype=np.uint8))
    pre = TabFormerPretrainer(**SMALL, batch_size=8).fit(pd.DataFrame({"photo": images, "size": np.arange(40.0)}))
    assert pre.resolved_params_["objective"] == "simclr"


def test_fine_tuning_on_larger_images_takes_the_pretrained_size_it_suggests():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (40, 8, 8), dtype=np.uint8)
    pre = TabFormerPretrainer(**SMALL, objective="simclr", batch_size=8).fit(small)
    big = np.kron(small, np.ones((1, 2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="image 0 is 16x16 but the tokenizer was fitted on 8x8 images; set image_size"):
        TabFormerClassifier(**SMALL, encoder=pre.encoder_).fit(big, [0, 1] * 20)
    clf = TabFormerClassifier(**SMALL, encoder=pre.encoder_, tokenizer__image_size=(8, 8)).fit(big, [0, 1] * 20)
    assert clf.predict(big).shape == (40,)


def test_a_continued_simclr_fit_checks_its_batch_rows_before_training():
    """partial_fit trained a whole epoch, then failed in NT-Xent, leaving a changed model."""
    images = np.random.default_rng(0).integers(0, 256, (40, 8, 8), dtype=np.uint8)
    pre = TabFormerPretrainer(**SMALL, objective="simclr", batch_size=8).fit(images)
    before = pre.transform(images[:4])
    with pytest.raises(ValueError, match=r"needs at least 2 rows in the validation holdout.* leaves 1 there"):
        pre.partial_fit(images[:5])
    assert len(pre.history_) == 1
    np.testing.assert_array_equal(pre.transform(images[:4]), before)
    with pytest.raises(ValueError, match=r"needs at least 2 rows in the rows left to train on.* leaves 1 there"):
        TabFormerPretrainer(**SMALL, objective="simclr", validation_fraction=0.5).fit(images[:3])


def test_one_image_path_alone_says_to_pass_a_list(tmp_path):
    from PIL import Image

    images = np.random.default_rng(0).integers(0, 256, (20, 8, 8), dtype=np.uint8)
    clf = TabFormerClassifier(**SMALL).fit(images, [0, 1] * 10)
    Image.fromarray(images[0]).save(tmp_path / "digit.png")
    with pytest.raises(ValueError, match=r"X is one image's path, .*digit\.png.*: pass \[path\]"):
        clf.predict(str(tmp_path / "digit.png"))
    assert clf.predict([str(tmp_path / "digit.png")]).shape == (1,)


@pytest.mark.parametrize(
    "setting, message",
    [
        ({"objective__projection_dim": 0}, "objective__projection_dim must be an int > 0"),
        ({"objective__crop_scale": (0, 0)}, r"objective__crop_scale must be \(low, high\) with 0 < low <= high <= 1"),
        ({"objective__blur_kernel": 4}, "objective__blur_kernel must be an odd int"),
    ],
)
def test_simclr_settings_that_train_nothing_are_refused_naming_them(setting, message):
    images = np.random.default_rng(0).integers(0, 256, (20, 8, 8), dtype=np.uint8)
    with pytest.raises(ValueError, match=message):
        TabFormerPretrainer(**SMALL, objective="simclr", batch_size=8, **setting).fit(images)
