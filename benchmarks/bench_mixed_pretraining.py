"""Self-supervised pretraining on unlabeled mixed rows (emoji image + name), then probes.

    python benchmarks/bench_mixed_pretraining.py            # ~10 min on 2 CPU cores
    python benchmarks/bench_mixed_pretraining.py --epochs 5 --labels 300

The pretrainers see the training rows of ``emoji_split`` without their groups:
``objective="simclr"`` (two views per row: image augmentations, text cropping and
masking) and ``objective="mlm"`` (masked name sub-words). A linear probe
(LogisticRegression on ``transform``, CLS + mean pooling) is then trained on
``--labels`` labelled rows and scored on the test rows, next to the same probe on an
untrained encoder of the same architecture, and a classifier trained from scratch vs
fine-tuned from the SimCLR encoder on those few labels.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from splits import emoji_split  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerPretrainer  # noqa: E402

MODEL = dict(
    encoder__d_model=64,
    encoder__n_layers=2,
    encoder__n_heads=4,
    tokenizer__image__patch_size=16,
    tokenizer__text__vocab_size=1500,
    tokenizer__text__max_length=24,
)


def probe(pre, X_few, y_few, X_test, y_test):
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(pre.transform(X_few), y_few)
    return float(model.score(pre.transform(X_test), y_test))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30, help="pretraining epochs")
    parser.add_argument("--labels", type=int, default=500, help="labelled rows for the probes and fine-tuning")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    X_train, X_test, y_train, y_test = emoji_split()
    few = np.random.default_rng(args.seed).permutation(len(X_train))[: args.labels]
    X_few, y_few = X_train.iloc[few], y_train.to_numpy()[few]
    common = dict(
        MODEL, batch_size=256, validation_fraction=None, patience=None, pooling="cls+mean", random_state=args.seed, verbose=0
    )
    rows = []
    encoders = {}
    for objective in ("simclr", "mlm"):
        start = time.perf_counter()
        pre = TabFormerPretrainer(objective=objective, max_epochs=args.epochs, lr=1e-3, **common).fit(X_train)  # no labels
        seconds = time.perf_counter() - start
        encoders[objective] = pre.encoder_
        loss = pre.history_[:, "train_loss"]
        rows.append(
            (
                f"linear probe on {objective} encoder",
                probe(pre, X_few, y_few, X_test, y_test),
                f"pretrain {seconds:.0f} s, loss {loss[0]:.2f} -> {loss[-1]:.2f}",
            )
        )
        print(rows[-1], flush=True)
    untrained = TabFormerPretrainer(objective="mlm", max_epochs=1, lr=0.0, **common).fit(X_train)  # lr 0: weights stay random
    rows.append(("linear probe on untrained encoder", probe(untrained, X_few, y_few, X_test, y_test), "same architecture"))
    fine = dict(max_epochs=40, batch_size=32, validation_fraction=None, random_state=args.seed, verbose=0)
    scratch = TabFormerClassifier(**MODEL, **fine).fit(X_few, y_few)
    rows.append((f"classifier from scratch, {args.labels} labels", float(scratch.score(X_test, y_test)), "40 epochs"))
    tuned = TabFormerClassifier(encoder=encoders["simclr"], lr=5e-4, **fine).fit(X_few, y_few)
    rows.append(
        (f"classifier fine-tuned from simclr, {args.labels} labels", float(tuned.score(X_test, y_test)), "40 epochs, lr 5e-4")
    )
    print(f"\n### Emoji group, {len(X_test)} test rows, {args.labels} labels, pretraining on {len(X_train)} unlabeled rows\n")
    print("| model | test accuracy | notes |\n|---|---|---|")
    for name, accuracy, note in rows:
        print(f"| {name} | {accuracy:.4f} | {note} |")
    return rows


if __name__ == "__main__":
    main()
