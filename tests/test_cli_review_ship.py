"""The command line as a review of the shipped version found it: each test failed, or answered wrong, before its fix."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import load
from tabformer.cli import main

TINY = ["--quiet", "--set", "max_epochs=1", "--set", "encoder__d_model=16", "--set", "encoder__n_heads=2"]
TINY += ["--set", "encoder__n_layers=1", "--set", "ensemble_size=1"]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
