"""benchmarks/bench_adult.py (``make bench``) runs end to end on a slice (a smoke test, no timing claim)."""

import importlib.util
import os

HERE = os.path.dirname(__file__)
BENCHMARKS = os.path.join(HERE, "..", "benchmarks")


def test_a_short_run_prints_the_overhead_ratio(capsys, monkeypatch):
    monkeypatch.syspath_prepend(BENCHMARKS)  # the script imports its sibling splits.py
    spec = importlib.util.spec_from_file_location("bench_adult", os.path.join(BENCHMARKS, "bench_adult.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ratio = module.main(["--rows", "600", "--epochs", "1", "--threads", "1", "--peak-seconds", "0.1"])
    out = capsys.readouterr().out
    assert ratio > 0
    # The plain loop runs at the batch size fit resolved ("auto" is not a number a loop can use).
    assert "batch 16," in out and "wrapper overhead ratio" in out
