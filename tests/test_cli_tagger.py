"""``tabformer predict`` on a saved tagger: a CSV's sentences are read as written."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer.cli import main


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    from tabformer import TabFormerTagger

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("tagger")
    sentences, tags = [["alice", "visits", "paris"], ["bob", "stays", "home"]] * 10, [["PER", "O", "LOC"], ["PER", "O", "O"]] * 10
    settings = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)
    TabFormerTagger(tokenizer="wordpiece", tokenizer__vocab_size=60, **settings).fit(sentences, tags).save(folder / "m")
    torch.set_num_threads(before)
    return folder / "m"


# pandas' default NA strings, and cells it parses as numbers or booleans: each is a one-word sentence
WORDS = ["NA", "None", "null", "nan", "N/A", "NaN", "#N/A", "007", "1.50", "True"]


# the words are unseen: the point is that each gets a tag
@pytest.mark.filterwarnings("ignore:.*sub-words of the texts are \\[UNK\\]:UserWarning")
def test_a_tagger_tags_one_word_sentences_pandas_reads_as_missing(tagger, tmp_path, capsys):
    # "NA", "None", "null", "nan", "N/A" were read as missing and got no tag at all.
    from tabformer import load

    (tmp_path / "words.csv").write_text("sentence\n" + "\n".join(WORDS) + '\n""\nalice visits NA\n')
    capsys.readouterr()
    assert main(["predict", str(tagger), str(tmp_path / "words.csv")]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), keep_default_na=False)
    assert list(out.columns) == ["tags"]
    sentences = [[word] for word in WORDS] + [[], ["alice", "visits", "NA"]]  # an empty cell: an empty sentence, no tag
    assert [row.split() for row in out["tags"]] == load(tagger).predict(sentences)
    # the same lines in a .txt read the same (a .txt echoes its lines in an `input` column, for every model)
    (tmp_path / "words.txt").write_text("\n".join(WORDS) + "\n\nalice visits NA\n")
    assert main(["predict", str(tagger), str(tmp_path / "words.txt")]) == 0
    echoed = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), keep_default_na=False)
    assert echoed["tags"].tolist() == out["tags"].tolist() and echoed["input"].tolist() == WORDS + ["", "alice visits NA"]


def test_proba_on_a_tagger_writes_each_words_probabilities(tagger, tmp_path, capsys):
    # --proba on a tagger was refused; it writes one column per tag, a cell per sentence holding each word's
    # probability (space-separated like the words), as TabFormerTagger.predict_proba gives them.
    from tabformer import load

    (tmp_path / "words.csv").write_text('sentence\nalice visits paris\n""\nbob\n')
    capsys.readouterr()
    assert main(["predict", str(tagger), str(tmp_path / "words.csv"), "--proba"]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), keep_default_na=False)
    model = load(tagger)
    sentences = [["alice", "visits", "paris"], [], ["bob"]]
    assert list(out.columns) == ["tags"] + [f"proba_{tag}" for tag in model.classes_]
    assert [row.split() for row in out["tags"]] == model.predict(sentences)
    expected = model.predict_proba(sentences)
    for i, rows in enumerate(expected):
        written = np.array([[float(v) for v in str(out.loc[i, f"proba_{tag}"]).split()] for tag in model.classes_]).T
        assert written.shape == rows.shape and np.allclose(written.reshape(rows.shape), rows, atol=1e-5)


def test_a_parquet_column_of_word_lists_is_read_as_its_words(tagger, tmp_path, capsys):
    # A Parquet `tokens` column (lists of words, as datasets store tagging data) failed with numpy's "truth value
    # of an array is ambiguous", and a one-word list was read as the word "['alice']".
    pytest.importorskip("pyarrow")
    from tabformer import load

    sentences = [["alice"], ["bob", "visits", "paris"], []]
    pd.DataFrame({"tokens": sentences}).to_parquet(tmp_path / "words.parquet")
    capsys.readouterr()
    assert main(["predict", str(tagger), str(tmp_path / "words.parquet")]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), keep_default_na=False)
    assert [row.split() for row in out["tags"]] == load(tagger).predict(sentences)
    pd.DataFrame({"tokens": [["alice"], ["paris"]]}).to_parquet(tmp_path / "one.parquet")  # it read "['alice']"
    assert main(["predict", str(tagger), str(tmp_path / "one.parquet")]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), keep_default_na=False)
    assert [row.split() for row in out["tags"]] == load(tagger).predict([["alice"], ["paris"]])
