"""Images as they are stored: files, encoded bytes, Hugging Face image dicts and Parquet's nested lists.

Each form must read as the same pixels as the in-memory arrays it came from, and must
get the same default recipe (patch size, or the frozen stem's settings) at ``fit``.
"""

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tabformer import TabFormerClassifier
from tabformer.estimators._image_recipes import frame_image_side, image_shape
from tabformer.tokenizers import PatchTokenizer
from tabformer.tokenizers._image_io import image_header
from tabformer.tokenizers.detect import infer_column_kind, is_image_bytes, nested_pixels

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SETTINGS = dict(
    encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=2, batch_size=16, verbose=0, random_state=0
)


@pytest.fixture(scope="module")
def colour():
    """24 colour 28x28 images whose label is their brightness, and that label."""
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 12)
    images = [np.clip(rng.normal(60 + 120 * label, 30, (28, 28, 3)), 0, 255).astype(np.uint8) for label in y]
    return images, y


def png_bytes(image):
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def forms(colour, tmp_path_factory):
    """The same images as arrays, paths, PNG bytes, Hugging Face dicts, nested lists and Parquet's object arrays."""
    images, _ = colour
    folder = tmp_path_factory.mktemp("images")
    paths = []
    for i, image in enumerate(images):
        Image.fromarray(image).save(folder / f"{i}.png")
        paths.append(str(folder / f"{i}.png"))
    parquet = folder / "nested.parquet"
    pq.write_table(pa.table({"image": [image.tolist() for image in images]}), parquet)
    return {
        "arrays": images,
        "paths": paths,
        "bytes": [png_bytes(image) for image in images],
        "hf_dicts": [{"bytes": png_bytes(image), "path": None} for image in images],
        "nested_lists": [image.tolist() for image in images],
        "parquet_objects": list(pd.read_parquet(parquet)["image"]),
    }


FORMS = ["paths", "bytes", "hf_dicts", "nested_lists", "parquet_objects"]


@pytest.mark.parametrize("form", FORMS)
def test_every_stored_form_reads_as_the_arrays_pixels(forms, form):
    stored = forms[form]
    assert infer_column_kind(pd.Series(stored, name="image")) == "image"
    expected = PatchTokenizer(patch_size=7).fit(forms["arrays"]).transform(forms["arrays"])["pixels"]
    np.testing.assert_array_equal(PatchTokenizer(patch_size=7).fit(stored).transform(stored)["pixels"], expected)
    assert image_header(stored[0]) == (28, 28, 3)
    assert image_shape(stored) == image_shape(forms["arrays"]) == (28, 28, 3)
    assert frame_image_side(pd.DataFrame({"size": range(24), "image": stored})) == (28, 28)


@pytest.mark.parametrize("form", ["paths", "bytes", "nested_lists"])
def test_stored_images_get_the_arrays_default_recipe_and_model(forms, colour, form):
    """Before, image paths resolved no patch size (and no stem): the recipe read only in-memory arrays."""
    _, y = colour
    frame = pd.DataFrame({"image": forms[form], "size": np.arange(24.0)})
    reference = pd.DataFrame({"image": forms["arrays"], "size": np.arange(24.0)})
    for X, X_ref in [(frame, reference), (forms[form], forms["arrays"])]:
        clf = TabFormerClassifier(**SETTINGS).fit(X, y)
        ref = TabFormerClassifier(**SETTINGS).fit(X_ref, y)
        assert clf.resolved_params_ == ref.resolved_params_
        np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X_ref), atol=1e-6)
    alone = TabFormerClassifier(**SETTINGS).fit(forms[form], y)
    assert alone.resolved_params_["tokenizer__patch_size"] == 7  # 28 px: a 4x4 grid


@pytest.mark.pretrained_stem
def test_image_paths_in_a_frame_get_the_frozen_stem(forms, colour):
    from tabformer.estimators._image_recipes import stem_available

    if not stem_available():
        pytest.skip("the stem's weights package is not installed")
    _, y = colour
    frame = pd.DataFrame({"image": forms["paths"], "size": np.arange(24.0)})
    clf = TabFormerClassifier(**dict(SETTINGS, max_epochs=1)).fit(frame, y)
    assert clf.resolved_params_["tokenizer__image__backbone"] == "tf_efficientnet_lite0"
    assert clf.resolved_params_["tokenizer__image__image_size"] == (64, 64)


