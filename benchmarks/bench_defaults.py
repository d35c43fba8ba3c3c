"""Defaults vs tuned recipes vs classic baselines, per input kind, on real offline data.

    python benchmarks/bench_defaults.py                        # every kind
    python benchmarks/bench_defaults.py --kinds table,image    # a subset
    python benchmarks/bench_defaults.py --quick                # smaller slices, for a smoke run

Every task has a fixed train / validation / test split (seed 0). "defaults" is the
tabformer estimator with no setting but ``random_state`` (and ``encoder=`` for the
pretrained kinds): what a new user gets. "tuned" is the recipe a benchmark of this repo
chose for that kind (docs/), trained the same way. Baselines are what a scikit-learn user
would try first. Recipes are chosen on the validation column, never on the test column;
both are printed. One table per kind, then a summary of the targets of docs/defaults.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.dirname(__file__))

from suites import KIND_TASKS, Task  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerRegressor, TabFormerTagger  # noqa: E402


def three_way(X, y, seed, stratify=True, valid=0.15, test=0.25):
    """Train / validation / test, the same for every model of a task."""
    strat = y if stratify else None
    X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=test, random_state=seed, stratify=strat)
    strat = y_rest if stratify else None
    X_train, X_valid, y_train, y_valid = train_test_split(
        X_rest, y_rest, test_size=valid / (1 - test), random_state=seed, stratify=strat
    )
    return X_train, X_valid, X_test, y_train, y_valid, y_test


def _score(task: Task, model, X, y) -> float:
    if task.metric == "f1":
        return float(model.score(X, y))
    predicted = model.predict(X)
    return float(r2_score(y, predicted) if task.metric == "r2" else accuracy_score(y, predicted))


def _estimator(task: Task, **params):
    cls = {"clf": TabFormerClassifier, "reg": TabFormerRegressor, "tag": TabFormerTagger}[task.target]
    return cls(verbose=0, **params)


def parse_variant(text: str) -> tuple[str, dict]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})``; values read as JSON where they parse."""
    name, _, settings = text.partition(":")
    params = {}
    for item in filter(None, re.split(r",(?![^\[]*\])", settings)):  # commas inside [..] belong to a list
        key, _, value = item.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return name, params


def run_task(task: Task, seed: int, quick: bool, variants=(), train_seeds=None) -> list[dict]:
    X, y = task.load(quick)
    splits = three_way(X, y, seed, stratify=task.target == "clf")
    X_train, X_valid, X_test, y_train, y_valid, y_test = splits
    rows = []

    def record(name, model, fit):
        start = time.time()
        fit(model)
        rows.append(
            dict(
                task=task.name,
                model=name,
                valid=_score(task, model, X_valid, y_valid),
                test=_score(task, model, X_test, y_test),
                fit_s=time.time() - start,
                n_train=len(y_train),
            )
        )
        print(
            f"  {task.name:22s} {name:28s} valid {rows[-1]['valid']:.4f} test {rows[-1]['test']:.4f} ({rows[-1]['fit_s']:.0f}s)",
            flush=True,
        )

    extra = task.estimator_params() if task.estimator_params else {}
    for train_seed in train_seeds or [seed]:
        suffix = "" if train_seeds is None else f" (seed {train_seed})"
        record(
            f"tabformer defaults{suffix}", _estimator(task, random_state=train_seed, **extra), lambda m: m.fit(X_train, y_train)
        )
        for name, params in variants:
            model = _estimator(task, random_state=train_seed, **extra, **params)
            record(f"tabformer {name}{suffix}", model, lambda m: m.fit(X_train, y_train))
    if train_seeds is not None:  # a validation probe: the variants only
        return rows
    if task.tuned is not None:
        record(
            "tabformer tuned recipe",
            _estimator(task, random_state=seed, **extra, **task.tuned),
            lambda m: m.fit(X_train, y_train),
        )
    for name, make in task.baselines.items():
        record(name, make(), lambda m: m.fit(X_train, y_train))
    return rows


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per task: defaults' test score against the best baseline and the tuned recipe."""
    out = []
    for task, rows in frame.groupby("task", sort=False):
        by = rows.set_index("model")["test"]
        defaults = by["tabformer defaults"]
        baselines = by.drop([m for m in by.index if m.startswith("tabformer")], errors="ignore")
        out.append(
            dict(
                task=task,
                defaults=defaults,
                tuned=by.get("tabformer tuned recipe", np.nan),
                best_baseline=baselines.max() if len(baselines) else np.nan,
                baseline=baselines.idxmax() if len(baselines) else "",
                gap_to_baseline=defaults - (baselines.max() if len(baselines) else np.nan),
                gap_to_tuned=defaults - by.get("tabformer tuned recipe", np.nan),
            )
        )
    return pd.DataFrame(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KIND_TASKS), help=f"comma-separated, of {list(KIND_TASKS)}")
    parser.add_argument("--tasks", default=None, help="comma-separated task names (default: all of the kinds)")
    parser.add_argument("--quick", action="store_true", help="small slices: a smoke run, not a measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None, help="also write every row to this CSV")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="an extra tabformer row, 'name:key=value,...' (repeatable), e.g. 'freq0.3:tokenizer__frequency_scale=0.3'",
    )
    parser.add_argument(
        "--train-seeds",
        default=None,
        help="comma-separated training seeds for the tabformer rows (split stays --seed); skips baselines",
    )
    args = parser.parse_args(argv)
    variants = [parse_variant(text) for text in args.variant]
    train_seeds = None if args.train_seeds is None else [int(s) for s in args.train_seeds.split(",")]
    torch.set_num_threads(args.threads)
    rows = []
    for kind in args.kinds.split(","):
        print(f"\n## {kind}", flush=True)
        for task in KIND_TASKS[kind]:
            if args.tasks and task.name not in args.tasks.split(","):
                continue
            try:
                found = run_task(task, args.seed, args.quick, variants, train_seeds)
                rows += [dict(row, kind=kind) for row in found]
            except ImportError as error:  # a data package is missing: say so, go on
                print(f"  {task.name}: skipped ({error})", flush=True)
    frame = pd.DataFrame(rows)
    if args.out:
        frame.to_csv(args.out, index=False)
    for kind, part in frame.groupby("kind", sort=False):
        print(f"\n### {kind}\n")
        print(part.drop(columns="kind").to_string(index=False, float_format="{:.4f}".format))
        print()
        if train_seeds is None:
            print(summarise(part).to_string(index=False, float_format="{:.4f}".format))
        else:  # the probe's answer: validation mean and std over the training seeds
            setting = part["model"].str.replace(r" \(seed \d+\)$", "", regex=True)
            print(
                part.groupby(["task", setting], sort=False)["valid"]
                .agg(["mean", "std", "count"])
                .to_string(float_format="{:.4f}".format)
            )
    return frame


if __name__ == "__main__":
    main()
