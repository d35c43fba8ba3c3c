"""Memory and time as tables grow: fit time per epoch, and predict peak RSS from Parquet.

    python benchmarks/bench_scale.py                       # predict on 100k and 1M rows
    python benchmarks/bench_scale.py --predict-rows 20000 200000 --fit-rows 5000 20000

A synthetic table of Adult's width (6 numeric, 8 categorical columns) is written to
Parquet in row groups without ever being held whole. A model fitted on in-memory rows is
saved (``tabformer.save``); each prediction runs in a fresh process that loads it and
calls ``predict_proba`` on ``pyarrow.dataset.dataset(path)``, and its peak RSS
(``ru_maxrss``) is reported next to the same process's RSS right after loading the model,
so the table shows what prediction itself adds. Streamed prediction reads one record
batch (``inference_chunk_rows`` rows) at a time: its peak should not grow with the rows
beyond the output array (8 bytes x classes per row).
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
CHILD = r"""
import json, resource, sys, time
import pyarrow.dataset as ds
import tabformer
model = tabformer.load(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
proba = model.predict_proba(ds.dataset(sys.argv[2], format="parquet"))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"rows": len(proba), "seconds": seconds, "rss_after_load_mib": before / 1024, "peak_rss_mib": peak / 1024}))
"""


def table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"num{i}": rng.normal(size=rows) for i in range(6)})
    for i in range(8):
        frame[f"cat{i}"] = rng.choice([f"c{j}" for j in range(12)], rows)
    return frame


def target(frame: pd.DataFrame) -> np.ndarray:
    return ((frame["num0"] + (frame["cat0"] == "c1")) > 0.5).astype(int).to_numpy()


def write_parquet(path: str, rows: int, chunk: int = 100_000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for seed, first in enumerate(range(0, rows, chunk)):
        part = pa.Table.from_pandas(table(min(chunk, rows - first), seed + 1), preserve_index=False)
        writer = writer or pq.ParquetWriter(path, part.schema)
        writer.write_table(part, row_group_size=chunk)
    writer.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predict-rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--fit-rows", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args(argv)

    from tabformer import TabFormerClassifier

    settings = dict(encoder__d_model=32, encoder__n_heads=4, encoder__n_layers=2, max_epochs=1, verbose=0, random_state=0)
    fit_rows = []
    for rows in args.fit_rows:
        frame = table(rows, 0)
        clf = TabFormerClassifier(validation_fraction=None, **settings).fit(frame, target(frame))
        fit_rows.append({"rows": rows, "fit_seconds_per_epoch": clf.history[-1, "dur"]})
    print(pd.DataFrame(fit_rows).to_string(index=False))

    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "model")
        clf.save(model)
        results = []
        for rows in args.predict_rows:
            path = os.path.join(folder, f"rows{rows}.parquet")
            write_parquet(path, rows)
            out = subprocess.run([sys.executable, "-c", CHILD, model, path], capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["predict_added_mib"] = result["peak_rss_mib"] - result["rss_after_load_mib"]
            results.append(result)
            os.remove(path)
    frame = pd.DataFrame(results)
    frame["rows_per_s"] = frame["rows"] / frame["seconds"]
    print(frame.to_string(index=False, float_format="{:.1f}".format))
    first, last = frame.iloc[0], frame.iloc[-1]
    print(f"peak RSS {last['rows']:,} rows / {first['rows']:,} rows: {last['peak_rss_mib'] / first['peak_rss_mib']:.2f}x")
    return fit_rows, frame


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
