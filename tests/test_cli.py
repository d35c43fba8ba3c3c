"""The ``tabformer`` command line on real data (a slice of Adult written to CSV and Parquet;
digit images written as PNG files), plus its one-line errors.

``fit`` and ``predict`` (and one error's exit status) run as subprocesses, the way a user
runs them; the other commands call ``main`` in this process, since every fresh process
spends seconds importing torch."""

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

import tabformer
from tabformer import PretrainedEncoder, TabFormerPretrainer
from tabformer.cli import main, parse_settings

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "max_epochs=2", "--set", "encoder__d_model=16", "--set", "encoder__n_heads=2", "--set", "encoder__n_layers=1"]


def tabformer_cli(*args, check=True):
    """``python -m tabformer.cli ARGS`` in a fresh process, with this checkout first on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "tabformer.cli", *map(str, args)], capture_output=True, text=True, env=env)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    if importlib.util.find_spec("mglearn") is None:
        pytest.skip("mglearn (Adult data) is not installed; `make test` installs it")
    pytest.importorskip("pyarrow")
    from tabformer.datasets import load_adult

    X, y = load_adult()
    frame = X.assign(income=y).sample(360, random_state=0).reset_index(drop=True)
    folder = tmp_path_factory.mktemp("adult")
    frame.iloc[:300].to_csv(folder / "train.csv", index=False)
    frame.iloc[300:].drop(columns="income").to_parquet(folder / "new.parquet", index=False)
    return folder, frame


@pytest.fixture(scope="module")
def fitted(adult):
    folder, _ = adult
    result = tabformer_cli(
        "fit", folder / "train.csv", "--target", "income", "--out", folder / "model", *TINY, "--set", "lr=3e-3"
    )
    assert "TabFormerClassifier (classification) saved to" in result.stderr
    assert "epoch" in result.stderr  # the progress bar
    return folder / "model"


def test_fit_then_predict_parquet_with_probabilities(adult, fitted):
    folder, frame = adult
    result = tabformer_cli("predict", fitted, folder / "new.parquet", "--proba")
    predictions = pd.read_csv(io.StringIO(result.stdout))
    assert list(predictions.columns) == ["prediction", "proba_<=50K", "proba_>50K"] and len(predictions) == 60
    model = tabformer.load(fitted)
    expected = model.predict_proba(pd.read_parquet(folder / "new.parquet"))
    np.testing.assert_allclose(predictions[["proba_<=50K", "proba_>50K"]].to_numpy(), expected, atol=1e-6)
    assert model.get_params()["max_epochs"] == 2 and model.module_.encoder.d_model == 16  # --set reached the estimator
    assert model.callbacks is None  # the progress bar is not saved with the model


def test_info_and_export(adult, fitted, capsys):
    folder, _ = adult
    assert main(["info", str(fitted)]) == 0
    info = capsys.readouterr().out
    assert "tabformer.estimators.supervised.TabFormerClassifier" in info and "columns (14)" in info
    assert "education" in info and "categorical" in info and "classes:    ['<=50K', '>50K']" in info
    pytest.importorskip("onnx")
    assert main(["export", str(fitted), "--onnx", str(folder / "model.onnx")]) == 0
    assert (folder / "model.onnx").stat().st_size > 0


def test_info_on_another_librarys_folder_or_an_edited_config_is_a_one_line_error(fitted, tmp_path, capsys):
    import json
    import shutil

    other = tmp_path / "hf"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "bert"}')
    assert main(["info", str(other)]) == 2  # exited 0, printing "a saved tabformer None (format version None)"
    # a Hugging Face folder says what reads it (it said only: not a tabformer config.json)
    assert "is a Hugging Face model's config (model_type 'bert'), not a folder tabformer saved" in capsys.readouterr().err
    edited = tmp_path / "edited"
    shutil.copytree(fitted, edited)
    config = json.loads((edited / "config.json").read_text())
    del config["estimator"]["class"]
    (edited / "config.json").write_text(json.dumps(config))
    assert main(["info", str(edited)]) == 2  # a KeyError traceback and exit 1 before
    assert "is damaged (KeyError: 'class')" in capsys.readouterr().err


def test_pretrain_on_a_folder_of_images_then_fit_with_image_paths(tmp_path, capsys):
    from PIL import Image

    data = load_digits()
    images = tmp_path / "unlabeled"
    images.mkdir()
    for i in range(48):
        Image.fromarray((data.images[i] * 16).astype(np.uint8)).save(images / f"{i:03d}.png")
    argv = ["pretrain", images, "--objective", "simclr", "--out", tmp_path / "encoder", *TINY, "--set", "objective__blur_p=0.0"]
    assert main([str(a) for a in argv]) == 0
    pretrainer = tabformer.load(tmp_path / "encoder")
    assert isinstance(pretrainer, TabFormerPretrainer) and pretrainer.objective == "simclr"
    assert isinstance(PretrainedEncoder.load(tmp_path / "encoder"), PretrainedEncoder)
    # a table whose image column holds paths relative to the CSV's folder
    table = pd.DataFrame({"photo": [f"unlabeled/{i:03d}.png" for i in range(48)], "digit": data.target[:48].astype(str)})
    table.to_csv(tmp_path / "labelled.csv", index=False)
    argv = ["fit", tmp_path / "labelled.csv", "--target", "digit", "--out", tmp_path / "model", *TINY, "--quiet"]
    assert main([str(a) for a in argv]) == 0
    assert tabformer.load(tmp_path / "model").tokenizer_.column_kinds_ == {"photo": "image"}
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model"), str(tmp_path / "labelled.csv")]) == 0  # the target column is ignored
    result = capsys.readouterr()
    assert len(pd.read_csv(io.StringIO(result.out))) == 48 and "ignoring column(s) not seen in fit" in result.err


def test_bad_input_exits_2_with_one_line(adult, fitted, capsys):
    folder, _ = adult
    result = tabformer_cli("fit", folder / "train.csv", "--target", "salary", "--out", folder / "x", check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "target column 'salary' is not in" in result.stderr and "'income'" in result.stderr
    cases = {
        "no such file or folder": ["fit", folder / "missing.csv", "--target", "income", "--out", folder / "x"],
        "unknown parameter 'colour'": [
            "fit",
            folder / "train.csv",
            "--target",
            "income",
            "--out",
            folder / "x",
            "--set",
            "colour=1",
        ],
        "encoder__colour: not a parameter of TransformerEncoder": [
            "fit",
            folder / "train.csv",
            "--target",
            "income",
            "--out",
            folder / "x",
            "--set",
            "encoder__colour=1",
            "--set",
            "max_epochs=1",
        ],
        "is not a saved tabformer model": ["info", folder],
        "unknown file type '.xlsx'": ["predict", fitted, folder / "new.xlsx"],
    }
    (folder / "new.xlsx").write_text("not a spreadsheet")
    for message, argv in cases.items():
        assert main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    (folder / "broken.parquet").write_bytes(b"PAR1 not really")
    assert main(["predict", str(fitted), str(folder / "broken.parquet")]) == 2
    assert "cannot read" in capsys.readouterr().err
    # A model folder whose config lost an entry: one line, not a KeyError's traceback.
    damaged = folder / "damaged"
    shutil.copytree(fitted, damaged)
    config = json.loads((damaged / "config.json").read_text())
    del config["module"]
    (damaged / "config.json").write_text(json.dumps(config))
    assert main(["predict", str(damaged), str(folder / "train.csv")]) == 2
    err = capsys.readouterr().err
    assert "does not hold a model tabformer can read: KeyError" in err and err.count("\n") == 1, err


def test_parse_settings():
    assert parse_settings(["lr=3e-4", "tokenizer=wordpiece", "patience=None", "freeze_encoder=true", "x=[1, 2]"]) == {
        "lr": 3e-4,
        "tokenizer": "wordpiece",
        "patience": None,
        "freeze_encoder": True,
        "x": [1, 2],
    }


def test_pretrain_mlm_on_a_text_file_then_embed(tmp_path, capsys):
    texts = ["a wonderful moving film", "i loved every minute", "a dull boring mess", "i hated every minute"] * 6
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    settings = [*TINY, "--set", "tokenizer__vocab_size=60", "--set", "tokenizer__min_frequency=1", "--quiet"]
    assert main(["pretrain", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "mlm"), *settings]) == 0
    assert main(["predict", str(tmp_path / "mlm"), str(tmp_path / "texts.txt")]) == 0
    embeddings = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(embeddings.columns[:2]) == ["input", "embedding0"] and embeddings.shape == (24, 17)
    np.testing.assert_allclose(embeddings.iloc[:, 1:].to_numpy(), tabformer.load(tmp_path / "mlm").transform(texts), atol=1e-5)


def test_pretrain_a_table_picks_masked_cells_by_default(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"city": rng.choice(["paris", "rome", "oslo"], 64), "age": rng.normal(40, 10, 64)})
    frame.to_csv(tmp_path / "table.csv", index=False)
    assert main(["pretrain", str(tmp_path / "table.csv"), "--out", str(tmp_path / "cells"), *TINY, "--quiet"]) == 0
    assert tabformer.load(tmp_path / "cells").resolved_params_["objective"] == "masked_cells"
    # --proba on a pretrainer was ignored and embeddings were written as if it had not been asked
    assert main(["predict", str(tmp_path / "cells"), str(tmp_path / "table.csv"), "--proba"]) == 2


def test_fit_and_predict_read_a_hive_partitioned_folder_with_its_partition_column(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    root, rng = tmp_path / "data", np.random.default_rng(0)
    for year in (2020, 2021):  # ``year`` lives in the folder names only
        (root / f"year={year}").mkdir(parents=True)
        x = rng.normal(size=40)
        pd.DataFrame({"x": x, "label": np.where(x > 0, "up", "down")}).to_parquet(root / f"year={year}" / "part-0.parquet")
    assert main(["fit", str(root), "--target", "label", "--out", str(tmp_path / "model"), *TINY]) == 0
    model = tabformer.load(tmp_path / "model")
    assert list(model.feature_names_in_) == ["x", "year"]
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model"), str(root)]) == 0
    predictions = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = model.predict(pd.read_parquet(root).drop(columns="label"))
    assert predictions["prediction"].tolist() == list(expected)


def test_fit_and_predict_read_a_parquet_date_column_as_dates_as_a_streamed_fit_does(tmp_path, capsys):
    # pandas reads date32 cells as datetime.date objects: the command line fitted them as categories, and told the
    # user to convert them (pd.to_datetime), which a command line user cannot.
    pa = pytest.importorskip("pyarrow")
    import datetime

    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    days = [datetime.date(2020, 1, 1) + datetime.timedelta(days=int(d)) for d in rng.integers(0, 900, 60)]
    x = rng.normal(size=60)
    path = tmp_path / "dated.parquet"
    pq.write_table(pa.table({"x": x, "day": pa.array(days, pa.date32()), "label": np.where(x > 0, "up", "down")}), path)
    assert main(["fit", str(path), "--target", "label", "--out", str(tmp_path / "model"), *TINY]) == 0
    model = tabformer.load(tmp_path / "model")
    assert "day" in model.tokenizer_.datetime_parts_
    streamed = tabformer.TabFormerClassifier(max_epochs=1, encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1)
    streamed.fit(str(path), "label").save(tmp_path / "streamed")
    for folder in (tmp_path / "model", tmp_path / "streamed"):
        capsys.readouterr()
        assert main(["predict", str(folder), str(path)]) == 0  # the streamed model failed: "changed kind"
        predictions = pd.read_csv(io.StringIO(capsys.readouterr().out))
        assert predictions["prediction"].tolist() == list(tabformer.load(folder).predict(path))
