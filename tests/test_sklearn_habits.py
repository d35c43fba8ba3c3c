"""What scikit-learn users take for granted: pandas output, RandomState seeds, dtypes."""

import numpy as np
import pandas as pd
import pytest
import sklearn
import torch
from conftest import make_table
from sklearn.pipeline import make_pipeline

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabularTokenizer, load

TINY = dict(encoder__d_model=8, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, batch_size=32, verbose=0)


def test_global_pandas_output_does_not_break_fit_and_predict():
    X, y = make_table(n=80)
    with sklearn.config_context(transform_output="pandas"):
        clf = TabFormerClassifier(random_state=0, **TINY).fit(X, y)
        assert clf.predict_proba(X).shape == (80, 2)
        reg = TabFormerRegressor(random_state=0, **TINY).fit(X, np.arange(80.0))
        assert isinstance(reg.predict(X), np.ndarray)
        # tokenizers opt out: their dict of arrays stays a dict
        batch = TabularTokenizer().fit(X).transform(X)
        assert isinstance(batch, dict) and isinstance(batch["num_values"], np.ndarray)
    assert not hasattr(TabularTokenizer(), "set_output")


TEXTS = pd.Series(
    [f"the {a} {b} sat on the {c}" for a in ("red", "big", "old", "shy") for b in ("cat", "dog", "fox") for c in ("mat", "rug")],
    index=[f"doc{i}" for i in range(24)],
)


def test_pretrainer_set_output_pandas_names_columns_by_feature_names_out():
    settings = dict(TINY, tokenizer__vocab_size=60, tokenizer__min_frequency=1, random_state=0)
    pre = TabFormerPretrainer(**settings).set_output(transform="pandas").fit(TEXTS)
    out = pre.transform(TEXTS)
    assert isinstance(out, pd.DataFrame) and out.shape == (24, 8)
    assert list(out.columns) == [f"tabformerpretrainer{i}" for i in range(8)]
    assert list(out.columns) == list(pre.get_feature_names_out())
    assert list(out.index) == list(TEXTS.index)
    with pytest.raises(ValueError, match="does not take sample_weight"):
        TabFormerPretrainer(**settings).fit(TEXTS, sample_weight=np.ones(len(TEXTS)))
    with sklearn.config_context(transform_output="pandas"):
        piped = make_pipeline(TabFormerPretrainer(**settings)).fit(TEXTS)
        assert list(piped.transform(TEXTS).columns[:2]) == ["tabformerpretrainer0", "tabformerpretrainer1"]


def test_random_state_takes_a_random_state_instance():
    X, y = make_table(n=80)
    first = TabFormerClassifier(random_state=np.random.RandomState(0), **TINY).fit(X, y)
    again = TabFormerClassifier(random_state=np.random.RandomState(0), **TINY).fit(X, y)
    np.testing.assert_array_equal(first.predict_proba(X), again.predict_proba(X))
    # as in scikit-learn, one instance gives each fit a fresh draw
    state = np.random.RandomState(0)
    clf = TabFormerClassifier(random_state=state, **TINY)
    assert not np.array_equal(clf.fit(X, y).predict_proba(X), clf.fit(X, y).predict_proba(X))
    assert clf.__sklearn_tags__().non_deterministic
    with pytest.raises(ValueError, match="random_state"):
        TabFormerClassifier(random_state="zero", **TINY).fit(X, y)


def test_category_dtype_keeps_declared_categories_and_order():
    sizes = pd.Categorical(["mid", "low", "mid", None], categories=["low", "mid", "high", "huge"], ordered=True)
    X = pd.DataFrame({"size": sizes, "x": [1.0, 2.0, 3.0, 4.0]})
    tokenizer = TabularTokenizer().fit(X)
    assert list(tokenizer.categories_[0]) == ["low", "mid", "high", "huge"]  # declared order, not sorted
    later = pd.DataFrame({"size": pd.Categorical(["high", "huge", "low"], categories=sizes.categories), "x": [1.0] * 3})
    # a declared category absent from the training rows has its own id (not the "unseen" id 1)
    assert tokenizer.transform(later)["cat_ids"].ravel().tolist() == [4, 5, 2]


