"""Review of mixed inputs (text, image and table columns in one DataFrame): regressions found by the review."""

import warnings

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import MixedTokenizer, PatchTokenizer, TabularTokenizer, WordPieceTokenizer


def _frame(n=12, seed=0):
    rng = np.random.default_rng(seed)
    words = ["red", "blue", "green", "wool", "silk", "hat"]
    return pd.DataFrame(
        {
            "title": [" ".join(rng.choice(words, 3)) + f" {i}" for i in range(n)],
            "photo": [rng.integers(0, 255, (8, 8), dtype=np.uint8) for _ in range(n)],
            "brand": rng.choice(["a", "b", "c"], n),
            "price": rng.normal(size=n),
        }
    )


def test_missing_image_with_upscale_to_training_size_only():
    # The estimators' stem recipe upscales the training images (image_size=64, accept_any_size=False): a
    # missing photo's stand-in must be of the training size, not of the 64 px output size, which the image
    # tokenizer refuses ("image 5 is 64x64 but the tokenizer was fitted on 8x8 images").
    X = _frame()
    X.at[5, "photo"] = None
    tokenizer = MixedTokenizer(
        text=WordPieceTokenizer(vocab_size=60, min_frequency=1), image=PatchTokenizer(image_size=16, accept_any_size=False)
    )
    batch = tokenizer.fit(X).transform(X)
    assert batch["image:photo/pixels"].shape == (len(X), 1, 16, 16)
    assert batch["image:photo/present"].tolist() == [i != 5 for i in range(len(X))]


def test_numbers_in_object_column_are_numbers_in_a_mixed_frame_as_in_a_table():
    # An object column of numbers was read as categories (first silently beside a text column, then with a
    # warning); a table reads it as numbers now, and so does a mixed frame.
    X = _frame().assign(rating=lambda f: pd.Series(np.arange(len(f)) * 0.5, dtype=object))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*read as categories")
        tokenizer = MixedTokenizer(text=WordPieceTokenizer(vocab_size=60, min_frequency=1)).fit(X)
    assert tokenizer.column_kinds_["rating"] == "numeric"
    # listed by the user, it is categorical
    listed = MixedTokenizer(
        text=WordPieceTokenizer(vocab_size=60, min_frequency=1), table=TabularTokenizer(categorical_columns=["rating"])
    ).fit(X)
    assert listed.column_kinds_["rating"] == "categorical"


TINY = dict(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1, verbose=0, random_state=0)


def test_column_routed_to_table_is_not_text_for_the_recipe():
    # 'code' has more distinct strings than max_categories, so detection alone calls it text; the user routes it
    # to the table template. The recipe read detection alone and gave this text + table model the text recipe
    # (a 30000 sub-word vocabulary for 'title', mean pooling, token dropout), unlike the same routing given
    # as transformers.
    n = 24
    X = pd.DataFrame({"title": [f"red wool hat number {i}" for i in range(n)], "code": [f"c{i}x" for i in range(n)]})
    y = np.arange(n) % 2
    forced = TabFormerClassifier(**TINY, tokenizer__max_categories=10, tokenizer__table__categorical_columns=["code"])
    forced.fit(X, y)
    assert forced.tokenizer_.column_kinds_ == {"title": "text", "code": "categorical"}
    assert "tokenizer__text__vocab_size" not in forced.resolved_params_
    assert "head__pooling" not in forced.resolved_params_
    routed = MixedTokenizer([("text", WordPieceTokenizer(vocab_size=60), ["title"]), ("table", TabularTokenizer(), ["code"])])
    explicit = TabFormerClassifier(**TINY, tokenizer=routed).fit(X, y)
    assert forced.resolved_params_ == explicit.resolved_params_
    # a frame of text columns alone keeps the text recipe
    text_only = TabFormerClassifier(**TINY, tokenizer__text__vocab_size=60).fit(X[["title"]].assign(body=X["title"] + " more"), y)
    assert text_only.resolved_params_["head__pooling"] == "mean"


def test_datetime_columns_beside_text_go_to_the_table_as_in_a_plain_table(tmp_path):
    # A plain table reads datetime columns (elapsed time and calendar parts); beside a text column the detection
    # refused them ("column 'when' has dtype datetime64[us], which tabformer cannot tokenize").
    import tabformer

    X = _frame(16).drop(columns="photo")
    X["when"] = pd.date_range("2021-01-03 10:00", periods=len(X), freq="37h").astype("datetime64[ns]")
    X["local"] = X["when"].dt.tz_localize("Europe/Paris").astype("datetime64[us, Europe/Paris]")
    y = np.arange(len(X)) % 2
    clf = TabFormerClassifier(**TINY, tokenizer__text__vocab_size=60).fit(X, y)
    kinds = clf.tokenizer_.column_kinds_
    assert kinds == {"title": "text", "brand": "categorical", "price": "numeric", "when": "datetime", "local": "datetime"}
    table = dict((name, sub) for name, sub, _ in clf.tokenizer_.transformers_)["table"]
    plain = TabularTokenizer().fit(X.drop(columns="title"))
    assert table.datetime_parts_ == plain.datetime_parts_ and table.datetime_parts_["when"][:3] == ["elapsed", "month", "weekday"]
    # a record without a date predicts
    dateless = X.iloc[:4].assign(when=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing token no training row trained
        assert clf.predict(dateless).shape == (4,)
    # a datetime column is one column in the explanation, its parts ('when.month_sin') its tokens
    columns = clf.explain(X.iloc[:3], layer=0, level="column")
    assert set(columns["column"]) == {"title", "brand", "price", "when", "local"}
    assert columns.set_index(["row", "column"])["modality"].xs("when", level="column").eq("table").all()
    clf.save(tmp_path / "m")
    loaded = tabformer.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    assert loaded.tokenizer_.column_kinds_ == kinds


def test_template_given_by_name_takes_its_settings():
    # ``tokenizer__text="wordpiece"`` beside ``tokenizer__text__vocab_size`` crashed in sklearn's set_params
    # ("'str' object has no attribute 'set_params'"), and a named template alone failed to clone at fit;
    # ``transformers`` accepts names, so the templates do too.
    X = _frame(16).drop(columns="photo")
    y = np.arange(len(X)) % 2
    clf = TabFormerClassifier(**TINY, tokenizer__text="wordpiece", tokenizer__text__vocab_size=200).fit(X, y)
    text = dict((name, sub) for name, sub, _ in clf.tokenizer_.transformers_)["text"]
    assert isinstance(text, WordPieceTokenizer) and text.vocab_size == 200
    assert clf.get_params()["tokenizer__text"] == "wordpiece"  # the estimator keeps what it was given
    named = MixedTokenizer(text="wordpiece", table="tabular").fit(X)
    assert named.column_kinds_ == {"title": "text", "brand": "categorical", "price": "numeric"}
    with pytest.raises(ValueError, match="text='nope' names no tokenizer; choose one of"):
        MixedTokenizer(text="nope").fit(X)
    with pytest.raises(TypeError, match="image must be a tabformer tokenizer, its name or None, got int"):
        MixedTokenizer(image=3).set_params(image__patch_size=4)
