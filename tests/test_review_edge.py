"""Edge-case inputs real users pass: each test failed (or misled) before its fix."""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import PatchTokenizer, TabularTokenizer

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, verbose=0, random_state=0)


def test_rows_as_lists_keep_number_columns_numeric_next_to_text_columns():
    # np.asarray([[1.5, "red"], ...]) is one str array: the prices became categories, without a warning.
    rows = [[1.5, "red"], [2.0, "blue"], [3.25, "red"], [4.0, "blue"]] * 3
    tokenizer = TabularTokenizer().fit(rows)
    assert tokenizer.numeric_columns_ == ["x0"] and tokenizer.categorical_columns_ == ["x1"]
    clf = TabFormerClassifier(**SMALL).fit(rows, [0, 1, 0, 1] * 3)
    assert clf.tokenizer_.numeric_columns_ == ["x0"]
    assert clf.predict([[10.0, "red"]]).shape == (1,)  # a price never seen is a number, not an unseen category


def test_numbers_past_float32_once_scaled_are_refused_naming_the_column():
    # 1e39 kept unscaled became inf tokens: at fit a "non-finite gradient ... try a lower lr" error, at predict
    # "non-finite outputs ... refit with a lower lr"; neither named the column.
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"size": rng.normal(size=20), "other": rng.normal(size=20)})
    y = (X["other"] > 0).astype(int)
    # 1e300 under the standard scaler (whose variance overflowed) was refused the same way; it is now scaled in
    # units of its range (tests/test_review_invariance.py) and reads as the same column in smaller units.
    huge = X.assign(size=X["size"] * 1e300)
    standard = dict(tokenizer="tabular", tokenizer__numeric_transform="standard", **SMALL)
    np.testing.assert_allclose(
        TabFormerClassifier(**standard).fit(huge, y).predict_proba(huge),
        TabFormerClassifier(**standard).fit(X, y).predict_proba(X),
        atol=1e-5,
    )
    clf = TabFormerClassifier(tokenizer="tabular", tokenizer__numeric_transform=None, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"numeric column 'size' holds 1e\+39 \(row 1\).*numeric_transform=None"):
        clf.predict_proba(X.iloc[:2].assign(size=[0.5, 1e39]))


def test_an_empty_image_array_is_refused_as_an_empty_list_is():
    # A PatchTokenizer fitted on imgs[:0] silently (a NaN std), and predict failed with IndexError: list index out of range.
    images = np.random.default_rng(0).integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)
    clf = TabFormerClassifier(tokenizer="patch", **SMALL).fit(images, [0, 1] * 3)
    with pytest.raises(ValueError, match=r"got 0 images \(an array of shape \(0, 8, 8, 3\)\); at least 1 is required"):
        clf.predict(images[:0])
    with pytest.raises(ValueError, match="got 0 images"):
        PatchTokenizer().fit(images[:0, :, :, 0])


def test_regression_target_past_float32_unstandardised_is_refused_naming_value_and_row():
    # standardize_target=False keeps y as given; 1e39 became inf in float32 and the fit ended on a "non-finite
    # gradient ... try a lower lr" error that never named the target.
    from tabformer import TabFormerRegressor

    X = pd.DataFrame({"a": np.arange(10.0), "b": list("ab") * 5})
    with pytest.raises(ValueError, match=r"y holds 1e\+39 at row 1, beyond float32's range .*standardize_target=True"):
        TabFormerRegressor(**SMALL, standardize_target=False).fit(X, np.arange(10) * 1e39)
    two = np.c_[np.arange(10.0), np.arange(10) * -1e39]
    with pytest.raises(ValueError, match=r"y holds -1e\+39 at row 1 \(target 1\)"):
        TabFormerRegressor(**SMALL, standardize_target=False).fit(X, two)
    # standardised, the same target trains
    assert np.isfinite(TabFormerRegressor(**SMALL).fit(X, np.arange(10) * 1e39).predict(X)).all()


def test_stratified_holdout_with_no_room_for_every_class_in_training_falls_back_as_for_the_holdout():
    # validation_fraction=0.8 of 3 classes x 2 rows leaves 1 training row for 3 classes: the check made room for
    # every class in the holdout only, and sklearn's train_test_split failed ("The train_size = 1 should be
    # greater or equal to the number of classes = 3"). A holdout too small for every class falls back to an
    # unstratified split; so does a training part too small now.
    X = pd.DataFrame({"a": np.arange(6.0)})
    y = np.array([0, 0, 1, 1, 2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one training row: the collapse warning
        clf = TabFormerClassifier(**SMALL, validation_fraction=0.8).fit(X, y)
    batches = clf.history[0, "batches"]
    assert sum(b.get("train_batch_size", 0) for b in batches) == 1
    assert sum(b.get("valid_batch_size", 0) for b in batches) == 5
    assert clf.predict(X).shape == (6,)


def test_one_colour_image_given_alone_is_refused_even_where_the_tokenizer_resizes():
    """With ``image_size`` set the tokenizer resizes any size, so one (H, W, 3) image given alone
    read as H grey images 3 pixels wide and predict answered H rows, silently."""
    rng = np.random.default_rng(0)
    images, y = rng.integers(0, 255, (20, 16, 16, 3), dtype=np.uint8), np.arange(20) % 2
    small = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0)
    clf = TabFormerClassifier(tokenizer="patch", tokenizer__image_size=16, tokenizer__patch_size=4, **small).fit(images, y)
    with pytest.raises(ValueError, match=r"reads as 16 grey images 16x3 pixels; if X is one colour image"):
        clf.predict(images[0])
    assert clf.predict(images[0][None]).shape == (1,)
