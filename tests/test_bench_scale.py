"""benchmarks/bench_scale.py runs end to end on small sizes (smoke test)."""

import importlib.util
import os

import pytest

pytest.importorskip("pyarrow")
HERE = os.path.dirname(__file__)


@pytest.mark.slow
def test_bench_scale_reports_fit_time_and_predict_memory_from_parquet(capsys):
    spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(HERE, "..", "benchmarks", "bench_scale.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    fit_rows, predicted = bench.main(["--predict-rows", "300", "900", "--fit-rows", "300"])
    assert [row["rows"] for row in fit_rows] == [300] and fit_rows[0]["fit_seconds_per_epoch"] > 0
    assert list(predicted["rows"]) == [300, 900]
    assert (predicted["peak_rss_mib"] >= predicted["rss_after_load_mib"]).all()
    assert "peak RSS" in capsys.readouterr().out
