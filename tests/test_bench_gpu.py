"""benchmarks/bench_gpu.py runs end to end on the CPU (smoke test of both training paths)."""

import importlib.util
import os
import pathlib

import numpy as np

HERE = os.path.dirname(__file__)


def test_bench_gpu_times_estimator_and_plain_loop_on_cpu(capsys):
    spec = importlib.util.spec_from_file_location("bench_gpu", os.path.join(HERE, "..", "benchmarks", "bench_gpu.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    args = ["--device", "cpu", "--precision", "fp32", "--rows", "512", "--rounds", "1", "--only", "table", "--epochs", "2"]
    table = bench.main(args)
    assert list(table["path"]) == ["estimator", "plain loop"]
    assert (table["samples_per_s"] > 0).all() and (table["tflops"] > 0).all()
    assert np.isfinite(table.loc[0, "vs_loop"]) and table.loc[0, "vs_loop"] > 0
    assert "measured dense matmul peak" in capsys.readouterr().out


def test_the_gpu_checks_script_parses_and_runs_the_cuda_tests():
    import subprocess

    script = os.path.join(HERE, "..", "benchmarks", "gpu_checks.sh")
    subprocess.run(["bash", "-n", script], check=True)
    text = pathlib.Path(script).read_text()
    assert "-m cuda" in text and "bench_gpu.py --epochs" in text and "--compile" in text