def test_datetime_columns_become_calendar_tokens():
    when = pd.to_datetime(["2024-01-01 08:00", "2024-07-01 20:00", None, "2023-12-31 08:00"])
    X = pd.DataFrame({"when": when, "x": [1.0, 2.0, 3.0, 4.0]})
    tokenizer = TabularTokenizer(numeric_transform=None).fit(X)
    assert tokenizer.datetime_parts_ == {"when": ["elapsed", "month", "weekday", "hour"]}
    names = list(tokenizer.get_feature_names_out())
    assert names[:7] == [
        "when.elapsed",
        "when.month_sin",
        "when.month_cos",
        "when.weekday_sin",
        "when.weekday_cos",
        "when.hour_sin",
        "when.hour_cos",
    ]
    batch = tokenizer.transform(X)
    values, missing = batch["num_values"], batch["num_missing"]
    assert missing[2, :7].all() and not missing[[0, 1, 3]].any()  # NaT is missing, in every part
    assert values[0, 0] == pytest.approx(54.0, abs=0.01)  # 2024 - 1970 years
    # periodic: 31 December sits next to 1 January, half a year away from 1 July
    month = values[:, 1:3]
    assert np.linalg.norm(month[0] - month[3]) < 0.05 < 1.9 < np.linalg.norm(month[0] - month[1])
    hour = values[:, 5:7]
    np.testing.assert_allclose(hour[0], hour[3], atol=1e-6)  # both at 08:00
    # dates without a time of day get no hour tokens; a time zone's dates are read on its own clock
    days = pd.DataFrame({"day": pd.to_datetime(["2024-01-01", "2024-02-01"]).tz_localize("Europe/Paris")})
    assert TabularTokenizer().fit(days).datetime_parts_ == {"day": ["elapsed", "month", "weekday", "local"]}
    plain = pd.DataFrame({"day": pd.to_datetime(["2024-01-01", "2024-02-01"])})
    assert TabularTokenizer().fit(plain).datetime_parts_ == {"day": ["elapsed", "month", "weekday"]}


def test_classifier_fits_a_table_with_dates_and_refuses_a_changed_kind(tmp_path):
    rng = np.random.default_rng(0)
    when = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, 80), unit="D")
    X = pd.DataFrame({"when": when, "x": rng.normal(size=80)})
    y = np.where(X["when"].dt.month <= 6, "first half", "second half")
    clf = TabFormerClassifier(random_state=0, **TINY).fit(X, y)
    assert clf.predict(X).shape == (80,)
    clf.save(tmp_path / "model")
    np.testing.assert_allclose(load(tmp_path / "model").predict_proba(X), clf.predict_proba(X), atol=1e-6)
    with pytest.raises(ValueError, match="changed kind"):
        clf.predict(X.assign(when=X["when"].astype(str)))


def test_set_params_before_fit_stores_callback_settings_and_never_raises():
    import warnings

    from sklearn.utils.estimator_checks import check_set_params

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sklearn warns when set_params raises TypeError
        check_set_params("TabFormerClassifier", TabFormerClassifier(verbose=0))
    X, y = make_table(n=60)
    lines = []
    clf = TabFormerClassifier(random_state=0, **TINY).set_params(verbose=1, callbacks__print_log__sink=lines.append)
    clf.fit(X, y)
    assert any("train_loss" in line for line in lines)  # the stored setting reached the callback at fit
    with pytest.raises(TypeError):
        TabFormerClassifier(**TINY).set_params(callbacks=float("inf")).fit(X, y)
    # fitted: skorch's own set_params (re-initialising what changed)
    assert clf.set_params(callbacks__print_log__sink=print).callbacks_[-1][1].sink is print


def test_predict_proba_is_float64_and_keeps_confident_rows_apart():
    # float32 rounds 1 - p to 0 past a logit margin of ~17: confident rows all read 1.0 and
    # tie for roc_auc. scikit-learn's classifiers answer float64.
    X, y = make_table(n=80)
    clf = TabFormerClassifier(ensemble_size=1, random_state=0, **TINY).fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.dtype == np.float64 and clf.predict_log_proba(X).dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    log_proba = clf.predict_log_proba(X)
    scale = 25 / np.median(np.abs(log_proba[:, 1] - log_proba[:, 0]))
    last = [m for m in clf.module_.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():  # margins around 25: confident, yet float64 still tells them apart
        last.weight.mul_(scale)
        last.bias.mul_(scale)
    top = clf.predict_proba(X).max(axis=1)
    assert np.median(top) > 1 - 1e-9
    assert len(np.unique(top)) > len(top) // 2  # float32 reads most of them as exactly 1.0
