"""benchmarks/probe_mixed_holdout.py runs and prints a mean per fraction (docs/defaults.md quotes it)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))


def test_probe_prints_one_line_per_fit_and_a_mean_per_fraction(capsys, monkeypatch):
    import probe_mixed_holdout

    original = probe_mixed_holdout.TabFormerClassifier

    def small(**kwargs):
        return original(max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, **kwargs)

    monkeypatch.setattr(probe_mixed_holdout, "TabFormerClassifier", small)
    probe_mixed_holdout.main(["--datasets", "tweets", "--rows", "80", "--seeds", "0", "--fractions", "0.1,0.3"])
    out = capsys.readouterr().out
    assert out.count("tweets rows=80 seed=0") == 2
    assert "## tweets, 80 rows, validation_fraction=0.3: acc 0." in out and "logloss" in out
