"""Multi-label benchmark: which attributes an emoji picture shows, read off its Unicode name.

One command, prints a table:

    python benchmarks/bench_multilabel.py             # 16 px, 30 epochs: a few minutes on 2 busy cores
    python benchmarks/bench_multilabel.py --size 32 --epochs 40

Task. Each of the 3,655 Noto colour emoji (16 px by default, :func:`tabformer.datasets.load_emoji`)
gets the labels its CLDR name spells out: the five skin tones (``light``,
``medium-light``, ``medium``, ``medium-dark``, ``dark``), ``man``, ``woman``, ``person``,
``hand``, ``heart``, ``face`` and ``flag``. Only the picture is the input. Why this task:
the labels are real (Unicode's own names, no annotation of ours), several apply at once
(a kiss of two people carries two skin tones and two genders; 1,793 emoji carry a tone,
260 carry two), they are visible in the picture, and they ask for both colour (tones) and
shape (hands, faces, flags), so pixels alone are a fair but beatable baseline. The
fortunes' topics were the other candidate; each fortune sits in one topic file, so that
task is multiclass, not multi-label.

Split: the fixed emoji split of ``benchmarks/splits.py`` (2,741 train / 914 test,
stratified on the group; the same rows at any ``--size``). Torch runs on one thread: on a
shared 2-core machine that is faster than two contending ones. Baseline: one-vs-rest logistic regression on standardised
pixels. Metrics: micro and macro F1, subset accuracy (every label right) and Hamming loss.
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, hamming_loss
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from tabformer import TabFormerClassifier
from tabformer.datasets import load_emoji

TONES = ["light", "medium-light", "medium", "medium-dark", "dark"]
WORDS = ["man", "woman", "person", "hand", "heart", "face", "flag"]
LABELS = [f"{tone} skin tone" for tone in TONES] + WORDS


def name_labels(names) -> np.ndarray:
    """The 0/1 indicator matrix (n, 12) of ``LABELS`` found in each CLDR name."""
    patterns = [re.compile(rf"(?<![\w-]){re.escape(tone)} skin tone") for tone in TONES]
    patterns += [re.compile(r"\bhands?\b" if word == "hand" else rf"\b{word}\b") for word in WORDS]
    return np.array([[bool(p.search(name)) for p in patterns] for name in names], dtype=np.int64)


def images(X) -> np.ndarray:
    return np.stack(X["image"].to_list())


def scores(Y_true, Y_pred) -> dict:
    return {
        "micro F1": f1_score(Y_true, Y_pred, average="micro"),
        "macro F1": f1_score(Y_true, Y_pred, average="macro", zero_division=0),
        "subset acc": accuracy_score(Y_true, Y_pred),
        "Hamming loss": hamming_loss(Y_true, Y_pred),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30, help="max_epochs of the transformer (default: 30)")
    parser.add_argument("--size", type=int, default=16, help="image side in pixels (default: 16)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    X, groups = load_emoji(size=args.size)
    # the split of benchmarks/splits.py's emoji_split, at any image size
    X_train, X_test = train_test_split(X, test_size=0.25, stratify=groups, random_state=0)
    Y_train, Y_test = name_labels(X_train["name"]), name_labels(X_test["name"])
    I_train, I_test = images(X_train), images(X_test)
    print(
        f"emoji: {len(Y_train)} train / {len(Y_test)} test pictures, {len(LABELS)} labels, "
        f"{Y_train.sum(1).mean():.2f} labels per picture, {np.mean(Y_train.sum(1) > 1):.0%} with several"
    )

    rows = {}
    start = time.perf_counter()
    flatten = FunctionTransformer(lambda x: x.reshape(len(x), -1).astype(np.float32) / 255)
    baseline = make_pipeline(flatten, StandardScaler(), OneVsRestClassifier(LogisticRegression(C=0.05, max_iter=500)))
    rows["one-vs-rest logistic regression, pixels"] = (
        scores(Y_test, baseline.fit(I_train, Y_train).predict(I_test)),
        time.perf_counter() - start,
    )

    start = time.perf_counter()
    clf = TabFormerClassifier(
        max_epochs=args.epochs, random_state=args.seed, verbose=0, encoder__d_model=64, encoder__n_layers=2
    ).fit(I_train, Y_train)
    rows[f"TabFormerClassifier (d_model 64, 2 layers, {len(clf.history_)} epochs)"] = (
        scores(Y_test, clf.predict(I_test)),
        time.perf_counter() - start,
    )

    metrics = list(next(iter(rows.values()))[0])
    width = max(map(len, rows))
    print(f"{'model':<{width}}  " + "  ".join(f"{m:>12}" for m in metrics) + f"  {'fit+predict s':>13}")
    for name, (row, seconds) in rows.items():
        print(f"{name:<{width}}  " + "  ".join(f"{row[m]:>12.3f}" for m in metrics) + f"  {seconds:>13.0f}")
    per_label = f1_score(Y_test, clf.predict(I_test), average=None, zero_division=0)
    print("per-label F1 (TabFormer): " + ", ".join(f"{label} {value:.2f}" for label, value in zip(LABELS, per_label)))


if __name__ == "__main__":
    main()
