"""The command line, saved models and ONNX as a review shipped them (stop 41): each test failed, or answered wrong,
before its fix."""

import numpy as np
import pandas as pd
import pytest

from tabformer.cli import main

TINY = ["--quiet", "--set", "max_epochs=1", "--set", "encoder__d_model=16", "--set", "encoder__n_heads=2"]
TINY += ["--set", "encoder__n_layers=1", "--set", "batch_size=32"]


@pytest.fixture(scope="module")
def int_labels_with_blanks(tmp_path_factory):
    """A training CSV whose 0/1 target has two blank cells, and the model the CLI fitted on it."""
    folder = tmp_path_factory.mktemp("blanks")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=100), "city": rng.choice(["oslo", "rome"], 100)})
    frame["label"] = pd.array((frame["x"] > 0).astype(int), dtype="Int64")
    frame.loc[[3, 7], "label"] = pd.NA
    frame.to_csv(folder / "train.csv", index=False)
    frame.drop(columns="label").head(5).to_csv(folder / "rows.csv", index=False)
    assert main(["fit", str(folder / "train.csv"), "--target", "label", "--out", str(folder / "m"), *TINY]) == 0
    return folder


def test_whole_number_labels_with_blank_cells_stay_whole_numbers(int_labels_with_blanks, capsys):
    # pandas reads a column of 0/1 with a blank as floats: the model's classes were 0.0 and 1.0,
    # so predict wrote "1.0" and "proba_1.0" where the file said 1.
    from tabformer import load

    folder = int_labels_with_blanks
    assert load(folder / "m").classes_.dtype.kind == "i"
    capsys.readouterr()
    assert main(["predict", str(folder / "m"), str(folder / "rows.csv"), "--proba"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "prediction,proba_0,proba_1"
    assert all(line.split(",")[0] in ("0", "1") for line in lines[1:])


def test_an_unwritable_output_is_a_one_line_error(int_labels_with_blanks, tmp_path, capsys):
    # Writing into a missing folder, or onto a folder, raised a traceback with status 1.
    folder = int_labels_with_blanks
    (tmp_path / "taken.csv").mkdir()
    for output in (tmp_path / "missing" / "out.csv", tmp_path / "taken.csv"):
        capsys.readouterr()
        assert main(["predict", str(folder / "m"), str(folder / "rows.csv"), "--output", str(output)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tabformer predict: error:") and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("layout", ["no header", "semicolons"])
def test_a_file_none_of_whose_columns_were_fitted_names_the_fitted_columns(layout, int_labels_with_blanks, tmp_path, capsys):
    # Every column was dropped as "not seen in fit", then the estimator said "X has 0 feature(s)".
    folder = int_labels_with_blanks
    rows = pd.read_csv(folder / "rows.csv")
    rows.to_csv(tmp_path / "rows.csv", index=False, header=layout != "no header", sep=";" if layout == "semicolons" else ",")
    capsys.readouterr()
    assert main(["predict", str(folder / "m"), str(tmp_path / "rows.csv")]) == 2
    err = capsys.readouterr().err
    assert "0 feature(s)" not in err and "['x', 'city']" in err, err


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    from tabformer import TabFormerTagger

    folder = tmp_path_factory.mktemp("tagger")
    sentences, tags = [["alice", "visits", "paris"], ["bob", "stays", "home"]] * 20, [["PER", "O", "LOC"], ["PER", "O", "O"]] * 20
    settings = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, verbose=0)
    TabFormerTagger(**settings, tokenizer__vocab_size=80).fit(sentences, tags).save(folder / "m")
    return folder / "m"


def test_a_tagger_reads_a_blank_cell_as_no_words_and_refuses_a_second_column(tagger, tmp_path, capsys):
    # A blank cell was tagged as the word "nan"; with an id column first, the ids were tagged and the sentences ignored.
    pd.DataFrame({"sentence": ["alice visits paris", "", "bob stays"]}).to_csv(tmp_path / "one.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tagger), str(tmp_path / "one.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "tags" and [len(line.strip('"').split()) for line in lines[1:]] == [3, 0, 2], lines
    pd.DataFrame({"id": [1, 2], "sentence": ["alice visits paris", "bob stays"]}).to_csv(tmp_path / "two.csv", index=False)
    assert main(["predict", str(tagger), str(tmp_path / "two.csv")]) == 2
    assert "['id', 'sentence']" in capsys.readouterr().err


def test_a_saved_index_column_is_named_at_fit(tmp_path, capsys):
    # DataFrame.to_csv writes the index as 'Unnamed: 0' by default: it trained as a numeric feature without a word
    # (row order can carry the target, and new files number their rows afresh).
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=64), "label": rng.choice(["a", "b"], 64)})
    frame.to_csv(tmp_path / "train.csv")  # index included
    # The library's identifier warning names it; the command's own note, which said it a second time, is gone.
    with pytest.warns(UserWarning, match=r"'Unnamed: 0' looks like an identifier .* save with index=False") as caught:
        assert main(["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "m"), *TINY]) == 0
    assert sum("Unnamed: 0" in str(w.message) for w in caught) == 1 and "Unnamed" not in capsys.readouterr().err
    frame.to_csv(tmp_path / "clean.csv", index=False)
    assert main(["fit", str(tmp_path / "clean.csv"), "--target", "label", "--out", str(tmp_path / "m2"), *TINY]) == 0
    assert "to_csv" not in capsys.readouterr().err


def test_a_file_that_is_not_utf8_is_named_as_such(tmp_path, capsys):
    (tmp_path / "rows.csv").write_bytes("city,label\nZ\u00fcrich,a\nBern,b\n".encode("latin-1"))
    assert main(["fit", str(tmp_path / "rows.csv"), "--target", "label", "--out", str(tmp_path / "m"), *TINY]) == 2
    error = capsys.readouterr().err  # it named the codec's complaint, not the file's encoding
    assert "is not UTF-8 (invalid" in error and "save it as UTF-8" in error


def test_a_target_of_one_value_is_named_with_the_task_to_try(tmp_path, capsys):
    # A constant whole-number target reads as classification, which failed deep in fit ("only 1 class") without a hint.
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=40), "price": 7}).to_csv(tmp_path / "rows.csv", index=False)
    assert main(["fit", str(tmp_path / "rows.csv"), "--target", "price", "--out", str(tmp_path / "m"), *TINY]) == 2
    assert "'price' holds one value (7) in every row: a classifier needs 2 classes (--task regression" in capsys.readouterr().err
    args = ["fit", str(tmp_path / "rows.csv"), "--target", "price", "--task", "regression", "--out", str(tmp_path / "r"), *TINY]
    assert main(args) == 0


