"""benchmarks/bench_speed.py runs end to end in its --quick mode (a smoke test, no timing claim)."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("bench_speed", os.path.join(HERE, "..", "benchmarks", "bench_speed.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unknown_row_is_refused(capsys):
    with pytest.raises(SystemExit):
        _load().main(["--only", "table_train,warp_drive"])
    assert "warp_drive" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_run_prints_the_table(capsys):
    for package in ("rtdl_revisiting_models", "mglearn"):  # mglearn is installed --no-deps: find it, don't import it
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed (pip install -e '.[bench]'; make install)")
    result = _load().main(["--quick", "--only", "table_train,table_infer_rtdl,table_proba_rtdl,table_flops,import"])
    assert list(result.index) == [
        "table training vs a plain loop of the same module",
        "table inference vs rtdl, pre-tokenized tensors",
        "predict_proba(DataFrame) vs rtdl + its sklearn preprocessing",
        "table training FLOP/s / fp32 matmul peak (1 thread)",
        "`import tabformer` vs `import sklearn`",
    ]
    assert (result["median"] > 0).all() and (result["min"] <= result["max"]).all()
    assert "fp32 matmul peak" in capsys.readouterr().out
