"""Follow-ups of a second review: each case failed or misled before its fix."""

import os

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.tokenizers import TabularTokenizer

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


def test_integer_positions_name_an_arrays_columns_as_in_column_transformer():
    X = np.array([[1, 0.5, 3], [2, 1.5, 1], [1, 2.5, 3], [2, 3.0, 1]] * 5, dtype=float)
    for positions in ([0, 2], [np.int64(0), np.int32(2)], np.array([0, 2]), [0, -1]):
        tokenizer = TabularTokenizer(categorical_columns=positions).fit(X)
        assert (tokenizer.categorical_columns_, tokenizer.numeric_columns_) == (["x0", "x2"], ["x1"]), positions
    assert TabularTokenizer(categorical_columns=["x0", "x2"]).fit(X).categorical_columns_ == ["x0", "x2"]  # names still work
    assert TabularTokenizer(categorical_columns=[0, 1, 2], numeric_columns=[]).fit(X).numeric_columns_ == []
    with pytest.raises(ValueError, match=r"^categorical_columns names position\(s\) \[3, -4\] out of range: X has 3 column\(s\)"):
        TabularTokenizer(categorical_columns=[0, 3, -4]).fit(X)
    with pytest.raises(ValueError, match=r"column\(s\) \['x0'\] are listed as both categorical and numeric"):
        TabularTokenizer(categorical_columns=[0], numeric_columns=["x0"]).fit(X)
    with pytest.raises(ValueError, match=r"categorical_columns names column\(s\) \[True\] that X does not have"):
        TabularTokenizer(categorical_columns=[True]).fit(X)  # a bool is no position
    clf = TabFormerClassifier(tokenizer__categorical_columns=[0, 2], **SMALL).fit(X, [0, 1] * 10)
    assert clf.tokenizer_.categorical_columns_ == ["x0", "x2"] and clf.predict(X).shape == (20,)


def test_integer_positions_on_a_frame_are_positions_only_where_no_label_is_an_int():
    X = pd.DataFrame({"a": [1, 2, 1, 2] * 5, "b": [0.5, 1.5, 2.5, 3.0] * 5, "c": [3, 1, 3, 1] * 5})
    tokenizer = TabularTokenizer(categorical_columns=[np.int64(0), "c"]).fit(X)
    assert (tokenizer.categorical_columns_, tokenizer.numeric_columns_) == (["a", "c"], ["b"])
    assert tokenizer.transform(X.iloc[:2])["cat_ids"].tolist() == [[2, 3], [3, 2]]
    with pytest.raises(ValueError, match=r"^numeric_columns names position\(s\) \[5\] out of range: X has 3 column\(s\)"):
        TabularTokenizer(numeric_columns=[5]).fit(X)
    labelled = X.set_axis([10, 0, 2], axis=1)  # int labels: an int is a label, never a position
    assert TabularTokenizer(categorical_columns=[0]).fit(labelled).categorical_columns_ == ["x1"]
    with pytest.raises(ValueError, match=r"categorical_columns names column\(s\) \[1\] that X does not have; X has \[10, 0, 2\]"):
        TabularTokenizer(categorical_columns=[1]).fit(labelled)


def test_nested_settings_reach_a_tokenizer_routed_by_name():
    from sklearn.base import clone

    from tabformer.tokenizers import MixedTokenizer, WordPieceTokenizer

    X = pd.DataFrame(
        {"title": ["red wool hat", "blue cotton shirt", "green silk scarf", "red silk hat"] * 4, "price": np.arange(16.0)}
    )
    routing = [("words", "wordpiece", ["title"]), ("cells", "tabular", ["price"])]
    tok = MixedTokenizer(routing).set_params(words__vocab_size=40, words__min_frequency=1)
    words = tok.transformers[0][1]
    assert isinstance(words, WordPieceTokenizer) and (words.vocab_size, words.min_frequency) == (40, 1)
    assert tok.transformers[1][1] == "tabular" and routing[0][1] == "wordpiece"  # untouched: the user's list, other names
    assert tok.get_params()["words__vocab_size"] == 40
    fitted = clone(tok).fit(X)
    assert fitted.transformers_[0][1].vocab_size == 40
    # a new routing and its nested settings in one call: the settings reach the new routing
    renamed = MixedTokenizer(routing).set_params(
        transformers=[("t", "wordpiece", ["title"]), ("c", "tabular", ["price"])], t__vocab_size=50
    )
    assert renamed.transformers[0][1].vocab_size == 50
    # any value is accepted and can be set back, as scikit-learn asks (validation waits for fit)
    assert MixedTokenizer(routing).set_params(transformers=3).set_params(transformers=routing).transformers == routing
    with pytest.raises(
        ValueError, match=r"transformer 'words': unknown tokenizer 'nope'; choose one of .* or pass a tokenizer instance"
    ):
        MixedTokenizer([("words", "nope", ["title"])]).set_params(words__vocab_size=40)
    clf = TabFormerClassifier(tokenizer=MixedTokenizer(routing), tokenizer__words__vocab_size=45, **SMALL)
    clf.set_params(tokenizer__words__min_frequency=1).fit(X, [0, 1] * 8)
    assert dict((n, t) for n, t, _ in clf.tokenizer_.transformers_)["words"].vocab_size == 45


def _warned_here(record, match):
    found = [w for w in record if match in str(w.message)]
    assert found, [str(w.message) for w in record]
    assert {w.filename for w in found} == {__file__}, [w.filename for w in found]


def test_emoji_loader_warnings_point_at_the_callers_line(monkeypatch, tmp_path):
    # stacklevel=3 named the caller only through load_emoji: called one frame nearer, it named pytest's own
    # file. user_stacklevel names the first frame outside tabformer, however deep the warning sits.
    from tabformer.datasets import load_emoji
    from tabformer.datasets import multimodal as mm

    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TABFORMER_CACHE", str(blocked))  # the cache's folder cannot be made
    images = np.zeros((2, 4, 4, 3), np.uint8)
    table = pd.DataFrame({"name": ["a", "b"], "codepoints": ["1F600", "1F601"]})
    with pytest.warns(UserWarning) as record:
        mm._save_emoji_cache(mm._emoji_cache_path(4), table, images)
    _warned_here(record, "could not write the emoji cache")
    if not (os.path.exists(mm.EMOJI_TEST_FILE) and os.path.exists(mm.EMOJI_FONT_FILE)):
        pytest.skip(f"needs: {mm.EMOJI_INSTALL}")
    pytest.importorskip("PIL", reason="pip install pillow")
    with pytest.warns(UserWarning) as record:
        mm._render_emoji(["\U0001f600\U0001f600"], 8)  # two emoji: two glyphs side by side
    _warned_here(record, "render as several glyphs side by side")
    monkeypatch.setattr(mm, "_render_emoji", lambda seqs, size: np.zeros((len(seqs), size, size, 3), np.uint8))
    with pytest.warns(UserWarning) as record:
        load_emoji(size=4)
    _warned_here(record, "could not write the emoji cache")
