"""benchmarks/bench_scale.py runs end to end on small sizes (smoke test)."""

import importlib.util
import os

import pytest

pytest.importorskip("pyarrow")
HERE = os.path.dirname(__file__)


@pytest.mark.slow
def test_bench_scale_reports_fit_in_memory_and_streamed_and_predict_memory(capsys):
    spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(HERE, "..", "benchmarks", "bench_scale.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    frame = bench.main(["--fit-rows", "300", "--predict-rows", "300", "900"])
    assert list(frame["step"]) == ["fit in memory", "fit streamed", "predict streamed", "predict streamed"]
    assert list(frame["rows"]) == [300, 300, 300, 900]
    assert (frame["seconds"] > 0).all() and (frame["peak_rss_mib"] >= frame["rss_before_mib"]).all()
    assert "predict peak RSS" in capsys.readouterr().out
