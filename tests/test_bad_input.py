"""Bad parameters and inputs get one clear, early error naming what is wrong
(docs/reliability.md); nothing big is allocated before the check."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY, make_table

from tabformer import PatchTokenizer, TabFormerClassifier, TabFormerRegressor, TabFormerTagger


@pytest.mark.parametrize(
    "params, match",
    [
        ({"max_epochs": 0}, r"'max_epochs' parameter .* range \[1, inf\).* Got 0"),
        ({"encoder__d_model": 0}, r"'encoder__d_model' parameter .* range \[1, inf\).* Got 0"),
        ({"encoder__n_heads": 0}, r"'encoder__n_heads' parameter .* Got 0"),
        ({"encoder__n_layers": -1}, r"'encoder__n_layers' parameter .* Got -1"),
        ({"encoder__dropout": 1.5}, r"'encoder__dropout' parameter .* Got 1.5"),
        ({"encoder__d_model": 15}, r"encoder__d_model=15 must be divisible by encoder__n_heads=2"),
        ({"memory_limit": -1}, r"'memory_limit' parameter"),
    ],
)
def test_bad_parameters_are_named_at_fit(params, match):
    X, y = make_table()
    with pytest.raises(ValueError, match=match):
        TabFormerClassifier(**{**TINY, **params}).fit(X, y)


def test_a_huge_encoder_is_refused_before_allocating():
    X, y = make_table()
    with pytest.raises(MemoryError, match=r"d_model=65536.*GiB, over the memory_limit of 8.0 GiB.*memory_limit"):
        TabFormerClassifier(**{**TINY, "encoder__d_model": 65536}, memory_limit=8).fit(X, y)


def test_a_huge_image_size_is_refused_before_resizing():
    images = np.random.default_rng(0).integers(0, 255, (20, 8, 8)).astype(np.uint8)
    with pytest.raises(MemoryError, match=r"resizing the images to tokenizer image_size needs about"):
        TabFormerClassifier(**TINY, tokenizer__image_size=4096, memory_limit=1).fit(images, [0, 1] * 10)


def test_memory_limit_none_turns_the_check_off():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY, memory_limit=None).fit(X, y)
    assert clf.predict(X).shape == (len(X),)


def test_duplicate_column_names_are_named():
    X, y = make_table()
    X.columns = ["a", "a", "b", "c"]
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['a'\]"):
        TabFormerClassifier(**TINY).fit(X, y)


def test_array_fit_then_dataframe_predict_matches_by_position_with_a_warning():
    X, y = make_table()
    numbers = X[["age", "income"]].to_numpy()
    clf = TabFormerClassifier(**TINY, random_state=0).fit(numbers, y)
    with pytest.warns(UserWarning, match="fitted without feature names"):
        proba = clf.predict_proba(pd.DataFrame(numbers, columns=["p", "q"]))
    np.testing.assert_allclose(proba, clf.predict_proba(numbers))


def test_non_str_column_names_are_matched_by_label_not_position():
    X, y = make_table()
    X.columns = ["age", 1, "income", "member"]
    clf = TabFormerClassifier(**TINY, random_state=0).fit(X, y)
    reordered = X[["member", "income", 1, "age"]]
    np.testing.assert_allclose(clf.predict_proba(reordered), clf.predict_proba(X))
    with pytest.raises(ValueError, match=r"missing column\(s\) \[1\]; unexpected column\(s\) \[2\]"):
        clf.predict(X.rename(columns={1: 2}))


def test_dtype_drift_names_the_column_and_both_dtypes():
    X, y = make_table()
    clf = TabFormerClassifier(**TINY).fit(X, y)
    drifted = X.assign(age=X["age"].astype(str))
    with pytest.raises(ValueError, match=r"column 'age' .*numeric \(dtype float64\) at fit.*categorical \(dtype"):
        clf.predict(drifted)


def test_one_row_regressor_fit_says_what_to_do():
    X = pd.DataFrame({"a": [1.0]})
    with pytest.raises(ValueError, match=r"n_samples=1 leaves no row to train on.*validation_fraction=None"):
        TabFormerRegressor(**TINY).fit(X, [3.0])


def test_int_tags_train_and_come_back_as_str():
    sentences = [["a", "b", "c"], ["d", "e"]] * 10
    tags = [[1, 0, 0], [0, 2]] * 10
    tagger = TabFormerTagger(**TINY, tokenizer__vocab_size=40, random_state=0).fit(sentences, tags)
    assert set(tagger.classes_) == {"0", "1", "2"}
    assert [len(row) for row in tagger.predict(sentences[:2])] == [3, 2]


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_a_missing_tag_is_named_not_learnt_as_a_class(missing):
    sentences = [["a", "b", "c"], ["d", "e"]] * 10
    tags = [["B", "O", "O"], ["O", "B"]] * 10
    tags[3] = ["O", missing]
    with pytest.raises(ValueError, match=r"y\[3\]\[1\] \(the tag of word 'e'\) is missing"):
        TabFormerTagger(**TINY, tokenizer__vocab_size=40).fit(sentences, tags)


def test_targets_whose_spread_overflows_are_refused_not_predicted_as_inf():
    X, y = make_table(n=40)
    target = np.linspace(-1.0, 1.0, len(X)) * 1e200
    with pytest.raises(ValueError, match=r"y's mean or standard deviation overflows float64 \(target 0, largest \|y\| 1e\+200\)"):
        TabFormerRegressor(**TINY).fit(X, target)
    assert np.isfinite(TabFormerRegressor(**TINY).fit(X, target / 1e200).predict(X)).all()


@pytest.mark.parametrize("scale", [1e-160, 1e-300])
def test_tiny_targets_are_predicted_on_their_own_scale_not_as_a_spread_of_zero(scale):
    # Their squares underflow float64: the spread read 0, the network trained on zeros, and
    # predictions came back about 1e297 times too large, silently.
    X, y = make_table(n=60)
    target = np.linspace(-1.0, 1.0, len(X))
    settings = dict(TINY, random_state=0)
    plain = TabFormerRegressor(**settings).fit(X, target).predict(X)
    tiny = TabFormerRegressor(**settings).fit(X, target * scale)
    assert tiny.target_scale_[0] == pytest.approx(target.std() * scale, rel=1e-9)
    np.testing.assert_allclose(tiny.predict(X) / scale, plain, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- pixels
def _images(dtype=np.uint8, n=6):
    pixels = np.random.default_rng(0).integers(0, 256, (n, 8, 8))
    return pixels.astype(dtype) if dtype == np.uint8 else (pixels / 255).astype(dtype)


@pytest.mark.parametrize("bad, match", [(np.nan, "image 3 holds NaN or infinite"), (np.inf, "image 3 holds NaN")])
def test_non_finite_pixels_are_refused_naming_the_image(bad, match):
    images = _images(np.float32)
    images[3, 2, 2] = bad
    with pytest.raises(ValueError, match=match):
        PatchTokenizer().fit(images)
    fitted = PatchTokenizer().fit(_images(np.float32))
    with pytest.raises(ValueError, match=match):
        fitted.transform(images)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_a_missing_image_in_a_mixed_frame_of_any_pixel_kind_is_masked(dtype):
    # Found by tests/test_properties.py: the blank put in a missing image's place was uint8 whatever
    # the fitted kind, so a float image column with one None failed the pixel rule at fit.
    images = list(_images(np.float32 if dtype == np.bool_ else dtype, n=8))
    images = [image > 0.5 for image in images] if dtype == np.bool_ else images
    images[3] = None
    X = pd.DataFrame({"photo": pd.Series(images, dtype=object), "size": np.arange(8.0)})
    clf = TabFormerClassifier(**TINY, tokenizer__image__patch_size=4, validation_fraction=None).fit(X, np.arange(8) % 2)
    assert clf.tokenizer_.column_kinds_["photo"] == "image"
    assert np.isfinite(clf.predict_proba(X)).all()


def test_negative_pixels_are_refused_not_clipped():
    images = _images(np.float32) - 0.5
    with pytest.raises(ValueError, match=r"image 0 has negative pixels.*before any standardisation"):
        PatchTokenizer().fit(images)


@pytest.mark.parametrize(
    "fit_dtype, predict, match",
    [
        (np.uint8, _images(np.float32), r"image 0 has float pixels .*fitted on integer pixels"),
        (np.float32, _images(np.uint8), r"image 0 has integer pixels .*fitted on float pixels"),
        (np.float32, _images(np.float32) * 255, r"image 0 has pixels up to 2\d\d.*divide by 255"),
    ],
)
def test_a_pixel_scale_mismatch_at_predict_is_refused(fit_dtype, predict, match):
    tokenizer = PatchTokenizer().fit(_images(fit_dtype))
    with pytest.raises(ValueError, match=match):
        tokenizer.transform(predict)


def test_same_pixels_as_fit_and_an_explicit_scale_pass():
    tokenizer = PatchTokenizer().fit(_images(np.uint8))
    assert tokenizer.transform(_images(np.uint8))["pixels"].max() <= 1.0
    scaled = PatchTokenizer(pixel_scale=255).fit(_images(np.uint8))
    expected = tokenizer.transform(_images())["pixels"]
    np.testing.assert_allclose(scaled.transform(_images(np.float32) * 255)["pixels"], expected, atol=1e-6)


def test_image_paths_with_less_common_extensions_are_images(tmp_path):
    from PIL import Image

    from tabformer.tokenizers.detect import looks_like_images

    paths = []
    for i, suffix in enumerate([".jfif", ".TGA", ".pnm"]):
        path = tmp_path / f"img{i}{suffix}"
        Image.fromarray(_images()[i]).save(path, format={".jfif": "JPEG", ".TGA": "TGA", ".pnm": "PPM"}[suffix])
        paths.append(str(path))
    assert looks_like_images(paths)
    assert PatchTokenizer().fit(paths).transform(paths)["pixels"].shape == (3, 1, 8, 8)


def test_a_holdout_whose_sample_weights_are_all_zero_is_refused():
    # Its loss read 0.0 every epoch, so early stopping ended the fit on no signal (a review's find).
    X, _ = make_table(n=60)
    target = np.linspace(0.0, 1.0, len(X))  # a regressor: a classifier first refuses weights that leave one class
    weights = np.zeros(len(X))
    weights[7] = 1.0  # one weighted row: one side of any split weighs 0
    with pytest.raises(
        ValueError, match=r"the (holdout|training) rows of the validation_fraction=0.1 split \(\d+ rows\) have a total"
    ):
        TabFormerRegressor(**TINY, validation_fraction=0.1, patience=2, ensemble_size=1).fit(X, target, sample_weight=weights)
    TabFormerRegressor(**TINY, validation_fraction=None).fit(X, target, sample_weight=weights)  # the way out the message names


def test_a_2d_y_that_is_no_indicator_matrix_names_a_bad_value():
    X, _ = make_table(n=40)
    y = np.random.default_rng(0).integers(0, 2, (40, 3))
    y[3, 1] = 2
    with pytest.raises(
        ValueError, match=r"y of shape \(40, 3\) is neither 1-D class labels nor a 0/1 indicator matrix .* holds 2"
    ):
        TabFormerClassifier(**TINY).fit(X, y)


def test_complex_regression_targets_are_refused_not_cut_to_their_real_part():
    X, _ = make_table(n=40)
    with pytest.raises(ValueError, match=r"Complex data not supported: regression targets must be real numbers"):
        TabFormerRegressor(**TINY).fit(X, np.arange(40) + 1j)


def test_a_pair_of_texts_needs_room_for_a_token_of_each():
    from tabformer.tokenizers import WordPieceTokenizer

    pairs = pd.DataFrame({"question": ["is it good", "why not"] * 5, "answer": ["yes it is", "because"] * 5})
    with pytest.raises(ValueError, match=r"max_length must be an int >= 5 for pairs of texts .* got 4"):
        WordPieceTokenizer(vocab_size=40, max_length=4).fit(pairs)
    batch = WordPieceTokenizer(vocab_size=40, max_length=5).fit(pairs).transform(pairs)
    assert (batch["token_type_ids"] == 1).any(axis=1).all()  # the second text kept a token in every row


def test_a_column_of_image_paths_with_a_stray_string_is_named_not_read_as_words():
    from tabformer.tokenizers.detect import infer_column_kind

    paths = pd.Series([f"photos/{i}.png" for i in range(9)] + [""], name="photo")
    with pytest.raises(ValueError, match=r"column 'photo' holds image paths \(9 of 10 values\) and other strings such as ''"):
        infer_column_kind(paths)
    assert infer_column_kind(paths.replace("", None)) == "image"  # marked missing: images with a gap
    assert infer_column_kind(pd.Series(["a.png", "b", "c", "d"], name="x")) == "categorical"  # mostly not paths


def test_one_text_and_tag_strings_get_messages_that_say_what_to_pass():
    clf = TabFormerClassifier(**TINY, tokenizer__vocab_size=40).fit(["good film", "bad film"] * 10, ["pos", "neg"] * 10)
    with pytest.raises(
        ValueError, match=r"X is the path 'great film', which does not exist; to predict on one text, pass a list"
    ):
        clf.predict("great film")
    with pytest.raises(ValueError, match=r"y\[0\] must be a list of tags, got str: one tag per word"):
        TabFormerTagger(**TINY).fit([["a", "b"]], ["B O"])


def test_a_multi_label_y_with_a_gap_names_its_row_and_column():
    X, _ = make_table(n=40)
    y = np.random.default_rng(0).integers(0, 2, (40, 3)).astype(float)
    y[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"y holds 1 missing value\(s\) \(first at row 5, column 2\)"):
        TabFormerClassifier(**TINY).fit(X, y)


@pytest.mark.parametrize(
    "typo, meant",
    [("max_epoch", "max_epochs"), ("learning_rate", "lr"), ("encoder_d_model", "encoder__d_model"), ("seed", "random_state")],
)
def test_a_misspelt_parameter_is_named_with_the_one_meant_before_the_tokenizer_fits(typo, meant, monkeypatch):
    # skorch found it only when the module was built, after the tokenizer's fit, naming no alternative.
    from tabformer.tokenizers import TabularTokenizer

    monkeypatch.setattr(TabularTokenizer, "fit", lambda *a, **k: pytest.fail("the tokenizer was fitted first"))
    X, y = make_table(n=40)
    with pytest.raises(ValueError, match=rf"unknown parameter\(s\) '{typo}' \(did you mean '{meant}'\?\)"):
        TabFormerClassifier(**{typo: 2}).fit(X, y)


@pytest.mark.parametrize(
    "typo, meant, owner",
    [
        ("optimizer__weight_decy", "optimizer__weight_decay", "AdamW"),
        ("criterion__label_smothing", "criterion__label_smoothing", "CrossEntropyLoss"),
    ],
)
def test_a_misspelt_optimizer_or_criterion_setting_is_named_before_the_tokenizer_fits(typo, meant, owner, monkeypatch):
    # It was a bare TypeError from the class's __init__, raised as the module was built, after the tokenizer's fit.
    from tabformer.tokenizers import TabularTokenizer

    monkeypatch.setattr(TabularTokenizer, "fit", lambda *a, **k: pytest.fail("the tokenizer was fitted first"))
    X, y = make_table(n=40)
    with pytest.raises(ValueError, match=rf"{typo}: not a parameter of {owner} \(did you mean {meant}\?\)"):
        TabFormerClassifier(**{typo: 0.1}).fit(X, y)


def test_a_valid_optimizer_setting_of_another_optimizer_is_accepted():
    X, y = make_table(n=40)
    clf = TabFormerClassifier(**TINY, optimizer=torch.optim.SGD, optimizer__momentum=0.9, optimizer__nesterov=True)
    assert clf.fit(X, y).optimizer_.param_groups[0]["momentum"] == 0.9


def test_fit_params_skorch_would_drop_or_fail_late_on_are_refused_first():
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**TINY, ensemble_size=1)
    with pytest.raises(TypeError, match=r"TabFormerClassifier.fit\(\) takes no classes=: it reads the classes from y"):
        clf.fit(X, y, classes=["no", "yes", "maybe"])  # dropped without a word before
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'sample_weights'; did you mean sample_weight\?"):
        clf.fit(X, y, sample_weights=np.ones(60))  # failed after the tokenizer's fit, naming an embedder's forward
    assert not hasattr(clf, "tokenizer_")
    clf.fit(X, y)
    with pytest.raises(TypeError, match=r"partial_fit\(\) got an unexpected keyword argument 'sampleweight'"):
        clf.partial_fit(X, y, sampleweight=np.ones(60))


def test_classes_of_a_single_label_y_are_refused_for_a_multilabel_y():
    X, _ = make_table(n=60)
    Y = np.random.default_rng(0).integers(0, 2, (60, 3))
    with pytest.raises(ValueError, match=r"classes=\['a', 'b', 'c'\] lists the labels of a single-label y; .* 3 indicator"):
        TabFormerClassifier(**TINY, ensemble_size=1).partial_fit(X, Y, classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="lists the labels of a single-label y"):
        TabFormerClassifier(**TINY, ensemble_size=1, classes=["a", "b", "c"]).fit(X, Y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the check is for a machine without a GPU")
def test_device_cuda_without_a_gpu_is_refused_by_name_first():
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**TINY, device="cuda")
    with pytest.raises(ValueError, match=r"device='cuda', but torch sees no CUDA GPU .* device='auto'"):
        clf.fit(X, y)
    assert not hasattr(clf, "tokenizer_")


def test_a_tokenizer_max_length_past_the_encoders_positions_is_refused_at_fit():
    # The fit went through on short texts, and predict failed on the first text of over 512 sub-words
    texts, y = ["good film", "bad plot", "fine cast", "dull story"] * 10, [1, 0, 1, 0] * 10
    settings = dict(TINY, ensemble_size=1, tokenizer="wordpiece")
    with pytest.raises(
        ValueError,
        match=r"tokenizer__max_length=1000 is longer than the encoder's 512 positions.*"
        r"encoder__max_length=1000",
    ):
        TabFormerClassifier(**settings, tokenizer__max_length=1000).fit(texts, y)
    clf = TabFormerClassifier(**settings, tokenizer__max_length=1000, encoder__max_length=1000).fit(texts, y)
    assert clf.predict([" ".join(["good"] * 700)]).shape == (1,)  # the positions the texts may need


def test_an_error_at_predict_names_the_row_of_the_whole_input_not_of_its_chunk():
    # Predicting tokenizes large inputs a chunk at a time: an infinite value at row 130 was reported at "row 30"
    X, y = make_table(n=60)
    reg = TabFormerRegressor(**TINY, ensemble_size=1).fit(X, np.linspace(0.0, 1.0, 60))
    reg.inference_chunk_rows = 50
    big = pd.concat([X] * 3, ignore_index=True)
    big.loc[130, "income"] = np.inf
    with pytest.raises(ValueError, match=r"infinite value at row 130\b"):
        reg.predict(big)


def test_numpy_integer_batch_sizes_from_a_search_grid_work():
    # GridSearchCV over np.array([16, 32]) passed np.int64: DataLoader said "batch_size should be a positive integer"
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**{**TINY, "batch_size": np.int64(16)}, ensemble_size=1, iterator_valid__batch_size=np.int32(8))
    assert clf.fit(X, y).predict_proba(X).shape == (60, 2)


def test_a_misspelt_encoder_setting_suggests_d_model_too():
    # The list of valid encoder__ settings left out d_model (a head's width is the estimator's; an encoder's is not)
    X, y = make_table(n=40)
    with pytest.raises(
        ValueError, match=r"encoder__dmodel: not a parameter of TransformerEncoder \(did you mean encoder__d_model\?\)"
    ):
        TabFormerClassifier(**TINY, ensemble_size=1, encoder__dmodel=8).fit(X, y)


def test_a_dict_of_columns_is_refused_naming_the_dataframe_to_pass():
    # fit counted a dict's keys as rows ("X has 4 samples but y has 60"); predict failed in torch ("new(): invalid data
    # type 'str'"): a dict is read as tokens
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**TINY, ensemble_size=1)
    with pytest.raises(TypeError, match=r"TabFormerClassifier.fit\(\) got X as a dict .* pd.DataFrame\(X\)"):
        clf.fit(X.to_dict("list"), y)
    clf.fit(X, y)
    with pytest.raises(TypeError, match=r"X is a dict whose 'city' holds no token array .* pd.DataFrame\(X\)"):
        clf.predict(X.to_dict("list"))
    with pytest.raises(TypeError, match=r"partial_fit\(\) got X as a dict"):
        clf.partial_fit(X.iloc[0].to_dict(), y[:1])
    assert clf.predict(clf.tokenize(X)).shape == (60,)  # tokens still pass
