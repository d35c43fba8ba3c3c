"""Multi-label classification: a 0/1 indicator y, one sigmoid per label."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.preprocessing import MultiLabelBinarizer

from tabformer import TabFormerClassifier, load


def make_multilabel(n=240, seed=0):
    """Three labels read off two columns: 'big' (x > 0), 'red' (colour), 'both' (both)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "colour": rng.choice(["red", "blue", "green"], n)})
    big, red = (X["x"] > 0).to_numpy(), (X["colour"] == "red").to_numpy()
    return X, np.column_stack([big, red, big & red]).astype(int)


SETTINGS = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=30, lr=3e-3, random_state=0, verbose=0)


@pytest.fixture(scope="module")
def fitted():
    X, Y = make_multilabel()
    return TabFormerClassifier(**SETTINGS).fit(X, Y), X, Y


def test_predicts_an_indicator_matrix_from_sigmoids(fitted):
    clf, X, Y = fitted
    assert clf.multilabel_ and list(clf.classes_) == [0, 1, 2]
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape and ((proba >= 0) & (proba <= 1)).all()
    assert not np.allclose(proba.sum(axis=1), 1)  # independent sigmoids, not a softmax
    predicted = clf.predict(X)
    assert predicted.shape == Y.shape and set(np.unique(predicted)) <= {0, 1}
    np.testing.assert_array_equal(predicted, (proba >= 0.5).astype(int))
    assert type(clf.criterion_).__name__ == "BCEWithLogitsLoss"


def test_learns_every_label(fitted):
    clf, _, _ = fitted
    X_test, Y_test = make_multilabel(n=300, seed=1)
    assert f1_score(Y_test, clf.predict(X_test), average="micro") > 0.85
    assert (f1_score(Y_test, clf.predict(X_test), average=None) > 0.6).all()


def test_refit_on_single_label_y_is_multiclass_again(fitted):
    clf, X, Y = fitted
    from sklearn.base import clone

    single = clone(clf).set_params(max_epochs=1).fit(X, Y[:, 0])
    assert not single.multilabel_ and single.predict(X).ndim == 1
    assert np.allclose(single.predict_proba(X).sum(axis=1), 1, atol=1e-5)


def test_label_lists_through_multilabel_binarizer_sparse_too():
    X, Y = make_multilabel(n=60)
    names = ["big", "red", "both"]
    lists = [[names[j] for j in np.flatnonzero(row)] for row in Y]
    binarizer = MultiLabelBinarizer(classes=names, sparse_output=True)
    indicator = binarizer.fit_transform(lists)
    assert sp.issparse(indicator)
    clf = TabFormerClassifier(**{**SETTINGS, "max_epochs": 1}).fit(X, indicator)
    labels = binarizer.inverse_transform(sp.csr_matrix(clf.predict(X)))
    assert len(labels) == len(X) and all(set(row) <= set(names) for row in labels)


def test_cross_val_score_and_grid_search_with_micro_f1():
    X, Y = make_multilabel(n=120)
    quick = {**SETTINGS, "max_epochs": 2}
    scores = cross_val_score(TabFormerClassifier(**quick), X, Y, cv=KFold(2), scoring="f1_micro")
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
    search = GridSearchCV(TabFormerClassifier(**quick), {"lr": [1e-3, 3e-3]}, cv=KFold(2), scoring="f1_micro").fit(X, Y)
    assert search.best_params_["lr"] in (1e-3, 3e-3)
    assert search.predict(X).shape == Y.shape


def test_wrong_indicator_in_partial_fit_is_refused(fitted):
    clf, X, Y = fitted
    with pytest.raises(ValueError, match="indicator matrix with 3 label columns"):
        clf.partial_fit(X, Y[:, :2])


def test_class_weight_is_refused_for_multilabel():
    X, Y = make_multilabel(n=40)
    with pytest.raises(ValueError, match="multi-label"):
        TabFormerClassifier(**{**SETTINGS, "max_epochs": 1}, class_weight="balanced").fit(X, Y)


def test_save_and_load_keep_multilabel(fitted, tmp_path):
    clf, X, _ = fitted
    clf.save(tmp_path / "model")
    loaded = load(tmp_path / "model")
    assert loaded.multilabel_
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))


def test_onnx_export_gives_one_sigmoid_per_label(fitted, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from tabformer.export import onnx_inputs

    clf, X, _ = fitted
    clf.export_onnx(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, onnx_inputs(clf, X[:20]))[0], clf.predict_proba(X[:20]), atol=1e-4)


def test_command_line_proba_predicts_each_label(fitted, tmp_path, capsys):
    import io

    from tabformer.cli import main

    clf, X, _ = fitted
    clf.save(tmp_path / "model")
    X.to_csv(tmp_path / "rows.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model"), str(tmp_path / "rows.csv"), "--proba"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(out.columns) == ["prediction0", "prediction1", "prediction2", "proba_0", "proba_1", "proba_2"]
    np.testing.assert_array_equal(out[["prediction0", "prediction1", "prediction2"]].to_numpy(), clf.predict(X))
