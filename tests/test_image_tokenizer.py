"""PatchTokenizer: input kinds, sizes, channels, normalisation, patches and errors."""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from tabformer.tokenizers import PatchTokenizer, TabularTokenizer, make_tokenizer
from tabformer.tokenizers.detect import looks_like_images

Image = pytest.importorskip("PIL.Image")


@pytest.fixture
def grey():
    return np.random.default_rng(0).integers(0, 256, (6, 12, 12), dtype=np.uint8)


def test_grey_uint8_array_scaled_to_unit_and_gridded(grey):
    tok = PatchTokenizer(patch_size=4).fit(grey)
    pixels = tok.transform(grey)["pixels"]
    assert pixels.shape == (6, 1, 12, 12) and pixels.dtype == np.float32
    np.testing.assert_allclose(pixels[:, 0], grey / 255.0, atol=1e-6)
    assert tok.grid_shape_ == (3, 3) and tok.n_tokens_ == 9 and tok.pixel_scale_ == 255.0
    np.testing.assert_allclose(tok.mean_, [grey.mean() / 255.0], rtol=1e-5)


def test_float_images_above_one_scaled_by_training_max():
    images = np.random.default_rng(1).uniform(0, 16, (4, 8, 8))
    tok = PatchTokenizer().fit(images)
    assert tok.pixel_scale_ == pytest.approx(images.max())
    assert tok.transform(images)["pixels"].max() <= 1.0


def test_colour_channels_last_and_grey_replicated_into_colour():
    colour = np.random.default_rng(2).random((3, 8, 8, 3)).astype(np.float32)
    tok = PatchTokenizer(patch_size=4).fit(colour)
    assert tok.n_channels_ == 3 and tok.mean_.shape == (3,)
    grey = np.random.default_rng(3).random((2, 8, 8)).astype(np.float32)
    pixels = tok.transform(grey)["pixels"]
    assert pixels.shape == (2, 3, 8, 8)
    np.testing.assert_array_equal(pixels[:, 0], pixels[:, 2])


def test_colour_image_rejected_by_grey_tokenizer(grey):
    tok = PatchTokenizer(patch_size=4).fit(grey)
    with pytest.raises(ValueError, match="image 1 has 3 channels"):
        tok.transform([grey[0], np.zeros((12, 12, 3), np.uint8)])


def test_pil_images_and_files(tmp_path, grey):
    paths = []
    for i, image in enumerate(grey):
        path = tmp_path / f"im{i}.png"
        Image.fromarray(image).save(path)
        paths.append(str(path))
    from_arrays = PatchTokenizer(patch_size=4).fit(grey).transform(grey)["pixels"]
    from_files = PatchTokenizer(patch_size=4).fit(paths).transform(paths)["pixels"]
    from_pil = (
        PatchTokenizer(patch_size=4)
        .fit([Image.fromarray(g) for g in grey])
        .transform([Image.fromarray(g) for g in grey])["pixels"]
    )
    np.testing.assert_allclose(from_files, from_arrays, atol=1e-6)
    np.testing.assert_allclose(from_pil, from_arrays, atol=1e-6)
    rgb = Image.fromarray(np.zeros((12, 12, 3), np.uint8))
    assert PatchTokenizer(patch_size=4).fit([rgb, Image.fromarray(grey[0])]).n_channels_ == 3


def test_unreadable_and_missing_files_are_named(tmp_path, grey):
    tok = PatchTokenizer(patch_size=4).fit(grey)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    with pytest.raises(ValueError, match=r"image 0: file .*broken.png.* cannot be read"):
        tok.transform([str(broken)])
    with pytest.raises(ValueError, match=r"image 1: file .*missing.png.* does not exist"):
        tok.transform([grey[0], str(tmp_path / "missing.png")])


def test_mixed_sizes_need_resize(grey):
    mixed = [grey[0], np.zeros((16, 16), np.uint8), grey[1]]
    with pytest.raises(ValueError, match="image 1 is 16x16.*tokenizer__image_size"):
        PatchTokenizer(patch_size=4).fit(mixed)
    tok = PatchTokenizer(patch_size=4).fit(grey)
    with pytest.raises(ValueError, match="image 1 is 16x16 but the tokenizer was fitted on 12x12"):
        tok.transform(mixed)
    resized = PatchTokenizer(patch_size=4, image_size=8).fit(mixed)
    assert resized.transform(mixed)["pixels"].shape == (3, 1, 8, 8)
    assert resized.grid_shape_ == (2, 2)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros((4, 3, 8, 8)), "channels-first"),
        (np.zeros((4, 64)), "table"),
        (np.zeros((2, 8, 8, 5)), "C = 1 or 3"),
        ([np.zeros((8, 8, 7))], "image 0 has shape"),
        ([np.array(["a", "b"], dtype=object)], "image 0 is not numeric"),
        ([], "0 images"),
    ],
)
def test_wrong_shapes_raise_clear_errors(X, match):
    with pytest.raises(ValueError, match=match):
        PatchTokenizer().fit(X)


def test_patch_size_must_divide_image():
    with pytest.raises(ValueError, match="not divisible by patch_size=5"):
        PatchTokenizer(patch_size=5).fit(np.zeros((2, 12, 12)))


def test_each_token_sees_only_its_patch_and_has_its_position(grey):
    tok = PatchTokenizer(patch_size=4).fit(grey)
    embedder = tok.build_embedder(16)
    pixels = torch.from_numpy(tok.transform(grey)["pixels"])
    tokens, mask = embedder(pixels=pixels)
    assert tokens.shape == (6, 9, 16) and mask is None
    changed = pixels.clone()
    changed[:, :, 0:4, 4:8] += 0.5  # patch (row 0, column 1) = token 1
    delta = (embedder(pixels=changed)[0] - tokens).abs().sum(dim=(0, 2))
    assert delta[1] > 0 and torch.all(delta[[0, 2, 3, 4, 5, 6, 7, 8]] == 0)
    blank, _ = embedder(pixels=torch.zeros(1, 1, 12, 12))
    assert not torch.allclose(blank[0, 0], blank[0, 1])  # learned positions differ per cell