def test_the_fit_summary_reads_one_epoch_in_the_singular(int_labels_with_blanks):
    from tabformer import load
    from tabformer.cli import _summary

    assert _summary(load(int_labels_with_blanks / "m")).startswith("1 epoch, last epoch: train_loss")


def test_a_short_files_saved_index_column_is_still_named_by_the_command(tmp_path, capsys):
    # Under 50 rows the library's identifier warning says nothing, so the command's own note still does.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=30), "label": rng.choice(["a", "b"], 30)})
    frame.to_csv(tmp_path / "train.csv")  # index included
    assert main(["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "m"), *TINY]) == 0
    assert "'Unnamed: 0' holds 0, 1, ... (a DataFrame index saved by to_csv?)" in capsys.readouterr().err


def test_a_blank_line_of_a_one_column_csv_is_an_empty_text_not_a_dropped_row(tmp_path):
    from tabformer._cli_input import _read_file

    (tmp_path / "one.csv").write_text("text\ngood film\n\nbad plot\n")
    frame = _read_file(tmp_path / "one.csv", {"text": "object"}, texts={"text"})
    assert frame["text"].tolist() == ["good film", "", "bad plot"]  # 2 rows before: the output lost a line
    (tmp_path / "two.csv").write_text("a,b\n1,x\n\n2,y\n")  # with separators, a blank line is no row
    assert len(_read_file(tmp_path / "two.csv", {"a": "int64", "b": "object"})) == 2


def test_a_txt_file_splits_at_newlines_only():
    from tabformer._cli_input import _lines

    # a form feed or \x85 inside a text (Rotten Tomatoes holds one) started a new row: one prediction too many
    assert _lines("good\x85film\r\nbad\x0cplot\n\nfine\n") == ["good\x85film", "bad\x0cplot", "", "fine"]
    assert _lines("") == [] and _lines("one") == ["one"]


def test_info_prints_a_tuple_setting_as_a_tuple(tmp_path, capsys):
    from conftest import TINY, make_table

    from tabformer import TabFormerClassifier

    X, y = make_table(n=60)
    TabFormerClassifier(**TINY, ensemble_size=1, optimizer__betas=(0.9, 0.99)).fit(X, y).save(tmp_path / "m")
    assert main(["info", str(tmp_path / "m")]) == 0
    assert "optimizer__betas=(0.9, 0.99)" in capsys.readouterr().out  # it printed the word "tuple"
