"""Pixel depths and kinds that used to be scaled wrongly without a word (``tokenizers/_pixels.py``,
``_image_io.py``; each case found by a review of image inputs)."""

import warnings

import numpy as np
import pytest
from PIL import Image

from tabformer.tokenizers import PatchTokenizer


@pytest.fixture
def grey():
    return np.random.default_rng(0).integers(0, 256, (6, 8, 8)).astype(np.uint8)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_wide_integer_images_are_read_by_their_values_not_their_dtypes_maximum(grey, dtype):
    # numpy's default int64 once meant a scale of 9.2e18: every pixel ~1e-17, constant predictions.
    wide = PatchTokenizer(patch_size=4).fit(grey.astype(dtype))
    narrow = PatchTokenizer(patch_size=4).fit(grey)
    assert wide.pixel_scale_ == 255.0
    np.testing.assert_allclose(wide.transform(grey.astype(dtype))["pixels"], narrow.transform(grey)["pixels"], rtol=1e-6)
    sixteen = PatchTokenizer(patch_size=4).fit(grey.astype(np.int32) * 200)
    assert sixteen.pixel_scale_ == 65535.0
    with pytest.raises(ValueError, match=r"integer pixels go up to 100000 \(dtype int64\): .*8-bit .* or 16-bit"):
        PatchTokenizer(patch_size=4).fit(np.full((2, 8, 8), 100_000, dtype=np.int64))


def test_one_fit_refuses_images_of_two_kinds_or_depths(grey):
    floats = [image / 255.0 for image in grey[:3]]
    with pytest.raises(ValueError, match=r"image 0 has 255-level integer pixels and image 3 float pixels"):
        PatchTokenizer(patch_size=4).fit(list(grey[:3]) + floats)
    with pytest.raises(ValueError, match=r"image 0 has 255-level integer pixels and image 1 65535-level integer pixels"):
        PatchTokenizer(patch_size=4).fit([grey[0], grey[1].astype(np.uint16) * 257])
    assert PatchTokenizer(patch_size=4, pixel_scale=255).fit(list(grey[:3]) + floats).pixel_scale_ == 255  # the user's rule


def test_a_deeper_integer_image_at_predict_is_refused_not_clipped(grey):
    tokenizer = PatchTokenizer(patch_size=4).fit(grey)
    with pytest.raises(
        ValueError, match=r"image 0 has pixels up to \d+ \(dtype uint16\), but the training images were 255-level"
    ):
        tokenizer.transform(grey.astype(np.uint16) * 257)
    tokenizer.transform(grey.astype(np.int64))  # same depth, other dtype: fine


def test_a_batch_of_unit_floats_for_a_0_255_float_fit_warns(grey):
    tokenizer = PatchTokenizer(patch_size=4).fit(grey.astype(np.float32))
    with pytest.warns(UserWarning, match=r"every image of this input has float pixels at or under 1, but .* went up to 25\d"):
        tokenizer.transform(grey.astype(np.float32) / 255)


@pytest.mark.parametrize(
    "mode, array",
    [("I;16", np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000), ("F", np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8))],
)
def test_16_bit_and_float_pil_images_keep_their_depth(tmp_path, mode, array):
    # convert("L") clipped 16-bit values to 255 and truncated [0, 1] floats to 0: one grey level for all.
    image = Image.fromarray(array, mode=mode) if mode == "F" else Image.fromarray(array)
    path = tmp_path / "deep.tif"
    image.save(path)
    pixels = PatchTokenizer(patch_size=4, normalize=False).fit([path, image]).transform([path])["pixels"]
    assert len(np.unique(pixels)) > 32  # the gradient survives
    np.testing.assert_allclose(pixels[0, 0], array / (65535.0 if mode == "I;16" else 1.0), atol=1e-6)  # 16-bit: /65535


@pytest.mark.parametrize(
    "images, match",
    [
        ([np.zeros((0, 0), np.uint8)] * 2, r"image 0 is empty: its height x width is 0x0"),
        (np.zeros((2, 0, 8), np.uint8), r"every image is empty: its height x width is 0x8"),
        (np.ones((2, 8, 8), np.complex128), r"every image has complex pixels \(dtype complex128\)"),
        ([np.ones((8, 8), np.complex64)], r"image 0 has complex pixels"),
    ],
)
def test_empty_and_complex_images_are_refused_early(images, match):
    with pytest.raises(ValueError, match=match):
        PatchTokenizer(patch_size=4).fit(images)


def test_one_colour_image_passed_alone_gets_a_hint():
    image = np.zeros((8, 8, 3), np.uint8)  # read as 8 grey images of 8 x 3
    with pytest.raises(ValueError, match=r"X of shape \(8, 8, 3\) reads as 8 grey images 8x3 pixels; .* pass \[X\] or X\[None\]"):
        PatchTokenizer(patch_size=4).fit(image)
    assert PatchTokenizer(patch_size=4).fit(image[None]).n_channels_ == 3


def test_12_bit_images_in_uint16_warn_and_an_explicit_scale_reads_them():
    # Read as 0-65535, 12-bit data stays under 6% of white: the frozen ImageNet stem saw nearly black images
    images = (np.random.default_rng(0).random((40, 8, 8)) * 4095).astype(np.uint16)
    with pytest.warns(UserWarning, match=r"16-bit images go up to \d+ of 65535 .* tokenizer__pixel_scale=4095"):
        PatchTokenizer(patch_size=4).fit(images)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PatchTokenizer(patch_size=4, pixel_scale=4095).fit(images)  # the user's scale: no warning
        PatchTokenizer(patch_size=4).fit(images * 16)  # the full 16-bit range
