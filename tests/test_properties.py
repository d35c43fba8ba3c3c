"""Property-based checks (Hypothesis): for random tables, texts and images, tabformer either
raises a clear ValueError/TypeError from its own checks or returns finite predictions of the
right shape (docs/reliability.md). ``TABFORMER_HYPOTHESIS_EXAMPLES`` raises the example count."""

import os
import traceback

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabformer import TabFormerClassifier, TabFormerRegressor

EXAMPLES = int(os.environ.get("TABFORMER_HYPOTHESIS_EXAMPLES", "6"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
FAST = dict(encoder__d_model=8, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, batch_size=16, verbose=0)


def _column(draw, n):
    kind = draw(st.sampled_from(["float", "int", "bool", "category", "object"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "float":
        values = rng.normal(size=n) * draw(st.sampled_from([1e-3, 1.0, 1e6]))
        if draw(st.booleans()):
            values[rng.random(n) < 0.3] = np.nan
        return pd.Series(values, dtype=draw(st.sampled_from(["float32", "float64"])))
    if kind == "int":
        return pd.Series(rng.integers(-5, 5, n), dtype=draw(st.sampled_from(["int8", "int64", "Int64"])))
    if kind == "bool":
        return pd.Series(rng.random(n) < 0.5)
    values = pd.Series(rng.choice(["a", "b", "é", "", "long value"], n), dtype=object)
    if draw(st.booleans()):
        values[rng.random(n) < 0.3] = None
    return values.astype("category") if kind == "category" else values


@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    n_columns = draw(st.integers(1, 4))
    names = draw(st.lists(st.one_of(st.text(min_size=1, max_size=5), st.integers(0, 3)), min_size=n_columns, max_size=n_columns))
    return pd.DataFrame({i: _column(draw, n) for i in range(n_columns)}).set_axis(names, axis=1)


def _clear_or_finite(fit_predict, n_rows, n_outputs, must_work=False):
    """The property: a ValueError/TypeError raised by tabformer's (or sklearn's) checks, or finite output.
    ``must_work``: the input is valid, so no error is acceptable."""
    try:
        out = fit_predict()
    except (ValueError, TypeError) as error:
        if must_work:
            raise
        origin = traceback.extract_tb(error.__traceback__)[-1].filename
        assert "tabformer" in origin or "sklearn" in origin, f"{type(error).__name__} from {origin}: {error}"
        assert str(error), "an error without a message"
        return
    out = np.asarray(out, dtype=float)
    assert out.shape[0] == n_rows and (n_outputs is None or out.shape[1:] == (n_outputs,))
    assert np.isfinite(out).all()


@SETTINGS
@given(X=tables(), seed=st.integers(0, 100), validation=st.sampled_from([None, 0.2]))
def test_tables_classifier(X, seed, validation):
    y = np.random.default_rng(seed).choice(["x", "y"], len(X))
    clf = TabFormerClassifier(**FAST, validation_fraction=validation, random_state=seed)
    _clear_or_finite(lambda: clf.fit(X, y).predict_proba(X), len(X), 2)


@SETTINGS
@given(X=tables(), offset=st.sampled_from([0.0, 1e4, -1e8]))
def test_tables_regressor(X, offset):
    y = offset + np.arange(len(X), dtype=float)
    reg = TabFormerRegressor(**FAST, validation_fraction=None, random_state=0)
    _clear_or_finite(lambda: reg.fit(X, y).predict(X), len(X), None)


@SETTINGS
@given(
    texts=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=30), min_size=2, max_size=20),
    seed=st.integers(0, 100),
)
def test_texts_classifier(texts, seed):
    y = np.random.default_rng(seed).choice([0, 1], len(texts))
    clf = TabFormerClassifier(**FAST, tokenizer="wordpiece", tokenizer__vocab_size=50, validation_fraction=None)
    _clear_or_finite(lambda: clf.fit(texts, y).predict_proba(texts), len(texts), 2)


@SETTINGS
@given(
    n=st.integers(2, 12),
    side=st.sampled_from([4, 8]),
    dtype=st.sampled_from(["uint8", "float32", "float64", "bool"]),
    spoil=st.sampled_from([None, np.nan, np.inf, -1.0]),
)
def test_images_classifier(n, side, dtype, spoil):
    rng = np.random.default_rng(n)
    images = rng.integers(0, 256, (n, side, side)).astype(dtype) if dtype == "uint8" else rng.random((n, side, side))
    images = images.astype(dtype)
    if spoil is not None and images.dtype.kind == "f":
        images[n // 2, 0, 0] = spoil
    y = np.arange(n) % 2
    clf = TabFormerClassifier(**FAST, tokenizer__patch_size=4, validation_fraction=None)
    _clear_or_finite(lambda: clf.fit(images, y).predict_proba(images), n, 2)


@pytest.mark.slow
def test_more_examples_run_under_make_test_slow():
    """``make test-slow`` runs the properties with 10x the examples."""
    env = {**os.environ, "TABFORMER_HYPOTHESIS_EXAMPLES": str(EXAMPLES * 10)}
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", __file__, "-m", "not slow"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:]


def _text_column(draw, n):
    words = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8)
    sentences = st.lists(words, min_size=3, max_size=6).map(" ".join)
    values = draw(st.lists(st.one_of(sentences, st.sampled_from(["", None])), min_size=n, max_size=n))
    return pd.Series(values, dtype=object)


def _image_column(draw, n):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    side, channels = draw(st.sampled_from([4, 8])), draw(st.sampled_from([None, 1, 3]))
    dtype = draw(st.sampled_from(["uint8", "float32", "float64", "bool"]))
    shape = (side, side) if channels is None else (side, side, channels)
    images = [(rng.integers(0, 256, shape) if dtype == "uint8" else rng.random(shape)).astype(dtype) for _ in range(n)]
    spoil = draw(st.sampled_from([None, None, "missing", "nan", "negative", "other size"]))
    row = draw(st.integers(0, n - 1))
    if spoil == "missing":
        images[row] = None
    elif spoil == "other size":
        images[row] = images[row][: side // 2]
    elif spoil in ("nan", "negative") and dtype.startswith("float"):
        images[row] = images[row].copy()
        images[row].flat[0] = np.nan if spoil == "nan" else -1.0
    # "missing" (a None cell) is valid input: the segment is masked, and the fit must work
    return pd.Series(images, dtype=object), spoil in (None, "missing")


@st.composite
def mixed_frames(draw):
    """``(frame, valid)``: 1-40 rows of a text and an image column, plus 0-2 table columns, in a
    drawn order; ``valid`` when the images break no rule and there are rows enough to split."""
    n = draw(st.integers(1, 40))
    images, valid_images = _image_column(draw, n)
    columns = [("text", _text_column(draw, n)), ("image", images)]
    columns += [(f"col{i}", _column(draw, n)) for i in range(draw(st.integers(0, 2)))]
    order = draw(st.permutations(range(len(columns))))
    return pd.DataFrame({columns[i][0]: columns[i][1] for i in order}), valid_images and n >= 10


MIXED = dict(FAST, tokenizer__text__vocab_size=50, tokenizer__text__min_frequency=1, tokenizer__image__patch_size=4)


@SETTINGS
@given(X=mixed_frames(), seed=st.integers(0, 100), validation=st.sampled_from([None, 0.2]))
def test_mixed_frames_classifier(X, seed, validation):
    X, valid = X
    y = np.resize(["x", "y"], len(X))
    np.random.default_rng(seed).shuffle(y)
    clf = TabFormerClassifier(**MIXED, validation_fraction=validation, random_state=seed)
    _clear_or_finite(lambda: clf.fit(X, y).predict_proba(X), len(X), 2, must_work=valid)


@SETTINGS
@given(X=mixed_frames(), offset=st.sampled_from([0.0, -1e8]))
def test_mixed_frames_regressor(X, offset):
    X, valid = X
    y = offset + np.arange(len(X), dtype=float)
    reg = TabFormerRegressor(**MIXED, validation_fraction=None, random_state=0)
    _clear_or_finite(lambda: reg.fit(X, y).predict(X), len(X), None, must_work=valid)
