"""Mixed inputs: column routing, kind detection, one sequence, masking, late fusion, explain."""

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor
from tabformer.nn.models import LateFusionModel, TabFormerModel
from tabformer.tokenizers import (
    MixedTokenizer,
    PatchTokenizer,
    TabularTokenizer,
    WordPieceTokenizer,
    infer_column_kinds,
    make_tokenizer,
)
from tabformer.tokenizers.detect import infer_column_kind

WORDS = ["red", "blue", "green", "wool", "silk", "hat", "shirt", "scarf", "big", "small", "old", "new"]


def _frame(n=96, seed=0):
    """Label = bright photo, a 'good' word in the title, or brand 'a'; each modality carries signal."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    titles = [" ".join(rng.choice(WORDS, 3)) + (" good" if t else " poor") for t in y]
    photos = [(np.full((8, 8), 180 if t else 40) + rng.integers(0, 40, (8, 8))).astype(np.uint8) for t in y]
    X = pd.DataFrame(
        {
            "title": titles,
            "photo": photos,
            "brand": np.where(y == 1, "a", rng.choice(["b", "c"], n)),
            "price": rng.normal(size=n) + y,
        }
    )
    X.loc[3, "title"] = None
    X.at[5, "photo"] = None
    return X, y


TINY = dict(
    max_epochs=3,
    verbose=0,
    random_state=0,
    batch_size=32,
    encoder__d_model=16,
    encoder__n_layers=1,
    encoder__n_heads=2,
    tokenizer__text__vocab_size=60,
    tokenizer__text__min_frequency=1,
)


@pytest.fixture(scope="module")
def mixed():
    return _frame()


# ------------------------------------------------------------------ detection
def test_empty_texts_count_as_missing_when_a_columns_kind_is_detected():
    # 70 titles and 30 "" read as categories (each title one), with None instead of "" as text
    words = ["red", "blue", "wool", "silk", "hat", "scarf", "shirt", "coat", "green", "linen"]
    titles = [f"{a} {b}" for a in words for b in words][:70]
    frame = pd.DataFrame({"title": titles + [""] * 25 + ["  "] * 5, "price": np.arange(100.0)})
    assert infer_column_kinds(frame)["title"] == "text" == infer_column_kinds(frame.replace(["", "  "], None))["title"]
    assert infer_column_kinds(pd.DataFrame({"code": ["a", "b", ""] * 20}))["code"] == "categorical"
    assert infer_column_kinds(pd.DataFrame({"blank": [""] * 60}))["blank"] == "categorical"


def test_an_image_error_at_fit_names_the_frames_row_and_column():
    # "image 7": the index among the present images of every image column, not the frame's row
    X, y = _frame(n=40)
    X["photo"] = X["photo"].astype(object)
    for row in (0, 1, 2):
        X.at[row, "photo"] = None
    X.at[10, "photo"] = np.zeros((20, 20), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"the image of row 10 \(column 'photo'\)"):
        TabFormerClassifier(**TINY).fit(X, y)


def test_detection_rules():
    n = 200
    frame = pd.DataFrame(
        {
            "sentence": [f"review number {i} was fine" for i in range(n)],  # distinct, many words
            "job": [f"title{i % 150}" for i in range(n)],  # > max_categories distinct
            "status": np.resize(["Fully Paid", "Current", "Charged Off"], n),  # spaces, few values
            "state": pd.Series(np.resize(["CA", "NY"], n), dtype="string"),  # pandas string dtype
            "grade": pd.Categorical(np.resize(["a b c", "d e f"], n)),  # category: the user's choice
            "flag": np.resize([True, False], n),
            "count": np.arange(n),
            "price": np.linspace(0, 1, n),
            "image": [np.zeros((4, 4, 3), np.uint8)] * n,
            "path": [f"img/{i}.png" for i in range(n)],
        }
    )
    kinds = infer_column_kinds(frame)
    assert kinds == {
        "sentence": "text",
        "job": "text",
        "status": "categorical",
        "state": "categorical",
        "grade": "categorical",
        "flag": "categorical",
        "count": "numeric",
        "price": "numeric",
        "image": "image",
        "path": "image",
    }
    assert infer_column_kind(frame["job"], max_categories=500) == "categorical"


@pytest.mark.parametrize(
    "column, message",
    [
        (pd.Series(pd.period_range("2020", periods=3, freq="M"), name="when"), "'when' has dtype period"),
        (pd.Series([None, None, None], name="empty"), "'empty' holds only missing values"),
        (pd.Series(["a", 1, "b"], name="odd"), "'odd' mixes strings with int"),
        (pd.Series([np.zeros((2, 2)), "x", None], name="pic"), "'pic' mixes images"),
    ],
)
def test_detection_errors_name_the_column(column, message):
    with pytest.raises(ValueError, match=message):
        infer_column_kind(column)


def test_auto_picks_mixed_only_with_text_or_images(mixed):
    X, _ = mixed
    assert isinstance(make_tokenizer("auto", X), MixedTokenizer)
    assert isinstance(make_tokenizer("auto", X[["brand", "price"]]), TabularTokenizer)


# ------------------------------------------------------------------- tokenizer
def test_fitted_routing_and_one_sequence(mixed):
    X, _ = mixed
    tok = MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1)).fit(X)
    assert tok.column_kinds_ == {"title": "text", "photo": "image", "brand": "categorical", "price": "numeric"}
    assert [name for name, _, _ in tok.transformers_] == ["text", "image", "table"]
    batch = tok.transform(X)
    assert batch["text:title/present"][3] == False  # noqa: E712
    assert batch["image:photo/present"][5] == False  # noqa: E712
    assert batch["image:photo/pixels"].shape == (len(X), 1, 8, 8)
    embedder = tok.build_embedder(16).eval()
    with torch.no_grad():
        tokens, mask = embedder(**{k: torch.as_tensor(v) for k, v in batch.items()})
    n_text = batch["text:title/input_ids"].shape[1]
    assert tokens.shape == (len(X), n_text + 4 + 2, 16)  # words + 2x2 patches + 2 cells
    # Missing text / image: every token of that segment is masked; table cells stay.
    assert not mask[3, :n_text].any() and mask[3, n_text:].all()
    assert not mask[5, n_text : n_text + 4].any() and mask[5, :n_text].any()


def test_masked_segment_content_is_ignored(mixed):
    """A missing text or image is masked, not imputed: whatever its placeholder holds, the
    CLS output is the same, while a present segment's content does matter."""
    X, y = mixed
    clf = TabFormerClassifier(**TINY).fit(X, y)
    batch = clf.tokenizer_.transform(X.iloc[:8])
    reference = clf.forward_features(batch)
    scrambled = dict(batch)
    scrambled["text:title/input_ids"] = np.where(batch["text:title/attention_mask"], 7, 0)
    scrambled["image:photo/pixels"] = np.ones_like(batch["image:photo/pixels"])
    changed = clf.forward_features(scrambled)
    # Row 3 has no title, row 5 no photo: only their other segment changed.
    np.testing.assert_allclose(
        changed[3], clf.forward_features({**batch, "image:photo/pixels": scrambled["image:photo/pixels"]})[3], atol=1e-5
    )
    both_masked = {**scrambled, "text:title/present": np.zeros(8, bool), "image:photo/present": np.zeros(8, bool)}
    only_table = {**batch, "text:title/present": np.zeros(8, bool), "image:photo/present": np.zeros(8, bool)}
    np.testing.assert_allclose(clf.forward_features(both_masked), clf.forward_features(only_table), atol=1e-5)
    assert not np.allclose(changed[0], reference[0], atol=1e-4)


