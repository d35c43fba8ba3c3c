"""ONNX export as a review of the shipped version found it: each test failed, or answered wrong, before its fix."""

import numpy as np
import pytest
from conftest import TINY, make_table

from tabformer import TabFormerRegressor
from tabformer.export import onnx_inputs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

SMALL = dict(TINY, max_epochs=1, ensemble_size=1, random_state=0)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


def _session(estimator, path):
    estimator.export_onnx(path)
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_a_regressor_keeps_the_precision_of_a_target_with_a_large_offset(tmp_path):
    # The graph mapped its output to the target's scale in float32: for a target near 1.7e9 (epoch seconds) ONNX
    # was off predict by up to ~100 and 96 distinct predictions collapsed to 15 (float32's step there is 128).
    X, _ = make_table(n=120)
    y = 1.7e9 + np.linspace(0, 3000, len(X))
    reg = TabFormerRegressor(**SMALL).fit(X, y)
    session = _session(reg, tmp_path / "r.onnx")
    got, want = session.run(None, onnx_inputs(reg, X))[0].ravel(), reg.predict(X)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * reg.target_scale_[0])  # 1e-4 on the module's output
    assert len(np.unique(got)) == len(np.unique(want))
    assert got.dtype == np.float64 and session.get_outputs()[0].type == "tensor(double)"


def test_a_model_that_predicts_in_bf16_warns_at_export_that_the_graph_is_float32(tmp_path):
    # The graph is traced in float32 while predict_proba runs under bf16 autocast: they differed by ~1e-3, silently.
    from tabformer import TabFormerClassifier

    X, y = make_table(n=120)
    clf = TabFormerClassifier(precision="bf16", **SMALL).fit(X, y)
    with pytest.warns(UserWarning, match=r"precision='bf16'.*predict_proba.*set_params\(precision='fp32'\)"):
        session = _session(clf, tmp_path / "c.onnx")
    got = session.run(None, onnx_inputs(clf, X))[0]
    np.testing.assert_allclose(got, clf.set_params(precision="fp32").predict_proba(X), atol=1e-4)  # as the warning says
