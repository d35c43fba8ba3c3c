"""Each fast path of issue 18 alone, on the Adult table module: speed-up over the old path.

    python benchmarks/bench_speed_ablation.py             # 2,048 rows, 5 interleaved rounds
    python benchmarks/bench_speed_ablation.py --rounds 9

1 torch thread. One fitted ``TabFormerClassifier`` module is timed for one training epoch
(batch 256, AdamW) and one inference pass (batch 1,024) under five settings: the old path
(attention dropout 0.1, keys not padded, full last layer), each fast path alone, and all
three. The settings alternate within each round (order flipped every round); the table
gives min / median / max of old seconds / new seconds per round.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import pandas as pd
import torch

from tabformer import TabFormerClassifier
from tabformer.datasets import load_adult
from tabformer.nn import attention
from tabformer.nn.heads import ClassificationHead

SETTINGS = {  # (pad keys to 16, CLS-only last layer, attention dropout)
    "old path": (False, False, 0.1),
    "keys padded to 16": (True, False, 0.1),
    "attention dropout 0": (False, False, 0.0),
    "CLS-only last layer": (False, True, 0.1),
    "all three": (True, True, 0.0),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    X, y = load_adult()
    X, y = X.iloc[: args.rows], y.iloc[: args.rows]
    net = TabFormerClassifier(max_epochs=1, validation_fraction=None, verbose=0, random_state=0).fit(X, y)
    inputs = {k: torch.as_tensor(v) for k, v in net.tokenize(X).items()}
    target = torch.as_tensor(net.label_encoder_.transform(y))
    module, pad_keys, reads_cls_only = net.module_, attention.pad_keys, ClassificationHead.reads_cls_only

    def apply(pad, cls_only, dropout):
        # The switches are module-level on purpose: this script measures the library's own code paths.
        attention.pad_keys = pad_keys if pad else (lambda k, v, bias, length=16: (k, v, bias))
        ClassificationHead.reads_cls_only = reads_cls_only if cls_only else property(lambda self: False)
        for layer in module.encoder.layers:
            layer.attention.attention_dropout = dropout

    def train():
        optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4)
        module.train()
        for index in torch.arange(len(target)).split(256):
            optimizer.zero_grad()
            logits = module(**{k: v[index] for k, v in inputs.items()})
            torch.nn.functional.cross_entropy(logits, target[index]).backward()
            optimizer.step()

    def infer():
        module.eval()
        with torch.inference_mode():
            for start in range(0, len(target), 1024):
                module(**{k: v[start : start + 1024] for k, v in inputs.items()})

    seconds = {(name, work): [] for name in SETTINGS for work in ("train", "infer")}
    try:
        for round_ in range(args.rounds):
            order = list(SETTINGS) if round_ % 2 == 0 else list(SETTINGS)[::-1]
            for name in order:
                apply(*SETTINGS[name])
                for work, function in (("train", train), ("infer", infer)):
                    start = time.perf_counter()
                    function()
                    seconds[name, work].append(time.perf_counter() - start)
    finally:
        apply(True, True, 0.0)
        ClassificationHead.reads_cls_only = reads_cls_only
    rows = []
    for (name, work), values in seconds.items():
        ratios = [old / new for old, new in zip(seconds["old path", work], values)]
        rows.append(dict(setting=name, work=work, median=statistics.median(ratios), min=min(ratios), max=max(ratios)))
    table = pd.DataFrame(rows).set_index(["setting", "work"])
    print(f"speed-up over the old path (1 thread, {args.rows} Adult rows, {args.rounds} interleaved rounds)")
    print(table.to_string(float_format="{:.2f}".format))
    return table


if __name__ == "__main__":
    main()