def test_explicit_transformers_and_param_routing(mixed):
    X, y = mixed
    tok = MixedTokenizer(
        [
            ("words", WordPieceTokenizer(vocab_size=60, min_frequency=1), ["title"]),
            ("pics", PatchTokenizer(patch_size=8), ["photo"]),
            ("cells", TabularTokenizer(), ["brand", "price"]),
        ]
    )
    tok.set_params(pics__patch_size=4)
    assert tok.get_params()["pics__patch_size"] == 4
    fitted = clone(tok).fit(X)
    assert [key for key, _, _ in fitted.segments_] == ["words:title", "pics:photo", "cells"]
    assert fitted.transformers_[1][1].grid_shape_ == (2, 2)
    clf = TabFormerClassifier(
        tokenizer=tok, tokenizer__pics__patch_size=8, **{k: v for k, v in TINY.items() if not k.startswith("tokenizer")}
    )
    clf.fit(X, y)
    assert clf.tokenizer_.transformers_[1][1].grid_shape_ == (1, 1)


def test_several_text_columns_share_one_vocabulary(mixed):
    X, _ = mixed
    X2 = X.assign(subtitle=[t.upper() if isinstance(t, str) else None for t in X["title"]])
    tok = MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1)).fit(X2)
    assert [key for key, _, _ in tok.segments_] == ["text:title", "text:subtitle", "image:photo", "table"]
    batch = tok.transform(X2)
    np.testing.assert_array_equal(batch["text:title/input_ids"][0], batch["text:subtitle/input_ids"][0])  # lower-cased
    embedder = tok.build_embedder(8)
    assert len(embedder.embedders) == 3  # one text embedder for both columns


