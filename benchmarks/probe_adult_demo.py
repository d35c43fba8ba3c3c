"""Validation probe on the demo's own Adult rows: table-recipe candidates at 19,536 training rows.

    python benchmarks/probe_adult_demo.py [--seeds 0,1,2] [--variant "name:key=value,..."]

The suite in ``bench_defaults.py`` slices Adult to 8,000 rows; ``make demo`` trains on
24,420. This probe splits only the demo's **training** rows 80/20 (stratified, one split
per seed; the demo's test rows are never read), fits the defaults, each ``--variant`` and
gradient boosting on the 80%, and prints validation accuracy as mean ± std over the seeds
(the seed also seeds the model), with the median fit time. 1 torch thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import pandas as pd
import torch
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

from bench_defaults import parse_variant
from splits import adult_split
from tabformer import TabFormerClassifier

# The demo's own gradient-boosting pipeline (native categories), so this probe's baseline is
# the one `make demo` prints.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from adult_demo import baselines  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated split and model seeds")
    parser.add_argument("--variant", action="append", default=[], help='"name:key=value,..." (repeatable)')
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    X_demo_train, _, y_demo_train, _ = adult_split()
    candidates = [("defaults", {})] + [parse_variant(text) for text in args.variant]
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        X_train, X_valid, y_train, y_valid = train_test_split(
            X_demo_train, y_demo_train, test_size=0.2, stratify=y_demo_train, random_state=seed
        )
        start = time.perf_counter()
        predicted = baselines()["HistGradientBoosting"].fit(X_train, y_train).predict(X_valid)
        rows.append(
            dict(
                model="HistGradientBoosting",
                seed=seed,
                valid=accuracy_score(y_valid, predicted),
                fit_s=time.perf_counter() - start,
            )
        )
        for name, params in candidates:
            start = time.perf_counter()
            model = TabFormerClassifier(random_state=seed, verbose=0, **params).fit(X_train, y_train)
            seconds = time.perf_counter() - start
            rows.append(
                dict(model=f"tabformer {name}", seed=seed, valid=accuracy_score(y_valid, model.predict(X_valid)), fit_s=seconds)
            )
            print(
                f"  seed {seed} {name:20s} valid {rows[-1]['valid']:.4f} ({seconds:.0f}s, {len(model.history)} epochs)",
                flush=True,
            )
    frame = pd.DataFrame(rows)
    table = frame.groupby("model", sort=False).agg(
        valid_mean=("valid", "mean"), valid_std=("valid", "std"), seeds=("seed", "count"), fit_s=("fit_s", "median")
    )
    print(table.to_string(float_format="{:.4f}".format))
    return table


if __name__ == "__main__":
    main()
