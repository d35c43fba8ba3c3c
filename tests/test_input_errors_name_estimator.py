"""Predict-time input errors name the estimator the user called, as scikit-learn's do ("X has 4
features, but TabFormerClassifier is expecting 3"), not the tokenizer inside it."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from sklearn.linear_model import LogisticRegression

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor
from tabformer.tokenizers import TabularTokenizer

TEXT = ["good film", "bad film", "great", "awful"] * 6


def table(n=40):
    X = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


def message(call):
    with pytest.raises((ValueError, TypeError)) as error:
        call()
    return str(error.value)


def test_an_array_of_another_width_names_the_classifier_as_sklearn_does():
    X, y = table()
    wide = np.hstack([X, X[:, :1]])
    clf = TabFormerClassifier(**TINY).fit(X, y)
    sklearn = message(lambda: LogisticRegression().fit(X, y).predict(wide)).replace("LogisticRegression", "TabFormerClassifier")
    for method in (clf.predict, clf.predict_proba, lambda Z: clf.score(Z, y)):
        assert message(lambda method=method: method(wide)) == sklearn.rstrip(".")
    assert message(lambda: clf.predict(X[:, :2])) == "X has 2 features, but TabFormerClassifier is expecting 3 features as input"


def test_a_regressor_and_a_pretrainer_name_themselves():
    X, y = table()
    reg = TabFormerRegressor(**TINY).fit(X, X[:, 0])
    expected = "X has 6 features, but TabFormerRegressor is expecting 3 features as input"
    assert message(lambda: reg.predict(np.hstack([X, X]))) == expected
    pre = TabFormerPretrainer(**TINY).fit(X)
    assert "but TabFormerPretrainer is expecting 3" in message(lambda: pre.transform(X[:, :2]))


def test_a_dataframe_with_other_columns_names_no_tokenizer():
    X, y = table()
    frame = pd.DataFrame(X, columns=list("abc"))
    for estimator, target in ((TabFormerClassifier(**TINY), y), (TabFormerRegressor(**TINY), X[:, 0])):
        estimator.fit(frame, target)
        for wrong in (frame.rename(columns={"c": "d"}), frame.assign(d=1.0), frame[["a", "b"]], X[:, :2]):
            text = message(lambda estimator=estimator, wrong=wrong: estimator.predict(wrong))
            assert "Tokenizer" not in text and ("columns seen in fit" in text or "fitted as a DataFrame" in text)


def test_a_dataframe_after_an_array_fit_warns_naming_the_estimator():
    X, y = table()
    clf = TabFormerClassifier(**TINY).fit(X, y)
    with pytest.warns(UserWarning, match=r"X has feature names \['a', 'b', 'c'\], but TabFormerClassifier was fitted without"):
        clf.predict(pd.DataFrame(X, columns=list("abc")))


def test_text_and_mixed_models_name_the_estimator():
    y = [1, 0, 1, 0] * 6
    text = TabFormerClassifier(**TINY, tokenizer__vocab_size=40, tokenizer__min_frequency=1).fit(TEXT, y)
    pairs = pd.DataFrame({"a": TEXT, "b": TEXT})
    assert message(lambda: text.predict(pairs)) == "X has 2 text column(s); TabFormerClassifier was fitted on 1"
    X = pd.DataFrame({"title": TEXT, "price": np.arange(24.0)})
    mixed = TabFormerClassifier(**TINY, tokenizer__text__vocab_size=40, tokenizer__text__min_frequency=1).fit(X, y)
    assert message(lambda: mixed.predict(X.to_numpy())).startswith("TabFormerClassifier reads a pandas DataFrame")


def test_a_tokenizer_on_its_own_still_names_itself_after_an_estimator_failed():
    X, y = table()
    clf = TabFormerClassifier(**TINY).fit(X, y)
    message(lambda: clf.predict(X[:, :2]))
    tokenizer = TabularTokenizer().fit(X)
    assert (
        message(lambda: tokenizer.transform(X[:, :2]))
        == "X has 2 features, but TabularTokenizer is expecting 3 features as input"
    )
