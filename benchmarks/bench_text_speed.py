"""Training speed on real text: length-grouped batches vs random batches vs a plain loop.

    python benchmarks/bench_text_speed.py                    # MiniLM, 640 RT snippets, 3 repeats
    python benchmarks/bench_text_speed.py --model scratch --rows 4000

One epoch of ``TabFormerClassifier.fit`` on Rotten Tomatoes snippets, with random
batches and with ``iterator_train__group_by_length=True``, against a plain PyTorch loop
over the same module and the same token arrays (random batches, each cut to its longest
row, which is what the embedder does). The modes alternate within each repeat, so
machine noise hits them alike; the table gives medians and ratios. The padding column
is the share of token positions in a training batch that are padding.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_text import SCRATCH, _minilm, _subset  # noqa: E402
from splits import rotten_tomatoes_split  # noqa: E402


def _estimator(args, grouped):
    from tabformer import TabFormerClassifier

    if args.model == "minilm":
        from tabformer.hub import load_bert

        params = dict(encoder=load_bert(_minilm(), max_length=64), lr=5e-5)
    else:
        params = dict(SCRATCH, lr=1e-3)
    return TabFormerClassifier(
        **params,
        batch_size=args.batch_size,
        max_epochs=1,
        validation_fraction=None,
        lr_schedule=None,
        random_state=0,
        verbose=0,
        iterator_train__group_by_length=grouped,
    )


def _padding_share(net, X, y):
    """Share of padded positions over one epoch's training batches (no training)."""
    dataset = net.get_dataset(net.tokenize(X), net.label_encoder_.transform(y))
    padded = total = 0
    for batch, _ in net.get_iterator(dataset, training=True):
        mask = batch["attention_mask"]
        width = int(mask.sum(1).max())
        padded += mask.shape[0] * width - int(mask.sum())
        total += mask.shape[0] * width
    return padded / total


def _plain_loop(net, X, y, batch_size):
    """The fitted net's module, trained one epoch by hand: the floor for overhead."""
    batch = {k: torch.as_tensor(v) for k, v in net.tokenize(X).items()}
    target = torch.as_tensor(net.label_encoder_.transform(y))
    module = net.module_
    module.train()
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-5)
    start = time.perf_counter()
    for index in torch.randperm(len(target)).split(batch_size):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(module(**{k: v[index] for k, v in batch.items()}), target[index])
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["minilm", "scratch"], default="minilm")
    parser.add_argument("--rows", type=int, default=640)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    X_train, _, y_train, _ = rotten_tomatoes_split()
    X, y = _subset(X_train, y_train, args.rows, seed=0)

    times = {"random batches": [], "grouped by length": [], "plain PyTorch loop": []}
    padding = {}
    for _ in range(args.repeats):
        for grouped, name in ((False, "random batches"), (True, "grouped by length")):
            net = _estimator(args, grouped)
            start = time.perf_counter()
            net.fit(X, y)
            times[name].append(time.perf_counter() - start)
            padding.setdefault(name, _padding_share(net, X, y))
        times["plain PyTorch loop"].append(_plain_loop(net, X, y, args.batch_size))

    base = np.median(times["random batches"])
    rows = [
        {
            "mode": name,
            "median s/epoch": round(float(np.median(t)), 2),
            "samples/s": round(len(X) / float(np.median(t)), 1),
            "time vs random batches": round(float(np.median(t)) / base, 3),
            "padding share": "" if name not in padding else round(padding[name], 3),
        }
        for name, t in times.items()
    ]
    print(f"{args.model}, {len(X)} RT snippets, batch {args.batch_size}, {args.threads} thread(s), {args.repeats} repeats")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
