"""benchmarks/bench_small_tables.py: its splits keep the validation part fixed, and one cell runs end to end."""

import numpy as np

from bench_small_tables import main, splits, subsample


def test_the_validation_part_is_fixed_and_the_training_rows_come_from_the_pool():
    X_pool, X_valid, y_pool, y_valid, classifier = splits("adult")
    again = splits("adult")
    assert classifier and len(X_valid) == 2000 and X_valid.equals(again[1])
    X, y = subsample(X_pool, y_pool, 300, seed=0, classifier=True)
    assert len(X) == 300 and abs(float(np.mean(y == ">50K")) - float(np.mean(y_pool == ">50K"))) < 0.01  # stratified


def test_one_cell_prints_its_table(capsys):
    main(["--tables", "adult", "--sizes", "100", "--seeds", "0", "--variant", "vf0.1:validation_fraction=0.1"])
    out = capsys.readouterr().out
    assert "## acc" in out and "## logloss" in out and "vf0.1" in out and "HGB" in out