@pytest.mark.parametrize(
    "transformers, message",
    [
        ([("t", "wordpiece", ["title"]), ("p", "patch", ["photo"])], r"\['brand', 'price'\] are not routed"),
        (
            [("t", "wordpiece", ["title"]), ("u", "tabular", ["title", "brand", "price"]), ("p", "patch", ["photo"])],
            "'title' is routed twice",
        ),
        ([("t", "wordpiece", ["headline"])], r"names column\(s\) \['headline'\]"),
        ([("a/b", "wordpiece", ["title"])], "must be a non-empty str without"),
        ([("t", "bert", ["title"])], "unknown tokenizer 'bert'"),
    ],
)
def test_bad_routing_is_named(mixed, transformers, message):
    X, _ = mixed
    with pytest.raises(ValueError, match=message):
        MixedTokenizer(transformers).fit(X)


def test_bad_input_errors(mixed):
    X, _ = mixed
    tok = MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1)).fit(X)
    with pytest.raises(ValueError, match=r"missing \['price'\]"):
        tok.transform(X.drop(columns="price"))
    bad = X.copy()
    bad["title"] = bad["title"].astype(object)
    bad.at[0, "title"] = 3.5
    with pytest.raises(ValueError, match="text column 'title' holds a float at row 0"):
        tok.transform(bad)
    bad = X.copy()
    bad.at[0, "photo"] = np.zeros((9, 9), np.uint8)
    with pytest.raises(ValueError, match=r"column\(s\) \['photo'\]: image 0 is 9x9"):
        tok.transform(bad)
    with pytest.raises(TypeError, match="reads a pandas DataFrame"):
        tok.transform(X.to_numpy())


# -------------------------------------------------------------- estimators
def test_early_fusion_learns_and_round_trips(mixed, tmp_path):
    import pickle

    X, y = mixed
    clf = TabFormerClassifier(**dict(TINY, max_epochs=15, validation_fraction=None, fusion="early")).fit(X, y)
    assert isinstance(clf.module_, TabFormerModel)
    assert clf.score(X, y) > 0.9
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), atol=1e-6)


def test_late_fusion_has_one_encoder_per_modality(mixed):
    X, y = mixed
    clf = TabFormerClassifier(fusion="late", **dict(TINY, max_epochs=15, validation_fraction=None)).fit(X, y)
    assert isinstance(clf.module_, LateFusionModel)
    assert len(clf.module_.encoders) == 3
    first, second = clf.module_.encoders[0], clf.module_.encoders[1]
    assert first.layers[0].attention.query.weight.data_ptr() != second.layers[0].attention.query.weight.data_ptr()
    assert clf.score(X, y) > 0.9


def test_mean_pooled_features_of_late_fusion_are_refused_by_name_also_in_an_ensemble(mixed):
    X, y = mixed
    for size in (1, 2):
        clf = TabFormerClassifier(fusion="late", ensemble_size=size, **TINY).fit(X, y)
        assert clf.forward_features(X.iloc[:3]).shape == (3, size * TINY["encoder__d_model"])
        with pytest.raises(ValueError, match="pooling='mean' needs a single token sequence; LateFusionModel has none"):
            clf.forward_features(X.iloc[:3], pooling="mean")


