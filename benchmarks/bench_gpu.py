"""Training throughput of the estimators against a plain PyTorch loop of the same module.

For a text model of MiniLM's shape (6 layers, d=384, batch 256 x 128 tokens), a ViT and
a table model of the defaults' size, it prints samples/s of ``partial_fit`` (skorch's
loop, the estimator's ``precision``) and of a hand-written loop training a copy of the
same module (AdamW as PyTorch defaults it, the same autocast; on a GPU also with
``fused=True``, which the estimator uses there), their ratio, and the achieved TFLOP/s: the
module's FLOPs per training step, counted by ``torch.utils.flop_counter`` (forward and
backward), over the measured time, also as a share of a measured dense matmul peak.
Rounds are interleaved (estimator, loop, estimator, ...) and medians reported.

    python benchmarks/bench_gpu.py                      # on CUDA when present, bf16
    python benchmarks/bench_gpu.py --device cpu --precision fp32 --scale 0.05
    python benchmarks/bench_gpu.py --compile            # every path torch.compile'd
    python benchmarks/bench_gpu.py --compile-mode reduce-overhead  # compiled with CUDA graphs
    python benchmarks/bench_gpu.py --epochs 5           # 5 epochs per partial_fit and per loop round

Synthetic inputs: throughput does not depend on the values, and MiniLM's weights are
not needed to time its shape.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from tabformer import TabFormerClassifier

WORDS = [f"w{i}" for i in range(2000)]


def text_workload(rows, rng):
    texts = [" ".join(rng.choice(WORDS, 160)) for _ in range(rows)]
    params = dict(
        tokenizer="wordpiece",
        tokenizer__vocab_size=4000,
        tokenizer__max_length=128,
        encoder__d_model=384,
        encoder__n_heads=12,
        encoder__n_layers=6,
        encoder__d_ff=1536,
        # MiniLM's own config (hidden and attention dropout 0.1, no word dropout), not the
        # from-scratch recipe's heavier regularisation: this row stands for its fine-tuning
        encoder__dropout=0.1,
        encoder__attention_dropout=0.1,
        tokenizer__token_dropout=0.0,
        head__dropout=0.1,
        batch_size=256,
    )
    return "text, MiniLM shape (6x384, 128 tok)", texts, params


def image_workload(rows, rng):
    images = rng.integers(0, 256, size=(rows, 64, 64, 3), dtype=np.uint8)
    params = dict(
        tokenizer="patch",
        tokenizer__patch_size=8,
        encoder__d_model=384,
        encoder__n_heads=6,
        encoder__n_layers=6,
        encoder__norm_first=True,
        batch_size=256,
    )
    return "ViT (6x384, 64 patches of 8x8)", images, params


def table_workload(rows, rng):
    frame = pd.DataFrame({f"num{i}": rng.normal(size=rows) for i in range(6)})
    for i in range(8):
        frame[f"cat{i}"] = rng.choice([f"c{j}" for j in range(12)], rows)
    params = dict(encoder__d_model=64, encoder__n_heads=8, encoder__n_layers=3, batch_size=256)
    return "table (3x64, 14 columns)", frame, params


def plain_epoch(module, optimizer, tokens, y, batch_size, device, autocast, generator):
    """One epoch of the loop a PyTorch user would write around the same module."""
    module.train()
    order = torch.randperm(len(y), generator=generator)
    for start in range(0, len(y) - batch_size + 1, batch_size):
        index = order[start : start + batch_size]
        inputs = {key: _pinned(value[index], device).to(device, non_blocking=True) for key, value in tokens.items()}
        target = _pinned(y[index], device).to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = torch.nn.functional.cross_entropy(module(**inputs), target)
        loss.backward()
        optimizer.step()


def _pinned(tensor, device):
    # What DataLoader(pin_memory=True) does: a copy from pageable memory does not run asynchronously.
    return tensor.pin_memory() if torch.device(device).type == "cuda" else tensor


def step_flops(module, tokens, y, batch_size, device, autocast):
    inputs = {key: value[:batch_size].to(device) for key, value in tokens.items()}
    with FlopCounterMode(display=False) as counter:
        with autocast():
            loss = torch.nn.functional.cross_entropy(module(**inputs), y[:batch_size].to(device))
        loss.backward()
    module.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def matmul_peak(device, dtype, size):
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    start, runs = time.perf_counter(), 10
    for _ in range(runs):
        a @ b
    sync(device)
    return 2 * size**3 * runs / (time.perf_counter() - start)


def sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def run(workload, args, rng):
    name, X, params = workload(args.rows, rng)
    y = rng.integers(0, 2, size=len(X))
    clf = TabFormerClassifier(
        ensemble_size=1,  # one model, as the plain loop trains
        device=args.device,
        precision=args.precision,
        max_epochs=args.epochs,
        lr=1e-4,
        lr_schedule=None,
        patience=None,
        validation_fraction=None,
        compile=args.compile,
        **({"compile__mode": args.compile_mode} if args.compile_mode else {}),
        iterator_train__drop_last=True,
        verbose=0,
        random_state=0,
        **params,
    )
    first = slice(0, min(len(X), 512))
    clf.fit(X.iloc[first] if hasattr(X, "iloc") else X[first], y[first])
    tokens = {key: torch.as_tensor(value) for key, value in clf.tokenize(X).items()}
    target = torch.as_tensor(y)
    loops = {"plain loop": {}}
    if torch.device(args.device).type == "cuda":
        # The estimator steps Adam(W) fused on a GPU; this row separates that from the loop's own cost.
        loops["plain loop, fused AdamW"] = {"fused": True}
    modules, optimizers = {}, {}
    for who, options in loops.items():
        modules[who] = copy.deepcopy(clf.module_)
        optimizers[who] = torch.optim.AdamW(modules[who].parameters(), lr=1e-4, **options)
        if args.compile:
            modules[who] = torch.compile(modules[who], mode=args.compile_mode)
    generator = torch.Generator().manual_seed(0)
    batch_size = params["batch_size"]
    flops = step_flops(copy.deepcopy(clf.module_), tokens, target, batch_size, args.device, clf.autocast)
    steps = len(y) // batch_size * args.epochs
    times = {"estimator": [], **{who: [] for who in loops}}
    for round_ in range(args.rounds + 1):  # the first round warms up (allocator, kernels, compile)
        elapsed = {"estimator": timed(lambda: clf.partial_fit({k: v.numpy() for k, v in tokens.items()}, y), args.device)}
        for who in loops:
            elapsed[who] = timed(
                lambda who=who: [
                    plain_epoch(modules[who], optimizers[who], tokens, target, batch_size, args.device, clf.autocast, generator)
                    for _ in range(args.epochs)
                ],
                args.device,
            )
        if round_:
            for who, seconds in elapsed.items():
                times[who].append(seconds)
    rows = []
    for who, values in times.items():
        median = statistics.median(values)
        rows.append(
            dict(
                workload=name,
                path=who,
                samples_per_s=steps * batch_size / median,
                tflops=flops * steps / median / 1e12,
                min_s=min(values),
                median_s=median,
                max_s=max(values),
            )
        )
    rows[0]["vs_loop"] = statistics.median(times["plain loop"]) / statistics.median(times["estimator"])
    if "plain loop, fused AdamW" in times:
        rows[0]["vs_fused_loop"] = statistics.median(times["plain loop, fused AdamW"]) / statistics.median(times["estimator"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", default="bf16", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--rows", type=int, default=256 * 40, help="rows per epoch")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply --rows (e.g. 0.05 on a CPU)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--epochs",
        type=int,
        default=1,
        help="epochs per round: partial_fit runs max_epochs=EPOCHS, the loops as many (what a fit pays once per "
        "call, such as the guard's first weight snapshot, then weighs less)",
    )
    parser.add_argument("--compile", action="store_true")
    parser.add_argument(
        "--compile-mode",
        default=None,
        help="torch.compile's mode for every path (e.g. reduce-overhead: CUDA graphs); implies --compile",
    )
    parser.add_argument("--only", choices=["text", "image", "table"], default=None)
    args = parser.parse_args(argv)
    args.rows = max(512, int(args.rows * args.scale))
    args.compile = args.compile or args.compile_mode is not None
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    peak = matmul_peak(args.device, dtype, 8192 if args.device != "cpu" else 1024)
    label = (
        torch.cuda.get_device_name() if torch.device(args.device).type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    )
    compiled = f"compile={args.compile}" + (f" (mode {args.compile_mode})" if args.compile_mode else "")
    print(f"{label}; {args.precision}; measured dense matmul peak {peak / 1e12:.3g} TFLOP/s; {compiled}")
    rng = np.random.default_rng(0)
    workloads = {"text": text_workload, "image": image_workload, "table": table_workload}
    rows = []
    for key, workload in workloads.items():
        if args.only in (None, key):
            rows += run(workload, args, rng)
    table = pd.DataFrame(rows)
    table["pct_of_peak"] = 100 * table["tflops"] * 1e12 / peak
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3g}".format):
        print(table.to_string(index=False))
    return table


if __name__ == "__main__":
    main()
