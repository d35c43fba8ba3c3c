"""Follow-ups of a review: each case misled or failed before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"price": rng.normal(size=40), "colour": rng.choice(["red", "blue"], 40)})
    return X, (X["price"] > 0).astype(int).to_numpy()


def test_explain_with_y_on_a_table_model_says_ablation_needs_mixed_inputs(table):
    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"needs mixed inputs .*TabularTokenizer reads one modality. Leave y out"):
        clf.explain(X.iloc[:3], level="column", y=y[:3])
    assert list(clf.explain(X.iloc[:3], level="column")["column"].unique()) == ["price", "colour"]


def test_explain_refuses_y_at_the_token_level_rather_than_ignoring_it(table):
    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"explain uses y only with level='column' .* Leave y out, or pass level='column'"):
        clf.explain(X.iloc[:3], y=y[:3])


def test_a_sentence_pair_model_given_one_of_its_texts_names_the_other():
    X = pd.DataFrame({"question": ["is it good", "was it bad"] * 10, "answer": ["yes it is", "no"] * 10})
    clf = TabFormerClassifier(tokenizer="wordpiece", tokenizer__vocab_size=60, **SMALL).fit(X, [0, 1] * 10)
    expected = r"X lacks the text column 'answer': fit read the sentence pair \['question', 'answer'\]"
    with pytest.raises(ValueError, match=expected):
        clf.predict(X[["question"]])
    with pytest.raises(ValueError, match="lacks the text column 'question'"):
        clf.predict(X[["answer"]])


def test_a_tagger_refuses_training_tags_of_one_class():
    from tabformer import TabFormerTagger

    sentences = [["Alice", "visits", "Paris"], ["Bob", "stays"]]
    with pytest.raises(ValueError, match=r"y has only 1 tag \('O'\); a tagger needs samples of at least 2 classes"):
        TabFormerTagger(tokenizer="wordpiece", **SMALL).fit(sentences, [["O", "O", "O"], ["O", "O"]])


def test_explain_and_plot_show_integer_column_labels_not_x0(table):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tabformer import plot

    X, y = table
    X = X.assign(when=pd.date_range("2024-01-01", periods=len(X), freq="D")).set_axis([0, 1, 2], axis=1)
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    tokens = clf.explain(X.iloc[:2])
    assert set(tokens["column"]) == {"0", "1", "2"}
    assert {"0", "1", "2.elapsed", "2.month_sin"} <= set(tokens["label"])
    assert sorted(clf.explain(X.iloc[:2], level="column")["column"].unique()) == ["0", "1", "2"]
    ax = plot.attention(clf, X.iloc[[0]])
    assert sorted(tick.get_text() for tick in ax.get_yticklabels()) == ["0", "1", "2"]
    plt.close("all")


def test_predicting_on_parquet_warns_once_with_the_whole_files_counts(table, tmp_path):
    import warnings

    pytest.importorskip("pyarrow")
    from tabformer.tokenizers import UnseenCategoryWarning, UntrainedMissingWarning

    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"price": rng.normal(size=60), "colour": rng.choice(["RED", "teal"], 60)})
    rows.loc[::2, "price"] = np.nan
    rows.to_parquet(tmp_path / "new.parquet", row_group_size=20)  # three pieces, each read on its own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(tmp_path / "new.parquet")
    messages = [str(w.message) for w in caught]
    assert [w.category for w in caught] == [UntrainedMissingWarning, UserWarning], messages
    assert "'price' (30 missing)" in messages[0]
    assert "'colour': none of its 60 values" in messages[1] and "('RED' against 'red')" in messages[1]
    # The whole file has a fitted category in its last piece: the column is no recoding
    rows.loc[59, "colour"] = "blue"
    rows.to_parquet(tmp_path / "known.parquet", row_group_size=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(tmp_path / "known.parquet")
    # its 59 new values read the untrained 'unseen' id (category_dropout=0): that warning instead, with the file's count
    assert [w.category for w in caught] == [UntrainedMissingWarning, UnseenCategoryWarning]
    assert "'colour' (59 row(s), e.g. " in str(caught[1].message)


def _tiny_bert_folder(folder, vocab):
    """A 1-layer, 8-wide BERT checkpoint, hand-written: enough for load_text_folder to read its tokenizer."""
    import json

    import torch
    from safetensors.torch import save_file

    d, ff = 8, 16
    shapes = {
        "embeddings.word_embeddings.weight": (len(vocab), d),
        "embeddings.position_embeddings.weight": (16, d),
        "embeddings.token_type_embeddings.weight": (2, d),
    }
    for name, shape in [("query", (d, d)), ("key", (d, d)), ("value", (d, d))]:
        shapes[f"encoder.layer.0.attention.self.{name}.weight"] = shape
    shapes.update(
        {
            "encoder.layer.0.attention.output.dense.weight": (d, d),
            "encoder.layer.0.intermediate.dense.weight": (ff, d),
            "encoder.layer.0.output.dense.weight": (d, ff),
        }
    )
    for key, shape in list(shapes.items()):
        if key.startswith("encoder."):
            shapes[key.replace(".weight", ".bias")] = shape[:1]
    for norm in ("embeddings.LayerNorm", "encoder.layer.0.attention.output.LayerNorm", "encoder.layer.0.output.LayerNorm"):
        shapes[f"{norm}.weight"], shapes[f"{norm}.bias"] = (d,), (d,)
    save_file({key: torch.randn(shape) for key, shape in shapes.items()}, str(folder / "model.safetensors"))
    config = dict(model_type="bert", hidden_size=d, num_hidden_layers=1, num_attention_heads=2, intermediate_size=ff)
    (folder / "config.json").write_text(json.dumps(dict(config, max_position_embeddings=16)))
    (folder / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({"do_lower_case": True}, ["cafe", "中", "文"]),  # strip_accents unset: follows lower-casing
        ({"do_lower_case": True, "strip_accents": False}, ["café", "中", "文"]),
        ({"do_lower_case": False, "strip_accents": True}, ["Cafe", "中", "文"]),
        ({"do_lower_case": False, "tokenize_chinese_chars": False}, ["Café", "中文"]),
    ],
)
def test_a_bert_folder_reads_strip_accents_and_tokenize_chinese_chars(tmp_path, settings, expected):
    import json

    from tabformer.hub import load_text_folder

    words = ["café", "cafe", "Café", "Cafe", "中文", "中", "文"]
    _tiny_bert_folder(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(settings))
    tokenizer = load_text_folder(tmp_path, max_length=8).tokenizer
    ids = tokenizer.transform(["Café 中文"])["input_ids"][0]
    assert tokenizer.convert_ids_to_tokens(ids) == [*expected, "[SEP]"]


def test_wordpiece_refuses_a_strip_accents_that_is_not_a_bool():
    from tabformer.tokenizers import WordPieceTokenizer

    with pytest.raises(ValueError, match="strip_accents must be a bool or None .* got strip_accents='yes'"):
        WordPieceTokenizer(vocab_size=40, strip_accents="yes").fit(["a text", "another text"])


def test_a_frozen_embedder_still_shifts_images_while_training_but_keeps_its_batchnorm_statistics():
    import torch

    from tabformer.nn.embedders.image import PatchEmbedder
    from tabformer.nn.encoder import TransformerEncoder
    from tabformer.nn.heads import ClassificationHead
    from tabformer.nn.models import TabFormerModel

    torch.manual_seed(0)
    embedder = PatchEmbedder(1, (8, 8), 4, 8, [0.5], [0.5], random_shift=3, conv_stem=(4,))
    encoder = TransformerEncoder(d_model=8, n_layers=1, n_heads=2, attention_dropout=0.0)
    model = TabFormerModel(embedder, encoder, ClassificationHead(8, 2), freeze_embedder=True).train()
    norm = embedder.stem[1]
    statistics = [norm.running_mean.clone(), norm.running_var.clone()]
    pixels = torch.rand(4, 1, 8, 8)
    shifted = [embedder(pixels=pixels)[0] for _ in range(3)]
    assert not all(torch.equal(shifted[0], other) for other in shifted[1:])  # each call shifts anew
    model(pixels=pixels).sum().backward()
    assert not embedder.training and all(p.grad is None for p in embedder.parameters())
    torch.testing.assert_close([norm.running_mean, norm.running_var], statistics, rtol=0, atol=0)
    model.eval()
    assert torch.equal(embedder(pixels=pixels)[0], embedder(pixels=pixels)[0])  # no shift at predict
    model.freeze_embedder = False  # unfrozen (set_params does this): the embedder follows its own mode again
    model.train()
    assert embedder.training and embedder.augment is None


def test_explain_gives_a_mixed_models_datetime_column_the_table_modality():
    from tabformer.tokenizers import MixedTokenizer, TabularTokenizer, WordPieceTokenizer

    X = pd.DataFrame(
        {"title": ["red wool hat", "blue shirt"] * 10, "when": pd.date_range("2024-01-01", periods=20), "price": np.arange(20.0)}
    )
    words = WordPieceTokenizer(vocab_size=40, min_frequency=1)
    routing = [("text", words, ["title"]), ("table", TabularTokenizer(), ["when", "price"])]
    clf = TabFormerClassifier(tokenizer=MixedTokenizer(routing), **SMALL).fit(X, [0, 1] * 10)
    tokens = clf.explain(X.iloc[:2])
    assert {"when.elapsed", "when.month_sin", "price"} <= set(tokens.loc[tokens["column"] != "title", "label"])
    modalities = clf.explain(X.iloc[:2], level="column").drop_duplicates("column").set_index("column")["modality"]
    assert modalities.to_dict() == {"title": "text", "when": "table", "price": "table"}


def test_table_errors_and_warnings_name_integer_column_labels_not_x0():
    from tabformer.tokenizers import TabularTokenizer, UntrainedMissingWarning

    X = pd.DataFrame({0: [1.0, 2.0, 3.0], 1: ["a", "b", "a"]})
    infinite = X.copy()
    infinite.loc[1, 0] = np.inf
    with pytest.raises(ValueError, match=r"numeric column 0 holds an infinite value at row 1"):
        TabularTokenizer().fit(infinite)
    tokenizer = TabularTokenizer().fit(X)
    with pytest.raises(ValueError, match=r"column 1 changed kind between fit and predict"):
        tokenizer.transform(X.assign(**{"1": 0.5}).drop(columns=[1]).set_axis([0, 1], axis=1))
    missing = X.copy()
    missing.loc[0, 0] = np.nan
    with pytest.warns(UntrainedMissingWarning, match=r"column\(s\) 0 \(1 missing\)"):
        tokenizer.transform(missing)


def _caught_messages(call):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


def test_predicting_in_chunks_warns_once_about_rows_without_input_and_dim_images():
    from tabformer.tokenizers import MixedTokenizer, PatchTokenizer, WordPieceTokenizer

    rng = np.random.default_rng(0)
    photos = [rng.uniform(0, 255, (8, 8)).astype(np.float32) for _ in range(12)]
    X = pd.DataFrame({"title": ["red wool hat", "blue shirt", "green scarf"] * 4, "photo": photos})
    routing = [("text", WordPieceTokenizer(vocab_size=40, min_frequency=1), ["title"]), ("image", PatchTokenizer(), ["photo"])]
    clf = TabFormerClassifier(tokenizer=MixedTokenizer(routing), **SMALL).fit(X, [0, 1, 0] * 4)
    clf.inference_chunk_rows = 4  # three chunks
    dim = X.assign(photo=[photo / 255 for photo in photos])
    dim.loc[[1, 5, 9], ["title", "photo"]] = None
    messages = _caught_messages(lambda: clf.predict(dim))
    # and once that no training row missed a title or photo (tests/test_mixed_missing_inputs.py)
    untrained = [m for m in messages if m.startswith("text/image column(s) ['title', 'photo'] miss cells now")]
    messages = [m for m in messages if m not in untrained]
    assert len(untrained) == 1 and len(messages) == 2, messages
    assert messages[0].startswith("3 row(s) hold no input") and "(rows [1, 5, 9])" in messages[0]
    assert messages[1].startswith("every image of this input has float pixels at or under 1")
    dim.at[11, "photo"] = photos[11]  # the last chunk holds a 0-255 image: the input is no [0, 1] one
    assert len(_caught_messages(lambda: clf.predict(dim))) == 2  # no input; untrained missing


def test_predicting_in_chunks_warns_once_that_x_has_feature_names_a_table_fit_lacked():
    X = np.random.default_rng(0).normal(size=(40, 2))
    clf = TabFormerClassifier(**SMALL).fit(X, (X[:, 0] > 0).astype(int))
    clf.inference_chunk_rows = 16  # three chunks
    messages = _caught_messages(lambda: clf.predict(pd.DataFrame(X, columns=["a", "b"])))
    assert len(messages) == 1 and "X has feature names ['a', 'b'], but TabFormerClassifier was fitted without" in messages[0]


def test_a_taggers_first_partial_fit_takes_its_tags_from_classes():
    from tabformer import TabFormerTagger

    sentences = [["Alice", "visits", "Paris"], ["Bob", "stays"]]
    tagger = TabFormerTagger(tokenizer="wordpiece", **SMALL)
    tagger.partial_fit(sentences, [["O", "O", "O"], ["O", "O"]], classes=["O", "B-PER", "B-LOC"])
    assert tagger.classes_.tolist() == ["B-LOC", "B-PER", "O"] and tagger.default_tag_ == "O"
    tagger.partial_fit(sentences, [["B-PER", "O", "B-LOC"], ["B-PER", "O"]], classes=["O", "B-PER", "B-LOC"])
    assert all(tag in tagger.classes_ for row in tagger.predict(sentences) for tag in row)
    fresh = TabFormerTagger(tokenizer="wordpiece", **SMALL)
    with pytest.raises(ValueError, match=r"y holds tag\(s\) \['B-ORG'\] that classes=\['B-PER', 'O'\] does not list"):
        fresh.partial_fit(sentences, [["B-ORG", "O", "O"], ["O", "O"]], classes=["O", "B-PER"])


def test_a_sentence_tokenizer_passes_strip_accents_and_tokenize_chinese_chars_to_its_sub_words(tmp_path):
    from sklearn.base import clone
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    from tabformer.tokenizers import SentenceTokenizer

    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "café"])}
    stem = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))  # the pretrained model's tokenizer.json
    stem.normalizer, stem.pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    stem.save(str(tmp_path / "tokenizer.json"))
    encoder = dict(d_model=8, n_layers=1, n_heads=2, d_ff=16, positions="learned", max_length=12)
    settings = dict(vocab_size=40, min_frequency=1, strip_accents=False, tokenize_chinese_chars=False)
    tokenizer = clone(SentenceTokenizer(tmp_path, encoder, **settings)).fit(["Café 中文", "café au lait"] * 3)
    ids = tokenizer.transform(["Café 中文"])["input_ids"][0]
    assert tokenizer.convert_ids_to_tokens(ids) == ["café", "中文", "[SEP]"]


def test_column_lists_name_a_frames_integer_labels_as_the_user_sees_them():
    from tabformer.tokenizers import TabularTokenizer

    X = pd.DataFrame({0: [1, 2, 3, 1] * 5, 1: [0.5, 1.5, 2.5, 3.0] * 5, 2: ["a", "b", "a", "b"] * 5})
    tokenizer = TabularTokenizer(categorical_columns=[0], numeric_columns=[1]).fit(X)
    assert (tokenizer.numeric_columns_, tokenizer.categorical_columns_) == (["x1"], ["x0", "x2"])
    assert tokenizer.token_names() == ["1", "0", "2"]  # numbers, then categories
    assert TabularTokenizer(categorical_columns=["x0"]).fit(X).categorical_columns_ == ["x0", "x2"]  # names inside still work
    with pytest.raises(ValueError, match=r"numeric_columns names column\(s\) \[7\] that X does not have; X has \[0, 1, 2\]"):
        TabularTokenizer(numeric_columns=[7]).fit(X)
    with pytest.raises(ValueError, match=r"column\(s\) \[0\] are listed as both categorical and numeric"):
        TabularTokenizer(categorical_columns=[0], numeric_columns=["x0"]).fit(X)
    clf = TabFormerClassifier(tokenizer__categorical_columns=[0], **SMALL).fit(X, [0, 1] * 10)
    assert clf.tokenizer_.token_columns() == ["1", "0", "2"]


def test_new_categories_at_a_continued_fit_are_named_by_integer_column_labels():
    from tabformer.tokenizers import TabularTokenizer

    X = pd.DataFrame({0: ["rome", "paris"] * 10, 1: np.arange(20.0)})
    clf = TabFormerClassifier(warm_start=True, **SMALL).fit(X, [0, 1] * 10)
    with pytest.raises(ValueError, match=r"categories the first fit never saw, in column\(s\) \[0\]: a continued fit"):
        clf.fit(X.replace({"rome": "lima"}), [0, 1] * 10)
    assert TabularTokenizer().fit(X).add_categories(X.replace({"rome": "lima"})) == {0: ["lima"]}


def test_a_later_tagger_partial_fit_accepts_the_integer_tags_it_was_fitted_with():
    from tabformer import TabFormerTagger

    sentences = [["Alice", "visits", "Paris"], ["Bob", "stays"]]
    tags = [[1, 2, 1], [1, 2]]
    tagger = TabFormerTagger(tokenizer="wordpiece", **SMALL).partial_fit(sentences, tags, classes=[1, 2])
    assert tagger.classes_.tolist() == ["1", "2"]
    tagger.partial_fit(sentences, tags, classes=[2, 1])  # the same tags: refused before, as 1 != "1"
    with pytest.raises(ValueError, match=r"classes=\['1', '3'\] differs from the classes the model was fitted with"):
        tagger.partial_fit(sentences, tags, classes=[1, 3])


def _without_keys(value, keys):
    """``value`` (a config.json's content) without ``keys`` at any depth."""
    if isinstance(value, dict):
        return {k: _without_keys(v, keys) for k, v in value.items() if k not in keys}
    return [_without_keys(v, keys) for v in value] if isinstance(value, list) else value


def test_a_wordpiece_tokenizer_saved_before_strip_accents_existed_still_refits(tmp_path):
    import json
    import pickle

    from sklearn.base import clone

    import tabformer
    from tabformer.tokenizers import WordPieceTokenizer

    texts = ["Café au lait", "a blue shirt"] * 3

    def read(tokenizer):  # "Café" as the refitted tokenizer reads it: accents stripped, as when lower-casing
        return "".join(tokenizer.convert_ids_to_tokens(tokenizer.fit(texts).transform(["Café"])["input_ids"][0])[:-1])

    keys = ("strip_accents", "tokenize_chinese_chars")
    tokenizer = WordPieceTokenizer(vocab_size=40, min_frequency=1).fit(texts)
    for key in keys:  # as pickled before the parameters existed
        del tokenizer.__dict__[key]
    old = pickle.loads(pickle.dumps(tokenizer))
    assert (old.strip_accents, old.tokenize_chinese_chars) == (None, True)  # BERT's normaliser, as it was
    assert clone(old).get_params()["strip_accents"] is None
    assert read(old).replace("##", "") == "cafe"
    # tabformer's folder format: a config.json written before the parameters existed
    clf = TabFormerClassifier(tokenizer="wordpiece", tokenizer__vocab_size=40, tokenizer__min_frequency=1, **SMALL)
    clf.fit(texts, [0, 1] * 3).save(tmp_path / "model")
    config = tmp_path / "model" / "config.json"
    config.write_text(json.dumps(_without_keys(json.loads(config.read_text()), keys)))
    assert "strip_accents" not in config.read_text()
    loaded = tabformer.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict_proba(texts), clf.predict_proba(texts))
    assert read(loaded.tokenizer_).replace("##", "") == "cafe"