def test_late_fusion_explains_each_encoders_attention_in_the_sequence_layout(mixed):
    X, y = mixed
    clf = TabFormerClassifier(fusion="late", **TINY).fit(X, y)
    tokens = clf.explain(X.iloc[:6], layer=0)
    assert set(tokens["column"]) == {"title", "photo", "brand", "price"}
    assert "title" not in set(tokens.loc[tokens["row"] == 3, "column"])  # masked segments are absent
    assert "photo" not in set(tokens.loc[tokens["row"] == 5, "column"])
    # Each modality's encoder spreads its CLS attention over its own tokens and its own CLS;
    # the CLS row is their mean, so a modality's tokens sum to at most 1 / n_modalities.
    per_modality = clf.explain(X.iloc[:6], layer=0, level="column").groupby(["row", "modality"])["attention"].sum()
    assert ((per_modality > 0) & (per_modality <= 1 / 3 + 1e-6)).all()
    # And they are that encoder's weights: recompute the image encoder's CLS row by hand.
    batch = clf.tokenize(X.iloc[:6])
    module = clf.module_.eval()
    with torch.no_grad():
        inputs = {key: torch.as_tensor(value) for key, value in batch.items()}
        groups = module.embedder.forward_groups(return_positions=True, **inputs)
        image = module.embedder.group_names.index("image")
        _, maps = module.encoders[image](groups[image][0], groups[image][1], return_attention=True)
    expected = maps[0].mean(dim=1)[:, 0, 1:].numpy() / 3
    photo = tokens[tokens["column"] == "photo"]
    got = photo.pivot(index="row", columns="label", values="attention").to_numpy()
    rows = sorted(photo["row"].unique())
    np.testing.assert_allclose(got, expected[rows], rtol=1e-5, atol=1e-7)


def test_auto_fusion_is_late_with_an_image_and_early_otherwise(mixed):
    X, y = mixed
    clf = TabFormerClassifier(**TINY).fit(X, y)
    assert clf.get_params()["fusion"] == "auto" and clone(clf).fusion == "auto"
    assert clf.resolved_params_["fusion"] == "late" and isinstance(clf.module_, LateFusionModel)
    text_and_table = TabFormerRegressor(**TINY).fit(X[["title", "brand", "price"]], X["price"])
    assert text_and_table.resolved_params_["fusion"] == "early" and isinstance(text_and_table.module_, TabFormerModel)
    image_alone = TabFormerClassifier(**dict(TINY, tokenizer="mixed")).fit(X[["photo"]], y)
    assert image_alone.resolved_params_["fusion"] == "early"
    table = TabFormerClassifier(**TINY).fit(X[["brand", "price"]], y)
    assert table.resolved_params_["fusion"] == "early"


def test_an_image_fused_late_gets_its_own_recipe_and_other_mixes_the_table_one(mixed):
    X, y = mixed
    late = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, y)
    settings = late.resolved_params_
    assert settings["fusion"] == "late" and settings["lr"] == 3e-4 and settings["patience"] is None
    assert settings["encoder__d_model"] == 256 and late.module_.encoders[0].d_model == 256
    assert late.get_params()["lr"] == "auto" and "encoder__d_model" not in late.get_params()
    # The user's settings win over the recipe's.
    mine = TabFormerClassifier(lr=1e-3, encoder__d_model=32, max_epochs=1, verbose=0, random_state=0).fit(X, y)
    assert mine.resolved_params_["lr"] == 1e-3 and mine.module_.encoders[0].d_model == 32
    assert mine.resolved_params_["encoder__attention_dropout"] == 0.0  # the rest of the recipe still applies
    # Early fusion, asked for or resolved (text + table), and late fusion without an image keep the table recipe.
    early = TabFormerClassifier(fusion="early", max_epochs=1, verbose=0, random_state=0).fit(X, y)
    text_and_table = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X[["title", "brand", "price"]], y)
    late_without_image = TabFormerClassifier(fusion="late", max_epochs=1, verbose=0).fit(X[["title", "brand", "price"]], y)
    assert isinstance(late_without_image.module_, LateFusionModel)
    # The fusion a fit used is in resolved_params_ whether it was asked for or resolved (it was left out when asked for).
    assert early.resolved_params_["fusion"] == "early" and late_without_image.resolved_params_["fusion"] == "late"
    for model in (early, text_and_table, late_without_image):
        assert model.resolved_params_["lr"] == 1e-3 and model.resolved_params_["patience"] == 8
        assert "encoder__d_model" not in model.resolved_params_


