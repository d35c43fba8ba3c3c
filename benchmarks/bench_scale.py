"""Memory and time as tables grow: fit in memory vs streamed from Parquet, and predict from Parquet.

    python benchmarks/bench_scale.py                      # fit 10k, 100k rows; predict 100k, 1M rows
    python benchmarks/bench_scale.py --fit-rows 10000 100000 1000000 --predict-rows 100000 1000000
    python benchmarks/bench_scale.py --fit-rows 1000000 --fit-modes stream --predict-rows   # one step

A synthetic table of Adult's width (6 numeric, 8 categorical columns) is written to
Parquet in 100k-row groups, never held whole by this process. Every measurement runs in
a fresh process, so its peak RSS (``ru_maxrss``) is its own:

- ``fit in memory``: the process builds the DataFrame and fits on it (one epoch);
- ``fit streamed``: the process fits on the Parquet path with ``y="label"`` (one epoch;
  the tokenizer on ``fit_sample_size`` rows, then row group by row group);
- ``predict streamed``: the process loads a saved model and calls ``predict_proba`` on
  ``pyarrow.dataset.dataset(path)``.

Each row also shows the RSS before the fit or prediction started (after imports, the
data or the model), so ``added`` is what the step itself cost. Rows print as they finish.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = dict(encoder__d_model=32, encoder__n_heads=4, encoder__n_layers=2, max_epochs=1, verbose=0, random_state=0)
PRELUDE = f"""
import json, resource, sys, time
sys.path.insert(0, {HERE!r})
import bench_scale
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
FIT = """
from tabformer import TabFormerClassifier
mode, rows, path, model = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
clf = TabFormerClassifier(validation_fraction=None, **bench_scale.SETTINGS)
if mode == "memory":
    frame = bench_scale.table(rows, 0)
    X, y = frame, bench_scale.target(frame)
else:
    X, y = path, "label"
before = rss()
clf.fit(X, y)
if model != "-":
    clf.save(model)
print(json.dumps({"seconds": clf.history[-1, "dur"], "rss_before_mib": before, "peak_rss_mib": rss()}))
"""
PREDICT = """
import pyarrow.dataset as ds
import tabformer
model = tabformer.load(sys.argv[4])
before = rss()
start = time.perf_counter()
proba = model.predict_proba(ds.dataset(sys.argv[3], format="parquet"))
assert len(proba) == int(sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - start, "rss_before_mib": before, "peak_rss_mib": rss()}))
"""


def table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"num{i}": rng.normal(size=rows) for i in range(6)})
    for i in range(8):
        frame[f"cat{i}"] = rng.choice([f"c{j}" for j in range(12)], rows)
    return frame


def target(frame: pd.DataFrame) -> np.ndarray:
    return ((frame["num0"] + (frame["cat0"] == "c1")) > 0.5).astype(int).to_numpy()


def write_parquet(path: str, rows: int, chunk: int = 100_000, label: bool = False) -> None:
    """``rows`` rows of :func:`table` in row groups of ``chunk`` (with a ``label`` column if asked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for seed, first in enumerate(range(0, rows, chunk)):
        frame = table(min(chunk, rows - first), seed + 1)
        if label:
            frame["label"] = target(frame)
        part = pa.Table.from_pandas(frame, preserve_index=False)
        writer = writer or pq.ParquetWriter(path, part.schema)
        writer.write_table(part, row_group_size=chunk)
    writer.close()


def measure(script: str, *args) -> dict:
    out = subprocess.run([sys.executable, "-c", PRELUDE + script, *map(str, args)], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the child process failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-rows", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--predict-rows", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--fit-modes", nargs="*", choices=["memory", "stream"], default=["memory", "stream"])
    args = parser.parse_args(argv)
    results = []
    print(f"{'step':<17}{'rows':>10}{'seconds':>10}{'rows/s':>10}{'RSS before':>12}{'peak RSS':>10}{'added':>8}  (MiB)")
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "model")
        path = os.path.join(folder, "table.parquet")
        plan = [("fit in memory", "memory", rows) for rows in args.fit_rows if "memory" in args.fit_modes]
        plan += [("fit streamed", "stream", rows) for rows in args.fit_rows if "stream" in args.fit_modes]
        plan += [("predict streamed", "predict", rows) for rows in args.predict_rows]
        if args.predict_rows and not os.path.exists(model):  # the model predictions load
            measure(FIT, "memory", 2000, "-", model)
        for step, mode, rows in plan:
            if mode != "memory":
                write_parquet(path, rows, label=mode == "stream")
            result = measure(PREDICT if mode == "predict" else FIT, mode, rows, path, "-" if mode != "predict" else model)
            result.update(step=step, rows=rows, added_mib=result["peak_rss_mib"] - result["rss_before_mib"])
            results.append(result)
            print(
                f"{step:<17}{rows:>10,}{result['seconds']:>10.1f}{rows / result['seconds']:>10,.0f}"
                f"{result['rss_before_mib']:>12,.0f}{result['peak_rss_mib']:>10,.0f}{result['added_mib']:>8,.0f}",
                flush=True,
            )
    frame = pd.DataFrame(results)
    predicted = frame[frame["step"] == "predict streamed"]
    if len(predicted) > 1:
        first, last = predicted.iloc[0], predicted.iloc[-1]
        ratio = last["peak_rss_mib"] / first["peak_rss_mib"]
        print(f"predict peak RSS, {last['rows']:,} rows / {first['rows']:,} rows: {ratio:.2f}x", flush=True)
    return frame


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
