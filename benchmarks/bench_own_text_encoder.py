"""Fine-tuning recipes for a text encoder pretrained by tabformer (masked tokens), on validation splits.

A ``TabFormerPretrainer(objective="mlm")`` encoder is pretrained once on the task's unlabelled
texts (every text but the validation rows), then 500 labelled texts fine-tune a classifier
under each recipe; accuracy is read on the validation rows (no test split is read). The
defaults row is what ``TabFormerClassifier(encoder=pre.encoder_)`` resolves to.

    python benchmarks/bench_own_text_encoder.py --dataset rt --mlm-epochs 10
    python benchmarks/bench_own_text_encoder.py --dataset fortunes --mlm-epochs 8

Rotten Tomatoes: 2,000 validation rows out of the benchmark's training split (its test split is
not read), MLM on the other 8,246. Fortunes: the 4-topic task of ``suites.py``, 1,000
validation rows, MLM on every fortune file but those rows. One torch thread.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from bench_text import SCRATCH
from splits import rotten_tomatoes_split

FORTUNES = "/usr/share/games/fortunes"
VARIANTS = {
    "defaults": {},
    "BERT's recipe (the defaults before)": dict(lr=5e-5, max_epochs=10, patience=2, head__dropout=0.0),
    "BERT's recipe at lr 3e-4": dict(lr=3e-4),
    "lr 5e-4, 15 epochs, no holdout, head dropout 0.1": dict(lr=5e-4, max_epochs=15, validation_fraction=None, head__dropout=0.1),
    "the from-scratch recipe's training": dict(
        lr=3e-4,
        lr_schedule="warmup_linear",
        max_epochs=15,
        validation_fraction=None,
        batch_size=64,
        head__dropout=0.3,
        optimizer__weight_decay=0.05,
    ),
}


def _entries(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return [entry.strip() for entry in handle.read().split("\n%\n") if entry.strip()]


def load(dataset):
    """(labelled pool texts, pool labels, validation texts, validation labels, MLM corpus)."""
    if dataset == "rt":
        X_train, _, y_train, _ = rotten_tomatoes_split()  # the test split is never read
        X_pool, X_val, y_pool, y_val = train_test_split(X_train, y_train, test_size=2000, random_state=0, stratify=y_train)
        return X_pool, y_pool, X_val, y_val, list(X_pool)
    texts, topics = [], []
    for topic in ("people", "definitions", "cookie", "computers"):
        entries = _entries(os.path.join(FORTUNES, topic))
        texts, topics = texts + entries, topics + [topic] * len(entries)
    texts, topics = np.asarray(texts, dtype=object), np.asarray(topics)
    X_pool, X_val, y_pool, y_val = train_test_split(texts, topics, test_size=1000, random_state=0, stratify=topics)
    held = set(X_val)
    files = [f for f in sorted(glob.glob(f"{FORTUNES}/*")) if os.path.isfile(f) and "." not in os.path.basename(f)]
    corpus = [text for path in files for text in _entries(path) if text not in held]
    return X_pool, y_pool, X_val, y_val, corpus


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=["rt", "fortunes"], default="rt")
    parser.add_argument("--mlm-epochs", type=int, default=10)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--encoder", default=None, help="reuse (or write) the pretrained encoder in this folder")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 300 texts pretrain, 100 labels, 200 validation rows")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerPretrainer

    X_pool, y_pool, X_val, y_val, corpus = load(args.dataset)
    labels = 500
    if args.quick:
        X_val, y_val, corpus, labels = X_val[:200], y_val[:200], corpus[:300], 100
    folder = args.encoder or f"/tmp/own_text_encoder_{args.dataset}_{args.mlm_epochs}"
    if not os.path.exists(folder):
        start = time.time()
        params = {key: value for key, value in SCRATCH.items() if not key.startswith("head__")}
        pre = TabFormerPretrainer(
            objective="mlm", lr=1e-3, batch_size=64, max_epochs=args.mlm_epochs, patience=None, random_state=0, **params
        )
        pre.fit(corpus).encoder_.save(folder)
        print(f"MLM on {len(corpus)} texts, {args.mlm_epochs} epochs: {time.time() - start:.0f} s", flush=True)
    encoder = PretrainedEncoder.load(folder)
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        X_lab, _, y_lab, _ = train_test_split(X_pool, y_pool, train_size=labels, random_state=seed, stratify=y_pool)
        for name, settings in {**VARIANTS, "no pretraining (tokenizer='wordpiece')": None}.items():
            start = time.time()
            if settings is None:
                clf = TabFormerClassifier(tokenizer="wordpiece", random_state=seed, verbose=0)
            else:
                clf = TabFormerClassifier(encoder=encoder, random_state=seed, verbose=0, **settings)
            accuracy = float(np.mean(clf.fit(list(X_lab), y_lab).predict(list(X_val)) == y_val))
            rows.append(dict(seed=seed, variant=name, valid_acc=round(accuracy, 4), fit_s=round(time.time() - start)))
            print(json.dumps(rows[-1]), flush=True)
    seeds = args.seeds.split(",")
    print(f"\n{args.dataset}, {labels} labels, validation accuracy")
    print("| recipe | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |")
    print("|---|" + "---|" * len(seeds) + "---|")
    for name in dict.fromkeys(row["variant"] for row in rows):
        values = [row["valid_acc"] for row in rows if row["variant"] == name]
        print(f"| {name} | " + " | ".join(f"{v:.4f}" for v in values) + f" | {np.mean(values):.4f} |")


if __name__ == "__main__":
    main()