def test_auto_fusion_keeps_one_encoder_to_warm_start(mixed):
    X, y = mixed
    pretrained = TabFormerPretrainer(**dict(TINY, max_epochs=1)).fit(X).encoder_
    clf = TabFormerClassifier(encoder=pretrained, max_epochs=1, verbose=0, random_state=0).fit(X, y)
    assert clf.resolved_params_["fusion"] == "early" and isinstance(clf.module_, TabFormerModel)


def test_fusion_errors(mixed):
    X, y = mixed
    with pytest.raises(ValueError, match="'fusion' parameter of TabFormerClassifier must be a str among"):
        TabFormerClassifier(fusion="middle", **TINY).fit(X, y)
    with pytest.raises(ValueError, match="fusion='late' needs mixed inputs"):
        TabFormerClassifier(fusion="late", max_epochs=1, verbose=0).fit(X[["brand", "price"]], y)


def test_regressor_on_mixed_rows(mixed):
    X, y = mixed
    target = y * 2.0 + X["price"].to_numpy()
    reg = TabFormerRegressor(**TINY).fit(X, target)
    assert reg.predict(X).shape == (len(X),)


def test_explain_per_column_and_per_token(mixed):
    X, y = mixed
    clf = TabFormerClassifier(**TINY).fit(X, y)
    tokens = clf.explain(X.iloc[:6], layer=0)
    assert set(tokens["column"]) == {"title", "photo", "brand", "price"}
    assert set(tokens.loc[tokens["column"] == "photo", "label"]) == {"r0c0", "r0c1", "r1c0", "r1c1"}
    # Masked segments are absent, not reported with zero weight.
    assert "title" not in set(tokens.loc[tokens["row"] == 3, "column"])
    assert "photo" not in set(tokens.loc[tokens["row"] == 5, "column"])
    columns = clf.explain(X.iloc[:6], layer=0, level="column")
    assert list(columns.columns) == ["row", "layer", "column", "modality", "n_tokens", "attention", "attention_per_token"]
    assert columns.set_index("column")["modality"].to_dict() == {
        "title": "text",
        "photo": "image",
        "brand": "table",
        "price": "table",
    }
    np.testing.assert_allclose(columns["attention_per_token"], columns["attention"] / columns["n_tokens"])
    sums = columns.groupby("row")["attention"].sum()
    assert ((sums > 0) & (sums <= 1 + 1e-6)).all()
    assert clf.explain(X.iloc[:2], layer=-1)["layer"].unique().tolist() == [0]  # 1-layer encoder
    with pytest.raises(ValueError, match="layer must be 'all' or an int in"):
        clf.explain(X.iloc[:2], layer=1)
    merged = tokens.groupby(["row", "column"], sort=False)["attention"].sum().reset_index()
    np.testing.assert_allclose(merged["attention"].to_numpy(), columns["attention"].to_numpy(), rtol=1e-6)


def test_modality_ablation_finds_the_modality_the_label_lives_in():
    # Only the title carries the label: masking it must cost far more than masking the rest.
    X, y = _frame(n=160, seed=1)
    X["photo"] = [np.random.default_rng(i).integers(0, 256, (8, 8)).astype(np.uint8) for i in range(len(X))]
    X["brand"] = np.resize(["a", "b", "c"], len(X))
    X["price"] = np.random.default_rng(2).normal(size=len(X))
    X.loc[3, "title"] = "x good"
    clf = TabFormerClassifier(**dict(TINY, max_epochs=30, lr=5e-3, validation_fraction=None)).fit(X, y)
    ablation = clf.modality_ablation(X, y).set_index("modality")
    assert list(ablation.index) == ["text", "image", "table"]
    assert ablation.loc["text", "columns"] == ["title"]
    assert ablation.loc["text", "score"] == pytest.approx(clf.score(X, y))
    assert ablation.loc["text", "drop"] > 0.25
    assert ablation.loc["text", "drop"] > ablation.loc["image", "drop"] + 0.2
    assert ablation.loc["text", "drop"] > ablation.loc["table", "drop"] + 0.2
    np.testing.assert_allclose(ablation["drop"], ablation["score"] - ablation["masked_score"])
    columns = clf.explain(X.iloc[:4], level="column", y=y[:4], layer=0)
    assert columns.loc[columns["column"] == "price", "ablation"].nunique() == 1
    with pytest.raises(TypeError, match="needs mixed inputs"):
        TabFormerClassifier(max_epochs=1, verbose=0).fit(X[["brand", "price"]], y).modality_ablation(X[["brand", "price"]], y)