def test_conv_stem_lets_a_token_see_the_pixels_around_its_patch(grey):
    """Two 3x3 convolutions widen a token's view by 2 pixels each side: a change just outside
    a patch reaches it (a plain patch token would not move), one 3 pixels away does not."""
    tok = PatchTokenizer(patch_size=4, conv_stem=(8, 16)).fit(grey)
    assert tok.embedder_spec()["conv_stem"] == [8, 16]
    embedder = tok.build_embedder(16).eval()  # BatchNorm's running statistics
    assert [type(layer).__name__ for layer in embedder.stem] == ["Conv2d", "BatchNorm2d", "GELU"] * 2
    assert embedder.projection.in_channels == 16
    pixels = torch.from_numpy(tok.transform(grey)["pixels"])
    tokens, _ = embedder(pixels=pixels)
    near, far = pixels.clone(), pixels.clone()
    near[:, :, 0:4, 9] += 0.5  # 2 pixels right of token 1's patch (columns 4-7)
    far[:, :, 0:4, 10] += 0.5  # 3 pixels right of it
    assert (embedder(pixels=near)[0] - tokens)[:, 1].abs().sum() > 0
    assert torch.equal(embedder(pixels=far)[0][:, 1], tokens[:, 1])
    assert len(PatchTokenizer(patch_size=4).fit(grey).build_embedder(16).stem) == 0  # () is the plain ViT


@pytest.mark.parametrize("conv_stem", [(0, 8), "32", (8.0,), 16, (True,), None])
def test_conv_stem_widths_must_be_positive_ints(conv_stem, grey):
    with pytest.raises(ValueError, match="conv_stem must be a tuple of positive ints"):
        PatchTokenizer(patch_size=4, conv_stem=conv_stem).fit(grey)


def test_a_patch_model_pickled_before_conv_stems_still_predicts(grey):
    """Pickles of 0.x models lack the ``stem`` module and the ``conv_stem`` parameter."""
    import pickle

    tok = PatchTokenizer(patch_size=4).fit(grey)
    embedder = tok.build_embedder(8).eval()
    expected = embedder(pixels=torch.from_numpy(tok.transform(grey)["pixels"]))[0]
    del embedder._modules["stem"], tok.__dict__["conv_stem"]  # what an old pickle restores
    tok, embedder = pickle.loads(pickle.dumps(tok)), pickle.loads(pickle.dumps(embedder))
    assert tok.get_params()["conv_stem"] == () and tok.embedder_spec()["conv_stem"] == []
    torch.testing.assert_close(embedder(pixels=torch.from_numpy(tok.transform(grey)["pixels"]))[0], expected)


def test_conv_stem_and_backbone_are_two_stems():
    with pytest.raises(ValueError, match="two stems: set one of them"):
        PatchTokenizer(backbone="resnet18", conv_stem=(8,)).fit(np.zeros((2, 16, 16)))


def test_fitted_normalisation_standardises_training_pixels(grey):
    tok = PatchTokenizer(patch_size=4).fit(grey)
    normed = tok.build_embedder(8).norm(torch.from_numpy(tok.transform(grey)["pixels"]))
    assert abs(float(normed.mean())) < 1e-5 and abs(float(normed.std()) - 1) < 1e-3


def test_auto_detects_images_but_not_text_or_tables(tmp_path, grey):
    path = tmp_path / "a.png"
    Image.fromarray(grey[0]).save(path)
    for X in (grey, grey[..., None], [Image.fromarray(grey[0])], [str(path)], list(grey)):
        assert looks_like_images(X)
        assert isinstance(make_tokenizer("auto", X), PatchTokenizer)
    assert not looks_like_images(["a sentence", "another one"])
    assert isinstance(make_tokenizer("auto", np.zeros((5, 3))), TabularTokenizer)
    assert isinstance(make_tokenizer("patch"), PatchTokenizer)


def test_clone_and_unfitted_errors(grey):
    tok = PatchTokenizer(patch_size=3, image_size=(9, 9))
    assert clone(tok).get_params() == tok.get_params()
    with pytest.raises(Exception, match="not fitted"):
        tok.transform(grey)


def test_random_shift_translates_training_batches_only(grey):
    from tabformer.nn.embedders.image import shift_images

    pixels = torch.rand(64, 1, 12, 12)
    shifted = shift_images(pixels, 2)
    for image, moved in zip(pixels, shifted):
        assert any(  # every output is the input translated by some (dy, dx) in [-2, 2]^2, zero-filled
            torch.equal(moved, torch.roll(torch.nn.functional.pad(image, (2, 2, 2, 2)), (dy, dx), (1, 2))[:, 2:-2, 2:-2])
            for dy in range(-2, 3)
            for dx in range(-2, 3)
        )
    assert not torch.equal(shifted, pixels)
    embedder = PatchTokenizer(patch_size=4, random_shift=2).fit(grey).build_embedder(8)
    batch = torch.from_numpy(PatchTokenizer(patch_size=4).fit(grey).transform(grey)["pixels"])
    embedder.eval()
    torch.testing.assert_close(embedder(pixels=batch)[0], embedder(pixels=batch)[0])
    embedder.train()
    assert not torch.equal(embedder(pixels=batch)[0], embedder(pixels=batch)[0])
