"""Review of reproducibility, precision and devices: bugs found and their regression tests."""

import numpy as np
from conftest import TINY, make_table

from tabformer import TabFormerClassifier


def test_random_state_none_fits_differ_without_a_validation_split():
    # Unseeded fits forked the global torch RNG and restored it: every fit started from the same
    # state, so without a validation split (an ensemble of five, repeated runs) all came out identical.
    X, y = make_table(n=64)
    settings = dict(TINY, max_epochs=1, validation_fraction=None, random_state=None)
    first = TabFormerClassifier(**settings).fit(X, y).predict_proba(X)
    second = TabFormerClassifier(**settings).fit(X, y).predict_proba(X)
    assert not np.allclose(first, second)


def test_precision_set_after_fit_is_the_one_prediction_runs_in():
    # Prediction read resolved_params_["precision"] (what the fit ran): set_params(precision="fp32")
    # after a bf16 fit was silently ignored.
    X, y = make_table(n=64)
    clf = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0, precision="bf16")).fit(X, y)
    in_bf16 = clf.predict_proba(X)
    in_fp32 = clf.set_params(precision="fp32").predict_proba(X)
    assert not np.array_equal(in_bf16, in_fp32) and in_fp32.dtype == np.float64
    np.testing.assert_array_equal(clf.set_params(precision="bf16").predict_proba(X), in_bf16)


def test_an_auto_model_trained_in_bf16_predicts_in_fp32_on_the_cpu(monkeypatch):
    # precision="auto" resolved to bf16 on a GPU; moved to the CPU (load(..., device="cpu")) the model
    # kept predicting under CPU bf16 autocast, which "auto" never picks there.
    from tabformer.estimators import _precision

    X, y = make_table(n=64)
    settings = dict(TINY, max_epochs=1, random_state=0)
    with monkeypatch.context() as patch:
        patch.setattr(_precision, "resolve_precision", lambda precision, device: "bf16")
        clf = TabFormerClassifier(**settings).fit(X, y)
    assert clf.resolved_params_["precision"] == "bf16"
    in_fp32 = clf.predict_proba(X)
    np.testing.assert_array_equal(in_fp32, clf.set_params(precision="fp32").predict_proba(X))
    assert not np.array_equal(in_fp32, clf.set_params(precision="bf16").predict_proba(X))


def test_a_fit_continued_in_fp16_scales_its_loss(monkeypatch):
    # initialize built the GradScaler for the first fit's precision: set_params(precision="fp16")
    # before partial_fit ran fp16 autocast without loss scaling, so small gradients underflowed.
    from tabformer.estimators import _precision

    X, y = make_table(n=64)
    clf = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0, precision="bf16")).fit(X, y)
    scaled = []
    real_backward = _precision.PrecisionMixin._backward
    monkeypatch.setattr(
        _precision.PrecisionMixin,
        "_backward",
        lambda net, loss: (scaled.append(net._scaler() is not None), real_backward(net, loss))[1],
    )
    clf.set_params(precision="fp16").partial_fit(X, y)
    assert scaled and all(scaled) and clf.grad_scaler_.is_enabled()
    scaled.clear()
    clf.set_params(precision="fp32").partial_fit(X, y)
    assert scaled and not any(scaled)


def test_resolved_precision_follows_set_params_after_a_fit():
    # resolved_params_["precision"] kept the first fit's value after set_params(precision=...), which the next
    # partial_fit and predict run in since the precision fix (a review's note)
    import numpy as np
    import pandas as pd

    from tabformer import TabFormerClassifier

    X = pd.DataFrame({"a": np.arange(60.0), "b": list("xyz") * 20})
    clf = TabFormerClassifier(max_epochs=1, verbose=0, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2)
    clf.fit(X, np.arange(60) % 2)
    assert clf.resolved_params_["precision"] == "fp32"
    clf.set_params(precision="bf16")
    assert clf.resolved_params_["precision"] == "bf16"
    clf.partial_fit(X, np.arange(60) % 2)
    assert clf.resolved_params_["precision"] == "bf16" and np.isfinite(clf.predict_proba(X)).all()
