"""The fusion benchmark runs end to end on a slice of both real datasets (smoke test)."""

import importlib.util
import os

import pytest

from tabformer.datasets import MissingDatasetError

HERE = os.path.dirname(__file__)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_fusion", os.path.join(HERE, "..", "benchmarks", "bench_fusion.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_fusion_prints_every_row(capsys):
    bench = _bench()
    try:
        results = bench.main(["--limit", "120", "--seeds", "1", "--epochs", "1"])
    except MissingDatasetError as error:
        pytest.skip(str(error))
    labels = {title: [row[0] for row in rows] for title, _, rows in results}
    emoji, lending = labels.values()
    assert any("late fusion" in r for r in emoji) and any("image only" in r for r in emoji)
    assert any("mid fusion" in r for r in lending) and any("HistGradientBoosting" in r for r in lending)
    out = capsys.readouterr().out
    assert "| tabformer early fusion |" in out and "R²" in out