def test_detection_is_right_on_the_real_benchmarks():
    from tabformer.datasets import MissingDatasetError, load_emoji, load_lending_club

    try:
        X, _ = load_lending_club()
    except MissingDatasetError as error:
        pytest.skip(str(error))
    kinds = infer_column_kinds(X)
    strings = [c for c in X.columns if X[c].dtype == object and c != "emp_title"]
    assert kinds["emp_title"] == "text"
    assert len(strings) == 12 and all(kinds[c] == "categorical" for c in strings)
    assert all(kinds[c] == "numeric" for c in X.columns if c not in strings + ["emp_title"])
    try:
        images, _ = load_emoji(size=16)
    except MissingDatasetError as error:
        pytest.skip(str(error))
    assert infer_column_kinds(images) == {"image": "image", "name": "text"}


def test_segment_dropout_masks_whole_segments_in_training_only(mixed):
    X, _ = mixed
    tok = MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1), segment_dropout=0.5).fit(X)
    batch = {k: torch.as_tensor(v) for k, v in tok.transform(X).items()}
    embedder = tok.build_embedder(8)
    torch.manual_seed(0)
    parts = embedder.train().forward_segments(**batch)
    reference = embedder.eval().forward_segments(**batch)
    dropped = torch.stack([~m.any(dim=1) & r.any(dim=1) for (_, _, m), (_, _, r) in zip(parts, reference)], dim=1)
    assert 0.3 < dropped.float().mean() < 0.6  # ~half of the segments, never all of one row
    assert not dropped.all(dim=1).any()
    for (_, _, m), (_, _, r) in zip(parts, reference):
        kept = m.any(dim=1)
        assert torch.equal(m[kept], r[kept])  # a kept segment is untouched
    with pytest.raises(ValueError, match="segment_dropout must be in"):
        MixedTokenizer(segment_dropout=1.0).fit(X)


# ------------------------------------------------------- review regressions
def test_auto_does_not_fall_back_to_a_table_when_a_column_is_undetectable(mixed):
    X, y = mixed
    bad = X.assign(when=pd.period_range("2020", periods=len(X), freq="D"))
    with pytest.raises(ValueError, match="'when' has dtype period"):
        TabFormerClassifier(**TINY).fit(bad, y)
    with pytest.raises(ValueError, match="need str column names"):
        make_tokenizer("auto", X.set_axis(range(4), axis=1))


def test_auto_with_mixed_settings_and_mixed_by_name(mixed):
    X, y = mixed
    # max_categories is honoured by the auto choice itself: 3 brands > 2 -> text.
    tok = make_tokenizer("auto", X[["brand", "price"]], {"max_categories": 2})
    assert isinstance(tok, MixedTokenizer)
    assert tok.fit(X[["brand", "price"]]).column_kinds_ == {"brand": "text", "price": "numeric"}
    clf = TabFormerClassifier(tokenizer="mixed", **TINY).fit(X, y)
    assert clf.tokenizer_.transformers_[0][1].vocab_size == 60
    assert MixedTokenizer().set_params(text__vocab_size=50).text.vocab_size == 50


def test_table_template_lists_override_detection(mixed):
    X, _ = mixed
    tok = MixedTokenizer(table=TabularTokenizer(categorical_columns=["title"])).fit(X.fillna({"title": "none"}))
    assert tok.column_kinds_["title"] == "categorical"


