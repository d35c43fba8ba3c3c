"""A callable ``train_split``: skorch's ``predefined_split`` of raw rows is tokenized and encoded as
``fit``'s rows are (the tokenizer, label encoder and target scaling are fitted inside ``fit``)."""

import numpy as np
import pytest
from conftest import TINY, make_table
from skorch.dataset import Dataset, ValidSplit
from skorch.helper import predefined_split

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor

SETTINGS = dict(TINY, max_epochs=2, random_state=0)


def test_a_predefined_split_of_raw_rows_and_labels_validates_a_classifier():
    X, y = make_table(n=120)
    valid = predefined_split(Dataset(X.iloc[80:], y[80:]))  # a DataFrame and string labels: both crashed
    clf = TabFormerClassifier(train_split=valid, **SETTINGS).fit(X.iloc[:80], y[:80])
    assert all(np.isfinite(epoch["valid_loss"]) for epoch in clf.history_)
    assert clf.history_[-1]["valid_acc"] == pytest.approx(np.mean(clf.predict(X.iloc[80:]) == y[80:]), abs=1e-6)


def test_a_predefined_split_scores_a_regressor_on_its_standardised_scale():
    X, _ = make_table(n=120)
    y = 100 + 10 * (X["income"].rank().to_numpy() / 120)
    clf = TabFormerRegressor(train_split=predefined_split(Dataset(X.iloc[80:], y[80:])), **SETTINGS)
    clf.fit(X.iloc[:80], y[:80])
    # raw targets scored against standardised outputs gave valid_loss ~10,000 and early stopping kept epoch 1
    expected = np.mean(((clf.predict(X.iloc[80:]) - y[80:]) / clf.target_scale_) ** 2)
    assert clf.history_[-1]["valid_loss"] == pytest.approx(expected, rel=1e-4)


def test_tokens_in_a_predefined_split_are_refused_and_valid_split_still_works():
    X, y = make_table(n=120)
    tokens = TabFormerClassifier(**dict(SETTINGS, max_epochs=1)).fit(X, y).tokenize(X.iloc[80:])
    clf = TabFormerClassifier(train_split=predefined_split(Dataset(tokens, y[80:])), **SETTINGS)
    with pytest.raises(ValueError, match=r"validation set holds tokens.*predefined_split\(Dataset\(X_valid, y_valid\)\)"):
        clf.fit(X.iloc[:80], y[:80])
    clf.set_params(train_split=predefined_split(Dataset(X.iloc[80:], np.where(y[80:] == "yes", "YES", "no"))))
    with pytest.raises(ValueError, match=r"train_split's validation set: y holds label\(s\) .*YES.* not seen in fit"):
        clf.fit(X.iloc[:80], y[:80])
    clf.set_params(train_split=ValidSplit(0.25))  # the split's own rows pass through as they are
    assert np.isfinite(clf.fit(X, y).history_[-1]["valid_loss"])


def test_a_continued_fit_reads_tokens_of_its_own_tokenizer_as_before():
    X, y = make_table(n=120)
    clf = TabFormerClassifier(**SETTINGS).fit(X.iloc[:80], y[:80])
    # tokens of the fitted tokenizer and encoded labels, as skorch read them before the raw-row support
    valid = predefined_split(Dataset(clf.tokenize(X.iloc[80:]), np.searchsorted(clf.classes_, y[80:])))
    clf.set_params(train_split=valid).partial_fit(X.iloc[:80], y[:80])
    assert len(clf.history_) == 4 and np.isfinite(clf.history_[-1]["valid_loss"])
    clf.set_params(warm_start=True).fit(X.iloc[:80], y[:80])  # warm_start continues too
    assert len(clf.history_) == 6 and np.isfinite(clf.history_[-1]["valid_loss"])
    with pytest.raises(ValueError, match="validation set holds tokens"):  # a refit fits a new tokenizer
        clf.set_params(warm_start=False).fit(X.iloc[:80], y[:80])


def test_a_pretrainer_validates_on_predefined_raw_rows_and_its_own_tokens():
    X, _ = make_table(n=120)
    pre = TabFormerPretrainer(train_split=predefined_split(Dataset(X.iloc[80:], None)), **SETTINGS).fit(X.iloc[:80])
    assert all(np.isfinite(epoch["valid_loss"]) for epoch in pre.history_)  # TypeError in the head's forward before
    pre.set_params(train_split=predefined_split(Dataset(pre.tokenize(X.iloc[80:]), None))).partial_fit(X.iloc[:80])
    assert len(pre.history_) == 4 and np.isfinite(pre.history_[-1]["valid_loss"])
    fresh = TabFormerPretrainer(train_split=pre.train_split, **SETTINGS)
    advice = r"holds tokens.*raw rows, as to fit: predefined_split\(Dataset\(X_valid, None\)\)"
    with pytest.raises(ValueError, match=advice) as error:
        fresh.fit(X.iloc[:80])
    assert "target" not in str(error.value)  # a pretrainer has none to pass
