"""predict refuses input of another kind than fit read, naming both (images to a text model said 'non-str word')."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier, TabFormerRegressor

SMALL = dict(max_epochs=1, verbose=0, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2)
Y = np.arange(40) % 2
IMAGES = np.random.default_rng(0).random((40, 8, 8))


def test_images_to_a_text_model_name_both_kinds():
    clf = TabFormerClassifier(tokenizer="wordpiece", **SMALL).fit(["good film", "bad film"] * 20, Y)
    with pytest.raises(ValueError, match=r"fitted on texts, but X is an array of shape \(5, 8, 8\)"):
        clf.predict(IMAGES[:5])
    with pytest.raises(ValueError, match=r"fitted on texts, but X is a list of 2 images"):
        clf.predict(list(IMAGES[:2]))


def test_images_to_a_table_model_and_a_table_to_an_image_model():
    table = pd.DataFrame({"a": np.arange(40.0), "b": list("xy") * 20})
    reg = TabFormerRegressor(**SMALL).fit(table, np.arange(40.0))
    with pytest.raises(ValueError, match=r"TabFormerRegressor was fitted on a table, but X is an array of shape \(5, 8, 8\)"):
        reg.predict(IMAGES[:5])
    clf = TabFormerClassifier(**SMALL).fit(IMAGES, Y)
    with pytest.raises(ValueError, match=r"fitted on images, but X is a DataFrame with columns \['a', 'b'\]"):
        clf.predict(table)
    assert clf.predict(IMAGES[:3]).shape == (3,) and clf.predict(list(IMAGES[:3])).shape == (3,)  # its own kind still reads


def test_a_frame_of_image_cells_still_reads_as_it_was_fitted():
    frame = pd.DataFrame({"img": list(IMAGES), "x": np.arange(40.0)})
    clf = TabFormerClassifier(**SMALL).fit(frame, Y)
    assert clf.predict(frame.iloc[:3]).shape == (3,)


def test_texts_to_a_table_model_name_both_kinds():
    # scikit-learn's "Expected 2D array, got 1D array instead ... Reshape your data" pointed the wrong way
    table = pd.DataFrame({"a": np.arange(40.0), "b": list("xy") * 20})
    reg = TabFormerRegressor(**SMALL).fit(table, np.arange(40.0))
    with pytest.raises(ValueError, match=r"fitted on a table, but X is a list of 2 texts: pass the same kind"):
        reg.predict(["the cat sat", "on the mat"])
    with pytest.raises(ValueError, match=r"fitted on a table, but X is an array of 2 texts"):
        reg.predict(np.array(["the cat sat", "on the mat"], dtype=object))
    assert reg.predict(table.iloc[:2]).shape == (2,)


def test_texts_to_an_image_model_say_they_are_no_image_files():
    # a text read as a path said only "file 'the cat sat on the mat' does not exist"
    clf = TabFormerClassifier(tokenizer__patch_size=4, **SMALL).fit(IMAGES, Y)
    with pytest.raises(ValueError, match=r"file 'the cat sat' does not exist \(no image file's name: a text\?"):
        clf.predict(["the cat sat", "on the mat"])
    with pytest.raises(ValueError, match=r"file 'missing.png' does not exist$"):
        clf.predict(["missing.png"])
