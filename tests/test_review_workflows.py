"""sklearn workflows a review ran into (stop 37): each failed, or answered wrong, before its fix."""

import numpy as np
import pandas as pd
import pytest
from conftest import make_table

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger

SMALL = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=2, batch_size=32, verbose=0, random_state=0)
SENTENCES = [["Alice", "visits", "Paris"], ["Bob", "likes", "Rome"]] * 20
TAGGER = dict(SMALL, tokenizer="wordpiece", tokenizer__vocab_size=80)


@pytest.mark.parametrize("dtype", ["Int64", "boolean", "UInt8", "Float64"])
def test_a_multi_label_frame_of_nullable_dtypes_is_multi_label(dtype):
    X, y = make_table(80)
    Y = pd.DataFrame({"yes": (y == "yes").astype(int), "old": (X["age"].fillna(0) > 40).astype(int)}).astype(dtype)
    clf = TabFormerClassifier(**SMALL).fit(X, Y)
    assert clf.multilabel_ and clf.predict(X).shape == (80, 2)
    Y.iloc[5, 1] = pd.NA
    with pytest.raises(ValueError, match=r"y holds 1 missing value\(s\) \(first at row 5, column 1 \('old'\)\)"):
        TabFormerClassifier(**SMALL).fit(X, Y)


def test_a_two_target_regression_frame_with_pd_na_names_the_row():
    X, _ = make_table(60)
    Y = pd.DataFrame({"a": np.arange(60.0), "b": np.arange(60.0) * 2}).astype("Float64")
    Y.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match=r"NaN or infinite value\(s\) \(first at row 3, column 1 \('b'\): \[3.0, nan\]\)"):
        TabFormerRegressor(**SMALL).fit(X, Y)


def test_warm_start_continues_the_tagger_and_the_pretrainer():
    tags = [["B-PER", "O", "B-LOC"]] * 40
    tagger = TabFormerTagger(**TAGGER, warm_start=True).fit(SENTENCES, tags)
    tokenizer, module = tagger.tokenizer_, tagger.module_
    tagger.fit(SENTENCES, tags)
    assert tagger.tokenizer_ is tokenizer and tagger.module_ is module and len(tagger.history_) == 4
    X, _ = make_table(80)
    pretrainer = TabFormerPretrainer(**SMALL, warm_start=True).fit(X)
    tokenizer = pretrainer.tokenizer_
    pretrainer.fit(X)
    assert pretrainer.tokenizer_ is tokenizer and len(pretrainer.history_) == 4


def test_a_tagger_of_integer_or_pos_tags_continues_weighs_and_scores():
    """classes_ are the tags' str: partial_fit and class_weight compared the raw tags with them."""
    tags = [[1, 0, 2], [1, 0, 2]] * 20
    tagger = TabFormerTagger(**TAGGER, class_weight={1: 2.0}).fit(SENTENCES, tags)
    tagger.partial_fit(SENTENCES, tags)
    predicted = [t for row in tagger.predict(SENTENCES) for t in row]
    expected = np.mean(np.asarray(predicted) == np.asarray([str(t) for row in tags for t in row]))
    assert tagger.score(SENTENCES, tags) == pytest.approx(expected)  # word accuracy: integer tags are not BIO
    pos = [["NNP", "VBZ", "NNP"]] * 40
    assert 0.0 <= TabFormerTagger(**TAGGER).fit(SENTENCES, pos).score(SENTENCES, pos) <= 1.0
    bio = [["B-PER", "O", "B-LOC"]] * 40
    with pytest.raises(ValueError, match="none of the tags fit saw"):  # POS tags on a BIO tagger: none is a fitted tag
        TabFormerTagger(**TAGGER).fit(SENTENCES, bio).score(SENTENCES, pos)
    with pytest.raises(ValueError, match="is not BIO"):  # BIO tags keep the entity F1, which reads BIO only
        TabFormerTagger(**TAGGER).fit(SENTENCES, bio).score(SENTENCES, [["B-PER", "NNP", "B-LOC"]] * 40)


def test_resolved_params_show_the_early_stopping_the_user_routed():
    X, y = make_table(120)
    clf = TabFormerClassifier(
        **dict(SMALL, max_epochs=4), callbacks__early_stopping__patience=1, callbacks__early_stopping__monitor="valid_acc"
    ).fit(X, y)
    stopping = dict(clf.callbacks_)["early_stopping"]
    assert (stopping.patience, stopping.monitor) == (1, "valid_acc")
    assert (clf.resolved_params_["patience"], clf.resolved_params_["monitor"]) == (1, "valid_acc")


@pytest.mark.parametrize("scale", [1e-50, 1e-44, 1e39])
def test_sample_weights_of_any_scale_train_as_at_scale_one(scale):
    """The loss is sum(w l) / sum(w); float32 flushed 1e-50 to 0, distorted 1e-44 and overflowed 1e39."""
    X, y = make_table(120)
    weights = np.where(y == "yes", 2.0, 1.0)
    reference = TabFormerClassifier(**SMALL).fit(X, y, sample_weight=weights).predict_proba(X)
    scaled = TabFormerClassifier(**SMALL).fit(X, y, sample_weight=weights * scale).predict_proba(X)
    np.testing.assert_allclose(scaled, reference, atol=1e-5)


def test_the_history_plot_marks_the_epoch_early_stopping_kept():
    import matplotlib

    matplotlib.use("Agg")
    from tabformer import plot

    X, y = make_table(120)
    clf = TabFormerClassifier(**dict(SMALL, max_epochs=4), callbacks__early_stopping__monitor="valid_acc").fit(X, y)
    labels = [line.get_label() for line in plot.history(clf).get_lines()]
    best = int(clf.history_[:, "epoch"][int(np.argmax(clf.history_[:, "valid_acc"]))])
    assert f"best valid_acc (epoch {best})" in labels


