"""Follow-ups of a review: each case misled or failed before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier

SMALL = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"price": rng.normal(size=40), "colour": rng.choice(["red", "blue"], 40)})
    return X, (X["price"] > 0).astype(int).to_numpy()


def test_explain_with_y_on_a_table_model_says_ablation_needs_mixed_inputs(table):
    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"needs mixed inputs .*TabularTokenizer reads one modality. Leave y out"):
        clf.explain(X.iloc[:3], level="column", y=y[:3])
    assert list(clf.explain(X.iloc[:3], level="column")["column"].unique()) == ["price", "colour"]


def test_a_sentence_pair_model_given_one_of_its_texts_names_the_other():
    X = pd.DataFrame({"question": ["is it good", "was it bad"] * 10, "answer": ["yes it is", "no"] * 10})
    clf = TabFormerClassifier(tokenizer="wordpiece", tokenizer__vocab_size=60, **SMALL).fit(X, [0, 1] * 10)
    expected = r"X lacks the text column 'answer': fit read the sentence pair \['question', 'answer'\]"
    with pytest.raises(ValueError, match=expected):
        clf.predict(X[["question"]])
    with pytest.raises(ValueError, match="lacks the text column 'question'"):
        clf.predict(X[["answer"]])


def test_a_tagger_refuses_training_tags_of_one_class():
    from tabformer import TabFormerTagger

    sentences = [["Alice", "visits", "Paris"], ["Bob", "stays"]]
    with pytest.raises(ValueError, match=r"y has only 1 tag \('O'\); a tagger needs samples of at least 2 classes"):
        TabFormerTagger(tokenizer="wordpiece", **SMALL).fit(sentences, [["O", "O", "O"], ["O", "O"]])


def test_explain_and_plot_show_integer_column_labels_not_x0(table):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tabformer import plot

    X, y = table
    X = X.assign(when=pd.date_range("2024-01-01", periods=len(X), freq="D")).set_axis([0, 1, 2], axis=1)
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    tokens = clf.explain(X.iloc[:2])
    assert set(tokens["column"]) == {"0", "1", "2"}
    assert {"0", "1", "2.elapsed", "2.month_sin"} <= set(tokens["label"])
    assert sorted(clf.explain(X.iloc[:2], level="column")["column"].unique()) == ["0", "1", "2"]
    ax = plot.attention(clf, X.iloc[[0]])
    assert sorted(tick.get_text() for tick in ax.get_yticklabels()) == ["0", "1", "2"]
    plt.close("all")


def test_predicting_on_parquet_warns_once_with_the_whole_files_counts(table, tmp_path):
    import warnings

    pytest.importorskip("pyarrow")
    from tabformer.tokenizers import UntrainedMissingWarning

    X, y = table
    clf = TabFormerClassifier(**SMALL).fit(X, y)
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"price": rng.normal(size=60), "colour": rng.choice(["RED", "teal"], 60)})
    rows.loc[::2, "price"] = np.nan
    rows.to_parquet(tmp_path / "new.parquet", row_group_size=20)  # three pieces, each read on its own
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(tmp_path / "new.parquet")
    messages = [str(w.message) for w in caught]
    assert [w.category for w in caught] == [UntrainedMissingWarning, UserWarning], messages
    assert "'price' (30 missing)" in messages[0]
    assert "'colour': none of its 60 values" in messages[1] and "('RED' against 'red')" in messages[1]
    # The whole file has a fitted category in its last piece: the column is no recoding
    rows.loc[59, "colour"] = "blue"
    rows.to_parquet(tmp_path / "known.parquet", row_group_size=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(tmp_path / "known.parquet")
    assert [w.category for w in caught] == [UntrainedMissingWarning]
