"""Wrapper overhead and FLOP utilisation of TabFormerClassifier on Adult (CPU).

    python benchmarks/bench_adult.py [--epochs 5] [--threads 2]

Prints one table:
- training samples/s of the skorch estimator vs the *same* module (same weights at the
  start, same optimiser, batch size and data tensors) trained by a plain PyTorch loop;
  epochs of the two alternate so that machine noise hits both alike, and medians are
  reported. The ratio is the wrapper overhead (target >= 0.9).
- achieved training FLOP/s (FLOPs of one forward+backward counted by
  torch.utils.flop_counter, times samples/s) as a fraction of this machine's sustained
  fp32 matmul peak (1024x1024 matmuls, best of three 3-second loops, measured by this script).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch
from skorch import NeuralNet
from torch.utils.flop_counter import FlopCounterMode

from splits import adult_split
from tabformer import TabFormerClassifier


def matmul_peak(seconds: float = 3.0, repeats: int = 3, n: int = 1024) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = 0.0
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            torch.mm(a, b)
            count += 1
        best = max(best, 2 * n**3 * count / (time.perf_counter() - start))
    return best


def training_flops_per_sample(module, batch, y, batch_size=256) -> float:
    inputs = {k: torch.as_tensor(v[:batch_size]) for k, v in batch.items()}
    target = torch.as_tensor(y[:batch_size])
    module = copy.deepcopy(module).train()
    with FlopCounterMode(display=False) as counter:
        loss = torch.nn.functional.cross_entropy(module(**inputs), target)
        loss.backward()
    return counter.get_total_flops() / batch_size


def plain_epoch(module, optimizer, tensors, target, batch_size) -> float:
    module.train()
    n = len(target)
    start = time.perf_counter()
    for index in torch.randperm(n).split(batch_size):
        inputs = {k: v[index] for k, v in tensors.items()}
        loss = torch.nn.functional.cross_entropy(module(**inputs), target[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return n / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per contender")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=None, help="override encoder__attention_dropout")
    parser.add_argument("--rows", type=int, default=None, help="train on a slice of this many rows (a smoke run)")
    parser.add_argument("--peak-seconds", type=float, default=3.0, help="length of each matmul-peak loop")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    X_train, _, y_train, _ = adult_split()
    if args.rows:
        X_train, y_train = X_train.iloc[: args.rows], y_train.iloc[: args.rows]
    extra = {} if args.dropout is None else {"encoder__attention_dropout": args.dropout}
    net = TabFormerClassifier(random_state=0, max_epochs=1, validation_fraction=None, verbose=0, ensemble_size=1, **extra)
    net.fit(X_train, y_train)  # fits the tokenizer, builds the module, warms up
    batch = net.tokenize(X_train)
    y = net._encode_target(np.asarray(y_train))
    n = len(y)

    # lr and batch size are "auto" until fit resolves them; the plain loop copies the resolved
    # values and the estimator's AdamW settings, so both contenders do the same work per step.
    batch_size = net.resolved_params_["batch_size"]
    plain_module = copy.deepcopy(net.module_)
    settings = {k: v for k, v in net.optimizer_.param_groups[0].items() if k in ("lr", "betas", "eps", "weight_decay")}
    plain_optimizer = torch.optim.AdamW(plain_module.parameters(), **settings)
    tensors = {k: torch.as_tensor(v) for k, v in batch.items()}
    target = torch.as_tensor(y)

    wrapper, plain = [], []
    for _ in range(args.epochs):
        NeuralNet.partial_fit(net, batch, y)  # one epoch through skorch
        wrapper.append(n / net.history[-1, "dur"])
        plain.append(plain_epoch(plain_module, plain_optimizer, tensors, target, batch_size))

    flops = training_flops_per_sample(net.module_, batch, y, batch_size)
    peak = matmul_peak(seconds=args.peak_seconds)
    rows = [
        ("tabformer estimator (skorch)", statistics.median(wrapper)),
        ("plain PyTorch loop, same module", statistics.median(plain)),
    ]
    print(
        f"\nAdult, {n} training rows, {len(batch['cat_ids'][0]) + len(batch['num_values'][0])} tokens/row, "
        f"d_model={net.module_.encoder.d_model}, {len(net.module_.encoder.layers)} layers, batch {batch_size}, "
        f"{args.threads} threads, median of {args.epochs} alternating epochs"
    )
    print(f"sustained fp32 matmul peak: {peak / 1e9:.0f} GFLOP/s; training cost {flops / 1e6:.2f} MFLOP/sample\n")
    print(f"{'contender':34s} {'samples/s':>10s} {'GFLOP/s':>8s} {'of peak':>8s}")
    for name, rate in rows:
        print(f"{name:34s} {rate:10.0f} {rate * flops / 1e9:8.1f} {rate * flops / peak:8.1%}")
    ratio = rows[0][1] / rows[1][1]
    print(f"\nwrapper overhead ratio (estimator / plain loop): {ratio:.3f}  (target >= 0.9)")
    return ratio


if __name__ == "__main__":
    main()
