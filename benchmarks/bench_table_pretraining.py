"""Masked-cell pretraining on a table: does it help when labels are few? (Adult, 500 labels)

    python benchmarks/bench_table_pretraining.py                  # ~25 min on 1 busy CPU core
    python benchmarks/bench_table_pretraining.py --epochs 5 --labels 200 --seeds 0 1

``TabFormerPretrainer()`` (``objective="auto"``, i.e. ``"masked_cells"`` on a table)
pretrains on every training row of ``adult_split`` without its label. Then, for each
seed, ``--labels`` labelled rows are drawn from the training rows and scored on the
8,141 test rows:

- a linear probe (LogisticRegression on ``transform``, CLS + mean pooling) on the
  pretrained encoder, and on an untrained encoder of the same shape;
- a classifier fine-tuned from the pretrained encoder, and the same classifier
  from scratch (same epochs, batch and lr);
- logistic regression on one-hot + scaled columns and gradient boosting, as references.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from splits import adult_split  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerPretrainer  # noqa: E402

MODEL = dict(encoder__d_model=64, encoder__n_layers=2, encoder__n_heads=4)


def scores(model, X_test, y_test, features=None):
    """Accuracy and ROC AUC of a fitted classifier (on ``features(X_test)`` if given)."""
    X = X_test if features is None else features(X_test)
    proba = model.predict_proba(X)[:, list(model.classes_).index(">50K")]
    return float(model.score(X, y_test)), float(roc_auc_score(y_test == ">50K", proba))


def linear_probe(pre, X_few, y_few, X_test, y_test):
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(pre.transform(X_few), y_few)
    return scores(probe, X_test, y_test, pre.transform)


def references(X_few, y_few, X_test, y_test):
    categorical = list(X_few.select_dtypes(exclude="number").columns)
    numeric = [c for c in X_few.columns if c not in categorical]
    columns = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), categorical),
        (StandardScaler(), numeric),
    )
    logistic = make_pipeline(columns, LogisticRegression(max_iter=2000)).fit(X_few, y_few)
    boosting = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0)
    as_category = {c: "category" for c in categorical}
    boosting.fit(X_few.astype(as_category), y_few)
    return {
        "logistic regression, one-hot": scores(logistic, X_test, y_test),
        "gradient boosting": scores(boosting, X_test.astype(as_category), y_test),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="pretraining epochs")
    parser.add_argument("--labels", type=int, default=500, help="labelled rows per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="label draws")
    parser.add_argument("--finetune-epochs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    X_train, X_test, y_train, y_test = adult_split()
    common = dict(MODEL, batch_size=256, pooling="cls+mean", random_state=0, verbose=0)
    start = time.perf_counter()
    pre = TabFormerPretrainer(max_epochs=args.epochs, lr=1e-3, validation_fraction=None, patience=None, **common)
    pre.fit(X_train)  # no labels
    pretrain_s = time.perf_counter() - start
    loss = pre.history_[:, "train_loss"]
    print(
        f"pretrained ({pre.resolved_params_['objective']}) on {len(X_train)} rows in {pretrain_s:.0f} s, "
        f"loss {loss[0]:.3f} -> {loss[-1]:.3f}",
        flush=True,
    )
    untrained = TabFormerPretrainer(max_epochs=1, lr=0.0, validation_fraction=None, patience=None, **common).fit(X_train)
    results = {}
    for seed in args.seeds:
        few = np.random.default_rng(seed).permutation(len(X_train))[: args.labels]
        X_few, y_few = X_train.iloc[few], y_train.to_numpy()[few]
        fine = dict(
            max_epochs=args.finetune_epochs,
            batch_size=32,
            lr=5e-4,
            validation_fraction=None,
            patience=None,
            random_state=seed,
            verbose=0,
        )
        row = {
            "linear probe, masked-cell encoder": linear_probe(pre, X_few, y_few, X_test, y_test),
            "linear probe, untrained encoder": linear_probe(untrained, X_few, y_few, X_test, y_test),
            "classifier fine-tuned from masked-cell encoder": scores(
                TabFormerClassifier(encoder=pre.encoder_, **fine).fit(X_few, y_few), X_test, y_test
            ),
            "classifier from scratch": scores(TabFormerClassifier(**MODEL, **fine).fit(X_few, y_few), X_test, y_test),
            **references(X_few, y_few, X_test, y_test),
        }
        for name, value in row.items():
            results.setdefault(name, []).append(value)
        print(f"seed {seed}: " + "; ".join(f"{k} {v[0]:.4f}/{v[1]:.4f}" for k, v in row.items()), flush=True)
    print(
        f"\n### Adult, {len(X_test)} test rows, {args.labels} labels (seeds {args.seeds}), "
        f"masked-cell pretraining on {len(X_train)} unlabeled rows, {args.epochs} epochs ({pretrain_s:.0f} s)\n"
    )
    print("| model | accuracy (mean ± sd) | ROC AUC (mean ± sd) |\n|---|---|---|")
    for name, values in results.items():
        values = np.asarray(values)
        print(
            f"| {name} | {values[:, 0].mean():.4f} ± {values[:, 0].std():.4f} "
            f"| {values[:, 1].mean():.4f} ± {values[:, 1].std():.4f} |"
        )
    return results


if __name__ == "__main__":
    main()
