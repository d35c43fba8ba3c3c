"""Mixed frames (text + table) at a few hundred to a few thousand training rows: the early-stopping holdout.

    python benchmarks/probe_mixed_holdout.py                                   # tweets and bird strikes, 1,000 rows, seeds 0-4
    python benchmarks/probe_mixed_holdout.py --datasets tweets --rows 500 --fractions 0.1,0.2,0.3

Tables under 3,000 rows hold out 300 rows for early stopping (docs/defaults.md, "Tables of 100
to 2,000 rows"); this asks whether a mixed frame's recipe wants the same. Validation only:
``bench_fusion.validation_split`` (25% of the training split held out, the test split never
read); the training rows are a seeded subsample of the rest, the seed also the estimator's
``random_state``. Prints one line per fit and a mean per dataset and fraction.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.metrics import accuracy_score, log_loss, r2_score

sys.path.insert(0, os.path.dirname(__file__))

import bench_fusion  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerRegressor  # noqa: E402


def fit_once(name: str, n_rows: int, seed: int, fraction: float) -> dict:
    """One fit at ``validation_fraction=fraction`` on ``n_rows`` seeded training rows; its validation scores."""
    load, task, _ = bench_fusion.DATASETS[name]
    X_train, _, y_train, _ = load()
    X_fit, X_valid, y_fit, y_valid = bench_fusion.validation_split(name, X_train, y_train)
    take = np.random.default_rng(seed).choice(len(X_fit), n_rows, replace=False)
    X, y = X_fit.iloc[take], np.asarray(y_fit)[take]
    estimator = (TabFormerClassifier if task == "clf" else TabFormerRegressor)(
        random_state=seed, verbose=0, validation_fraction=fraction
    )
    start = time.perf_counter()
    estimator.fit(X, y)
    out = {"fit_s": time.perf_counter() - start, "epochs": len(estimator.history_)}
    if task == "clf":
        proba = estimator.predict_proba(X_valid)
        out["acc"] = accuracy_score(y_valid, estimator.classes_[proba.argmax(1)])
        out["logloss"] = log_loss(y_valid, proba, labels=estimator.classes_)
    else:
        out["r2"] = r2_score(y_valid, estimator.predict(X_valid))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="tweets,birds", help="bench_fusion datasets, comma-separated")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--fractions", default="0.1,0.3")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    fractions = [float(f) for f in args.fractions.split(",")]
    for name in args.datasets.split(","):
        scores = {f: [] for f in fractions}
        for seed in (int(s) for s in args.seeds.split(",")):
            for fraction in fractions:
                result = fit_once(name, args.rows, seed, fraction)
                scores[fraction].append(result)
                shown = " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items())
                print(f"{name} rows={args.rows} seed={seed} validation_fraction={fraction} {shown}", flush=True)
        for fraction, results in scores.items():
            metrics = [k for k in results[0] if k not in ("fit_s", "epochs")]
            means = " ".join(f"{k} {np.mean([r[k] for r in results]):.4f}" for k in metrics)
            print(f"## {name}, {args.rows} rows, validation_fraction={fraction}: {means} ({len(results)} seeds)")


if __name__ == "__main__":
    main()
