"""Validation probe: ``tokenizer__category_dropout`` on the suite's four tables, read twice.

    python benchmarks/probe_unseen_categories.py [--rates 0,0.1] [--seeds 0,1]

For each table task of ``bench_defaults.py`` (same splits; the test split is never read),
fits the defaults with each dropout rate and training seed, and prints the validation
score twice: on the validation rows as they are, and on the same rows with one
categorical cell per row (a column drawn at random, seed 0) replaced by a value no
training row holds, as a new product code or a new city would arrive in production.
1 torch thread. The figures are in docs/defaults.md ("Tables: categories fit never saw").
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from bench_defaults import _score, three_way
from suites import KIND_TASKS
from tabformer import TabFormerClassifier, TabFormerRegressor

NEW_VALUE = "__a value fit never saw__"


def with_unseen_cells(X: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``X`` with one categorical cell per row replaced by ``NEW_VALUE`` (a copy)."""
    categorical = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or isinstance(X[c].dtype, pd.CategoricalDtype)]
    changed = X.copy()
    which = np.random.default_rng(seed).integers(0, len(categorical), len(X))
    for j, column in enumerate(categorical):
        if isinstance(changed[column].dtype, pd.CategoricalDtype):
            changed[column] = changed[column].cat.add_categories([NEW_VALUE])
        changed.loc[which == j, column] = NEW_VALUE
    return changed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,0.1", help="comma-separated category_dropout rates")
    parser.add_argument("--seeds", default="0,1", help="comma-separated training seeds")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rates = [float(r) for r in args.rates.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for task in KIND_TASKS["table"]:
        X, y = task.load(False)
        X_train, X_valid, _, y_train, y_valid, _ = three_way(X, y, 0, stratify=task.target == "clf")
        unseen = with_unseen_cells(X_valid)
        estimator = TabFormerClassifier if task.target == "clf" else TabFormerRegressor
        for rate in rates:
            for seed in seeds:
                start = time.perf_counter()
                model = estimator(random_state=seed, verbose=0, tokenizer__category_dropout=rate).fit(X_train, y_train)
                row = dict(task=task.name, rate=rate, seed=seed, valid=_score(task, model, X_valid, y_valid))
                row.update(unseen=_score(task, model, unseen, y_valid), fit_s=time.perf_counter() - start)
                print(
                    f"  {task.name:22s} rate {rate:<5} seed {seed}: valid {row['valid']:.4f}, one cell unseen {row['unseen']:.4f}"
                )
                rows.append(row)
    table = pd.DataFrame(rows).groupby(["task", "rate"], sort=False)[["valid", "unseen"]].agg(["mean", "std"])
    print(table.round(4).to_string())
    return table


if __name__ == "__main__":
    main()