def test_the_cli_reads_an_empty_text_cell_as_the_empty_text_at_fit_and_predict(tmp_path):
    from tabformer.cli import main

    rng = np.random.default_rng(0)
    words = ["red", "blue", "wool", "hat", "shirt", "warm", "soft", "cheap"]
    X = pd.DataFrame(
        {"review": [" ".join(rng.choice(words, 3)) + f" {i}" for i in range(24)], "price": rng.normal(size=24).round(3)}
    )
    X.loc[[3, 10], "review"] = ""  # empty texts, which the CSV writes as empty cells
    y = np.arange(24) % 2
    X.assign(label=y).to_csv(tmp_path / "train.csv", index=False)
    X.to_csv(tmp_path / "new.csv", index=False)
    settings = dict(max_epochs=2, random_state=0, tokenizer__max_categories=5, **{k: SMALL[k] for k in SMALL if "__" in k})
    args = [f"--set={key}={value}" for key, value in settings.items()]
    model, output = str(tmp_path / "model"), str(tmp_path / "p.csv")
    assert main(["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", model, "--quiet", *args]) == 0
    assert main(["predict", model, str(tmp_path / "new.csv"), "--proba", "--output", output]) == 0
    clf = TabFormerClassifier(verbose=0, **settings).fit(X, y)  # the Python API, on the frame with ""
    assert clf.tokenizer_.column_kinds_ == {"review": "text", "price": "numeric"}
    cli = pd.read_csv(output)[["proba_0", "proba_1"]].to_numpy()
    np.testing.assert_allclose(cli, clf.predict_proba(X), atol=1e-5)