def test_streamed_parquet_with_nested_list_images_fits_and_predicts(forms, colour, tmp_path):
    """A frame with an image column written to Parquet (arrays become lists of lists) streams."""
    images, y = colour
    path = tmp_path / "train.parquet"
    table = pa.table({"image": [image.tolist() for image in images], "size": np.arange(24.0), "label": y})
    pq.write_table(table, path, row_group_size=8)
    settings = dict(SETTINGS, validation_fraction=None, iterator_train__shuffle=False, fit_sample_size=24)
    streamed = TabFormerClassifier(**settings).fit(str(path), "label")
    in_memory = TabFormerClassifier(**settings).fit(pd.DataFrame({"image": images, "size": np.arange(24.0)}), y)
    inference_batch = "iterator_valid__batch_size"  # sized from the in-memory rows only
    assert {k: v for k, v in streamed.resolved_params_.items() if k != inference_batch} == {
        k: v for k, v in in_memory.resolved_params_.items() if k != inference_batch
    }
    frame = pd.DataFrame({"image": images, "size": np.arange(24.0)})
    np.testing.assert_allclose(streamed.predict_proba(frame), in_memory.predict_proba(frame), atol=1e-5)
    np.testing.assert_allclose(streamed.predict_proba(str(path)), streamed.predict_proba(frame), atol=1e-6)


def test_bytes_that_are_no_image_stay_categories_and_broken_images_are_named():
    assert not is_image_bytes(b"abc") and not is_image_bytes(b"BMW") and is_image_bytes(png_bytes(np.zeros((4, 4), np.uint8)))
    for format in ("BMP", "WEBP", "JPEG", "GIF", "TIFF"):
        buffer = io.BytesIO()
        Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(buffer, format=format)
        assert is_image_bytes(buffer.getvalue()), format
    assert infer_column_kind(pd.Series([b"a", b"b", b"a"], name="code")) == "categorical"
    truncated = png_bytes(np.zeros((8, 8), np.uint8))[:20]
    tok = PatchTokenizer(patch_size=4).fit([np.zeros((8, 8), np.uint8)])
    with pytest.raises(ValueError, match=r"image 1: its 20 bytes cannot be read as an image"):
        tok.transform([np.zeros((8, 8), np.uint8), truncated])


def test_ragged_or_non_numeric_nested_lists_are_no_images():
    assert nested_pixels([[1, 2], [3]]) is None  # ragged
    assert nested_pixels([["a", "b"], ["c", "d"]]) is None
    assert nested_pixels([1, 2, 3]) is None  # 1-D
    rows = np.empty(4, dtype=object)
    rows[:] = [np.arange(4)] * 4  # what pandas reads back from a Parquet list column
    assert nested_pixels(rows).shape == (4, 4)
    assert nested_pixels(np.array([np.array([1, 2]), np.array([3, 4])], dtype=object)) is None  # 2x2: under 4 a side
    with pytest.raises(ValueError, match="column 'tags' holds list values"):
        infer_column_kind(pd.Series([[[1, 2], [3]], [[1], [2, 3]]], name="tags"))
    polygons = pd.Series([[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]] * 3, name="outline")  # 5 [x, y] points each
    with pytest.raises(ValueError, match="column 'outline' holds list values"):
        infer_column_kind(polygons)


# ----------------------------------------------------------------------------- found by a review
def test_an_image_column_with_a_bad_cell_is_refused_naming_the_cell_not_read_as_categories(forms, colour):
    _, y = colour
    column = list(forms["bytes"])
    column[5] = "n/a"
    frame = pd.DataFrame({"image": column, "size": np.arange(24.0)})
    with pytest.raises(ValueError, match=r"column 'image' mixes images with other values such as 'n/a' \(row 5\)$"):
        TabFormerClassifier(**SETTINGS).fit(frame, y)