def test_fitted_params_do_not_leak_the_guards_running_state():
    X, y = make_table(60)
    params = TabFormerClassifier(**SMALL).fit(X, y).get_params(deep=True)
    assert not [key for key in params if "___" in key]


def test_log_probabilities_match_the_probabilities():
    X, y = make_table(80)
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), clf.predict_proba(X), rtol=1e-5)
    Y = np.stack([(y == "yes"), X["age"].fillna(0) > 40], axis=1).astype(int)
    multi = TabFormerClassifier(**SMALL).fit(X, Y)
    np.testing.assert_allclose(np.exp(multi.predict_log_proba(X)), multi.predict_proba(X), rtol=1e-5)


def test_labels_of_mixed_types_and_a_wide_y_at_partial_fit_are_named():
    X, y = make_table(60)
    with pytest.raises(ValueError, match=r"y mixes label types \['int', 'str'\]"):
        TabFormerClassifier(**SMALL).fit(X, pd.Series([1, "a"] * 30, dtype=object))
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"y must be 1-D class labels, as in fit .* got shape \(60, 2\)"):
        clf.partial_fit(X, np.stack([y, y], axis=1))


@pytest.mark.parametrize("estimator", [TabFormerClassifier, TabFormerPretrainer])
def test_a_module_setting_the_model_does_not_take_is_named(estimator):
    X, y = make_table(60)
    with pytest.raises(ValueError, match=r"module__bogus: not a parameter of \w+; valid module__ parameters"):
        estimator(**SMALL, module__bogus=1).fit(X, y)


@pytest.mark.parametrize("distributed", [True, {"gradient_accumulation_steps": 2}])
def test_a_model_fitted_with_distributed_on_pickles_and_saves(distributed, tmp_path):
    """Its LR scheduler kept Accelerate's wrapped optimizer (unpicklable), and save wrote accelerator_."""
    import pickle

    pytest.importorskip("accelerate")
    from tabformer import load

    X, y = make_table(80)
    clf = TabFormerClassifier(**SMALL, distributed=distributed).fit(X, y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), clf.predict_proba(X))
    clf.save(tmp_path / "m")
    assert "accelerator_" not in (tmp_path / "m" / "config.json").read_text()
    np.testing.assert_array_equal(load(tmp_path / "m").predict_proba(X), clf.predict_proba(X))


def test_fine_tuning_a_pretrained_table_encoder_on_new_categories_refuses_or_grows(tmp_path):
    """They were all read as the one 'unseen' id (the id masked-cell pretraining masks with), whatever new_categories said."""
    from tabformer import load

    rng = np.random.default_rng(0)
    unlabeled = pd.DataFrame({"num": rng.normal(size=120), "shop": rng.choice(["a", "b", "c"], 120)})
    pre = TabFormerPretrainer(**SMALL, objective="masked_cells").fit(unlabeled)
    X = pd.DataFrame({"num": rng.normal(size=120), "shop": rng.choice(["a", "b", "d"], 120)})
    y = (X["shop"] == "d").astype(int).to_numpy()
    with pytest.raises(ValueError, match=r"categories the pretrained encoder's tokenizer never saw, in column\(s\) \['shop'\]"):
        TabFormerClassifier(**SMALL, encoder=pre.encoder_).fit(X, y)
    clf = TabFormerClassifier(**dict(SMALL, max_epochs=6), encoder=pre.encoder_, new_categories="grow").fit(X, y)
    assert list(clf.tokenizer_.categories_[0]) == ["a", "b", "c", "d"]
    assert list(pre.encoder_.tokenizer.categories_[0]) == ["a", "b", "c"]  # the pretrained encoder is left as it was
    clf.save(tmp_path / "m")
    np.testing.assert_array_equal(load(tmp_path / "m").predict_proba(X), clf.predict_proba(X))
    # A frozen embedder would never train the grown rows: "d" would read as a random vector for good.
    with pytest.raises(ValueError, match=r"never saw \(\{'shop': \['d'\]\}\), but freeze_embedder=True"):
        TabFormerClassifier(**SMALL, encoder=pre.encoder_, new_categories="grow", freeze_embedder=True).fit(X, y)
    # The same in a continued fit: a probe of the pretrained embedder meeting "e".
    frozen = TabFormerClassifier(**SMALL, encoder=pre.encoder_, new_categories="grow", freeze_embedder=True)
    frozen.fit(X.assign(shop=X["shop"].replace("d", "a")), y)
    with pytest.raises(ValueError, match=r"never saw \(\{'shop': \['e'\]\}\), but freeze_embedder=True"):
        frozen.partial_fit(X.assign(shop="e"), y)
    assert list(frozen.tokenizer_.categories_[0]) == ["a", "b", "c"]  # refused before the tokenizer changed


def test_fine_tuning_on_missing_values_pretraining_never_saw_trains_their_tokens_without_a_warning():
    import warnings

    from tabformer.tokenizers import UntrainedMissingWarning

    rng = np.random.default_rng(0)
    unlabeled = pd.DataFrame({"num": rng.normal(size=120), "shop": rng.choice(["a", "b"], 120)})
    pre = TabFormerPretrainer(**SMALL, objective="masked_cells").fit(unlabeled)
    X = unlabeled.assign(num=unlabeled["num"].mask(np.arange(120) % 7 == 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrainedMissingWarning)
        clf = TabFormerClassifier(**SMALL, encoder=pre.encoder_).fit(X, (X["shop"] == "a").astype(int))
        clf.predict(X)
    assert clf.tokenizer_.had_missing_["num"] and not pre.encoder_.tokenizer.had_missing_["num"]
