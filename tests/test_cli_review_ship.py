"""The command line as a review of the shipped version found it: each test failed, or answered wrong, before its fix."""

import io
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import load
from tabformer.cli import main

TINY = ["--quiet", "--set", "max_epochs=1", "--set", "encoder__d_model=16", "--set", "encoder__n_heads=2"]
TINY += ["--set", "encoder__n_layers=1", "--set", "ensemble_size=1"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


def _fit(folder, target, values, *extra):
    """``main(["fit", ...])`` on a CSV of one number column and ``target`` holding ``values`` (strings, as written)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=len(values)), target: values})
    frame.to_csv(folder / "train.csv", index=False)
    return main(["fit", str(folder / "train.csv"), "--target", target, "--out", str(folder / "m"), *TINY, *extra])


def test_a_class_spelled_as_a_pandas_na_string_is_a_class(tmp_path, capsys):
    # "NA" (North America), "N/A", "None", "null" were read as missing: their rows were dropped, the classes lost.
    classes = ["EU", "NA", "N/A", "None", "null"]
    assert _fit(tmp_path, "region", classes * 12) == 0
    assert "dropping" not in capsys.readouterr().err
    assert sorted(load(tmp_path / "m").classes_) == sorted(classes)


def test_a_pandas_na_string_in_a_column_of_numbers_is_refused_naming_its_row(tmp_path, capsys):
    # "NA" among prices was dropped silently (as missing); only an empty cell is missing now.
    values = [f"{v:.2f}" for v in np.linspace(1, 50, 40)]
    values[17] = "NA"
    assert _fit(tmp_path, "price", values) == 2
    err = capsys.readouterr().err
    assert "'price'" in err and "'NA'" in err and "row 17" in err and len(err.strip().splitlines()) == 1, err


def test_an_empty_cell_in_a_column_of_numbers_is_still_a_row_with_no_target(tmp_path, capsys):
    values = [f"{v:.2f}" for v in np.linspace(1, 50, 40)]
    values[5] = ""
    assert _fit(tmp_path, "price", values) == 0
    assert "dropping 1 row(s) with no 'price'" in capsys.readouterr().err
    assert type(load(tmp_path / "m")).__name__ == "TabFormerRegressor"


def test_class_codes_keep_their_spelling_through_fit_and_predict(tmp_path, capsys):
    # Codes "007", "010" were parsed as numbers: classes 7 and 10, predict wrote 7 and proba_7, and with more
    # than 20 distinct codes --task auto fitted a regression.
    codes = [f"{i:03d}" for i in range(0, 50, 2)]  # 25 codes, every one with leading zeros
    assert _fit(tmp_path, "code", codes * 4) == 0
    assert "regression" not in capsys.readouterr().err
    model = load(tmp_path / "m")
    assert type(model).__name__ == "TabFormerClassifier" and sorted(model.classes_) == codes
    pd.DataFrame({"x": [0.1, -0.3]}).to_csv(tmp_path / "rows.csv", index=False)
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "rows.csv"), "--proba"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",")[:3] == ["prediction", "proba_000", "proba_002"]
    assert all(line.split(",")[0] in codes for line in lines[1:]), lines


@pytest.mark.parametrize(
    "cells, expected",
    [
        (["007", "010", ""], ["007", "010", None]),  # leading zeros: codes
        (["+1", "-1"], ["+1", "-1"]),  # str(int("+1")) is "1"
        (["1", "2", "abc"], ["1", "2", "abc"]),  # numbers and words: classes as written
        (["true", "false"], ["true", "false"]),  # not as str(bool) writes them
        (["True", "False", ""], [True, False, None]),
        (["3", " 10", ""], [3.0, 10.0, None]),  # a space after the separator is no part of the number
        (["3", "10"], [3, 10]),
        (["12.50", "0.5", "1e3", ".25", "-0.0"], [12.5, 0.5, 1000.0, 0.25, -0.0]),
    ],
)
def test_a_target_is_numbers_only_where_every_value_is_one_as_written(cells, expected, tmp_path):
    from tabformer._cli_input import read_data

    pd.DataFrame({"x": range(len(cells)), "y": cells}).to_csv(tmp_path / "t.csv", index=False)
    got = read_data(tmp_path / "t.csv", parse_dates=True, target="y")["y"]
    assert [None if pd.isna(v) else v for v in got] == expected
    assert [type(v) for v in got if not pd.isna(v)] == [type(v) for v in expected if v is not None]


@pytest.fixture(scope="module")
def many_classes(tmp_path_factory):
    """A classifier of 70 classes (its class list in arrays.safetensors, not config.json), saved, and rows to predict."""
    from tabformer import TabFormerClassifier

    folder = tmp_path_factory.mktemp("many")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=140), "b": rng.normal(size=140)})
    settings = dict(max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, ensemble_size=1, verbose=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        TabFormerClassifier(**settings).fit(X, np.repeat(np.arange(70), 2)).save(folder / "m")
    finally:
        torch.set_num_threads(threads)
    X.head(3).to_csv(folder / "rows.csv", index=False)
    return folder


def _copy(folder, tmp_path):
    import shutil

    return shutil.copytree(folder / "m", tmp_path / "m")


def test_info_on_a_damaged_class_list_is_a_one_line_error(many_classes, tmp_path, capsys):
    # A damaged arrays.safetensors printed safetensors' SafetensorError traceback, exit status 1.
    model = _copy(many_classes, tmp_path)
    (model / "arrays.safetensors").write_bytes((model / "arrays.safetensors").read_bytes()[:100])
    assert main(["info", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tabformer info: error:") and "arrays.safetensors" in err and len(err.strip().splitlines()) == 1, err


def test_info_refuses_a_class_list_file_outside_the_folder(many_classes, tmp_path, capsys):
    # config.json's "file" was joined to the folder as written: "../other.safetensors" was read and its array printed.
    import json

    from safetensors.numpy import save_file

    model = _copy(many_classes, tmp_path)
    config = json.loads((model / "config.json").read_text())
    classes = config["fitted"]["label_encoder_"]["fitted"]["classes_"]
    save_file({classes["key"]: np.arange(100, 170)}, str(tmp_path / "other.safetensors"))
    classes["file"] = "../other.safetensors"
    (model / "config.json").write_text(json.dumps(config))
    assert main(["info", str(model)]) == 2
    captured = capsys.readouterr()
    assert "not inside the folder" in captured.err and "169" not in captured.out, captured


def test_predict_on_cuda_without_a_gpu_says_to_use_the_cpu(many_classes, monkeypatch, capsys):
    # torch's "Found no NVIDIA driver on your system..." was the whole message.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["predict", str(many_classes / "m"), str(many_classes / "rows.csv"), "--device", "cuda"]) == 2
    assert "use --device cpu" in capsys.readouterr().err


def test_info_lists_no_file_outside_the_folder(many_classes, tmp_path, capsys):
    # The files line joined config.json's "files" to the folder as written: "../secret.txt" had its size printed.
    import json

    model = _copy(many_classes, tmp_path)
    (tmp_path / "secret.txt").write_text("x" * 1234)
    config = json.loads((model / "config.json").read_text())
    config["files"] = [*config["files"], "../secret.txt"]
    (model / "config.json").write_text(json.dumps(config))
    main(["info", str(model)])
    out = capsys.readouterr().out
    assert "files:" in out and "secret" not in out and "config.json" in out


_ANSWERS = ["None", "NA", "null", "N/A"]  # texts pandas reads as missing by default


def _texts(n):
    rng = np.random.default_rng(1)
    good, bad = ["great fun", "loved it", "superb cast"], ["dull plot", "awful pacing", "boring mess"]
    labels = rng.integers(0, 2, n)
    return [f"{rng.choice(good if label else bad)} {i}" for i, label in enumerate(labels)], labels


def test_a_text_spelled_as_a_pandas_na_string_is_a_text_at_fit_and_predict(tmp_path, capsys):
    # A text model refused the review "NA" as "missing text (None/NaN)", at fit and predict, advising to replace it
    # with '' (which would have destroyed the text).
    texts, labels = _texts(60)
    texts[7], texts[9] = "NA", ""
    pd.DataFrame({"review": texts, "label": labels}).to_csv(tmp_path / "train.csv", index=False)
    fit = ["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "m"), "--set", "tokenizer=wordpiece"]
    assert main([*fit, *TINY]) == 0, capsys.readouterr().err
    pd.DataFrame({"review": ["great fun", "", *_ANSWERS]}).to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "new.csv"), "--proba"]) == 0, capsys.readouterr().err
    assert len(pd.read_csv(io.StringIO(capsys.readouterr().out))) == 6


def test_a_mixed_models_texts_read_by_the_cli_as_predict_reads_them(tmp_path, capsys):
    # A mixed model read "None", "NA", "null" as missing texts: the CLI gave them one answer (and an
    # UntrainedMissingWarning) where predict on the same strings gave each its own.
    texts, labels = _texts(80)
    stars = np.random.default_rng(2).normal(size=80)
    pd.DataFrame({"review": texts, "stars": stars, "label": labels}).to_csv(tmp_path / "train.csv", index=False)
    assert main(["fit", str(tmp_path / "train.csv"), "--target", "label", "--out", str(tmp_path / "m"), *TINY]) == 0
    new = pd.DataFrame({"review": _ANSWERS, "stars": [0.0] * 4})
    new.to_csv(tmp_path / "new.csv", index=False)
    model = load(tmp_path / "m")
    capsys.readouterr()
    assert model.tokenizer_.column_kinds_["review"] == "text"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no UntrainedMissingWarning: nothing is missing
        assert main(["predict", str(tmp_path / "m"), str(tmp_path / "new.csv"), "--proba"]) == 0
    cli = pd.read_csv(io.StringIO(capsys.readouterr().out))
    np.testing.assert_allclose(cli.filter(like="proba_").to_numpy(), model.predict_proba(new), atol=1e-5)