def _recorded(call):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def test_warnings_point_at_the_users_line_not_inside_tabformer(table):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from tabformer.tokenizers import PatchTokenizer, UntrainedMissingWarning

    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    clf.inference_chunk_rows = 8  # chunks: the warnings are issued once, after the last
    odd = X.assign(price=np.where(np.arange(len(X)) % 2, np.nan, X["price"]), colour="teal")
    for call in (
        lambda: clf.predict(odd),  # untrained missing values, and no fitted category
        lambda: clf.tokenizer_.transform(odd),
        lambda: make_pipeline(FunctionTransformer(), clf).predict(odd),  # through scikit-learn
    ):
        caught = _recorded(call)
        assert {w.category for w in caught} == {UntrainedMissingWarning, UserWarning}
        assert {w.filename for w in caught} == {__file__}, [(w.filename, w.lineno) for w in caught]
    images = [np.random.default_rng(0).uniform(0, 255, (8, 8)).astype(np.float32) for _ in range(4)]
    pixels = PatchTokenizer(patch_size=4).fit(images)
    caught = _recorded(lambda: pixels.transform([image / 255 for image in images]))
    assert [w.filename for w in caught] == [__file__] and "float pixels at or under 1" in str(caught[0].message)
    caught = _recorded(lambda: TabFormerClassifier(**dict(SMALL, lr=0.0)).fit(X, y))  # learns nothing: collapsed
    assert [(w.category.__name__, w.filename) for w in caught] == [("ConvergenceWarning", __file__)]
