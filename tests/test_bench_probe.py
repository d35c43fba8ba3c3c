"""benchmarks/probe_linear.py runs end to end on digits (a smoke test of the table it prints)."""

import importlib.util
import os
import re

HERE = os.path.dirname(__file__)


def test_probe_benchmark_prints_a_row_per_setting(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("probe_linear", os.path.join(HERE, "..", "benchmarks", "probe_linear.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = ["--data", "digits", "--lrs", "1e-2", "--labels", "200", "--pretrain-epochs", "1", "--unlabelled", "300"]
    args += ["--head-activation", "identity"]
    module.main([*args, "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    names = r"defaults|defaults, head identity|fine-tuning recipe|lr=0.01"
    rows = re.findall(rf"^\| ({names}) \| (\d\.\d{{4}}) \| (\d\.\d{{4}}) \|", out, flags=re.M)
    assert [row[0] for row in rows] == ["defaults", "defaults, head identity", "fine-tuning recipe", "lr=0.01"]
    assert all(0.0 <= float(score) <= 1.0 for row in rows for score in row[1:])
    assert "LogisticRegression on CLS + mean" in out and os.listdir(tmp_path)  # the encoder is cached for the next run