@pytest.mark.parametrize("format", ["TGA", "PPM", "SGI"])
def test_bytes_of_formats_without_a_listed_signature_are_images(colour, format):
    images, _ = colour
    encoded = []
    for image in images[:4]:
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format=format)
        encoded.append(buffer.getvalue())
    assert infer_column_kind(pd.Series(encoded, name="image")) == "image"
    pixels = PatchTokenizer(patch_size=7).fit(encoded).transform(encoded)["pixels"]
    np.testing.assert_array_equal(pixels, PatchTokenizer(patch_size=7).fit(images[:4]).transform(images[:4])["pixels"])


def test_big_endian_16_bit_grey_tiff_reads_at_its_depth(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 65536, (8, 8)).astype(np.uint16)
    Image.fromarray(pixels.astype(">u2")).save(tmp_path / "deep.tif")
    assert Image.open(tmp_path / "deep.tif").mode == "I;16B"
    assert image_header(str(tmp_path / "deep.tif")) == (8, 8, 1)
    tok = PatchTokenizer(patch_size=4).fit([str(tmp_path / "deep.tif")])
    assert tok.pixel_scale_ == 65535 and tok.n_channels_ == 1
    np.testing.assert_allclose(
        tok.transform([str(tmp_path / "deep.tif")])["pixels"],
        PatchTokenizer(patch_size=4).fit([pixels]).transform([pixels])["pixels"],
    )


def test_the_recipe_reads_the_size_images_are_resized_to(colour, tmp_path):
    """Images of two sizes resized to 32: the patch size follows 32 (8), not the first file's 30x30."""
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 6)
    paths = []
    for i in range(12):
        path = tmp_path / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (24, 20, 3) if i % 2 else (30, 30, 3), dtype=np.uint8)).save(path)
        paths.append(str(path))
    clf = TabFormerClassifier(**SETTINGS, tokenizer__image_size=32).fit(paths, y)
    assert clf.resolved_params_["tokenizer__patch_size"] == 8


@pytest.mark.pretrained_stem
def test_the_stem_keeps_the_size_the_user_resizes_to(colour):
    from tabformer.estimators._image_recipes import stem_available

    if not stem_available():
        pytest.skip("the stem's weights package is not installed")
    images, y = colour
    clf = TabFormerClassifier(**dict(SETTINGS, max_epochs=1), tokenizer__image_size=32).fit(images[:8], y[:8])
    assert "tokenizer__image_size" not in clf.resolved_params_  # the user's 32, not the stem's upscale to 64
    assert clf.resolved_params_["tokenizer__backbone_blocks"] == 4  # stride 16 at 32 px: a 2x2 grid


@pytest.mark.parametrize("mix", ["hf_dicts", "bytes_then_arrays", "path_then_nested"])
def test_lists_of_stored_images_alone_are_images(forms, colour, mix):
    _, y = colour
    X = {
        "hf_dicts": forms["hf_dicts"],
        "bytes_then_arrays": forms["bytes"][:1] + forms["arrays"][1:],
        "path_then_nested": forms["paths"][:1] + forms["nested_lists"][1:],
    }[mix]
    clf = TabFormerClassifier(**SETTINGS).fit(X, y)
    ref = TabFormerClassifier(**SETTINGS).fit(forms["arrays"], y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(forms["arrays"]), atol=1e-6)


@pytest.mark.parametrize("form", ["bytes", "nested_lists"])
def test_arrow_backed_frames_from_read_parquet_fit(forms, colour, form, tmp_path):
    _, y = colour
    path = tmp_path / "frame.parquet"
    pq.write_table(pa.table({"image": forms[form], "size": np.arange(24.0)}), path)
    numpy_backed = pd.read_parquet(path)
    arrow_backed = pd.read_parquet(path, dtype_backend="pyarrow")
    clf = TabFormerClassifier(**SETTINGS).fit(arrow_backed, y)
    ref = TabFormerClassifier(**SETTINGS).fit(numpy_backed, y)
    np.testing.assert_allclose(clf.predict_proba(arrow_backed), ref.predict_proba(numpy_backed), atol=1e-6)