def test_odd_columns_are_named(mixed):
    X, _ = mixed
    with pytest.raises(ValueError, match="'tags' holds list values"):
        MixedTokenizer().fit(X.assign(tags=[["a", "b"]] * len(X)))
    with pytest.raises(ValueError, match=r"\['price'\] appear more than once"):
        MixedTokenizer().fit(pd.concat([X, X[["price"]]], axis=1))


def test_slash_in_column_names_keeps_segments_apart(mixed):
    X, _ = mixed
    X2 = X.assign(**{"title/short": [t.split()[0] if isinstance(t, str) else None for t in X["title"]]})
    tok = MixedTokenizer(
        [
            ("text", WordPieceTokenizer(vocab_size=60, min_frequency=1), ["title", "title/short"]),
            ("image", PatchTokenizer(), ["photo"]),
            ("table", TabularTokenizer(), ["brand", "price"]),
        ]
    ).fit(X2)
    batch = tok.transform(X2)
    from tabformer.nn.embedders.mixed import segment_arrays

    assert set(segment_arrays(batch, "text:title")) == {"input_ids", "attention_mask", "token_type_ids", "present"}
    assert segment_arrays(batch, "text:title/short")["input_ids"].shape[1] < batch["text:title/input_ids"].shape[1]


def test_late_fusion_refuses_to_freeze_random_encoders(mixed):
    X, y = mixed
    with pytest.raises(ValueError, match="freeze_encoder=True with fusion='late'"):
        TabFormerClassifier(fusion="late", freeze_encoder=True, **TINY).fit(X, y)
    with pytest.raises(ValueError, match="freeze_embedder=True with fusion='late'"):
        TabFormerClassifier(fusion="late", freeze_embedder=True, **TINY).fit(X, y)


def test_mid_fusion_keeps_modalities_apart_in_the_first_layers(mixed):
    from tabformer.nn.attention import grouped_attention_bias

    mask = torch.tensor([[True, True, True, False, True]])
    groups = torch.tensor([-1, 0, 0, 1, 1])  # CLS, two tokens of group 0, two of group 1
    allowed = grouped_attention_bias(mask, groups, torch.float32)[0, 0] == 0
    assert allowed[0].tolist() == [True, True, True, False, True]  # CLS reads every real token
    assert allowed[1].tolist() == [False, True, True, False, False]  # own group only, not CLS
    assert allowed[3].tolist() == [False, False, False, True, True]  # a masked query: its group, and itself
    X, y = mixed
    clf = TabFormerClassifier(fusion=1, **dict(TINY, encoder__n_layers=2)).fit(X, y)
    assert clf.module_.fusion_layer == 1
    batch = clf.tokenizer_.transform(X.iloc[:6])
    _, maps = clf.forward_features(batch, return_attention=True)
    n_text = batch["text:title/input_ids"].shape[1]
    first, second = maps[0].mean(axis=1), maps[1].mean(axis=1)
    # Layer 0: a title token puts no weight on photo tokens; layer 1 may.
    assert first[0, 1, 1 + n_text : 1 + n_text + 4].max() < 1e-6
    assert second[0, 1, 1 + n_text : 1 + n_text + 4].max() > 1e-4
    with pytest.raises(ValueError, match=r"fusion layer must be in \[0, 2\]"):
        TabFormerClassifier(fusion=3, **dict(TINY, encoder__n_layers=2)).fit(X, y)
    with pytest.raises(ValueError, match="mid fusion needs mixed inputs"):
        TabFormerClassifier(fusion=1, max_epochs=1, verbose=0).fit(X[["brand", "price"]], y)


def test_fusion_is_a_grid_searchable_hyperparameter(mixed):
    from sklearn.model_selection import GridSearchCV

    X, y = mixed
    search = GridSearchCV(
        TabFormerClassifier(**dict(TINY, max_epochs=2, encoder__n_layers=2)),
        {"fusion": ["early", 1, "late"]},
        cv=2,
        error_score="raise",  # a fit that crashes must fail the test, not score NaN
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_params_["fusion"] in ("early", 1, "late")
    assert len(search.cv_results_["mean_test_score"]) == 3
