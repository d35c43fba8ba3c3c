"""Review of shipping and scaling (ONNX export, distributed fits, searches): bugs found and their regression tests."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import TINY, make_table

from tabformer import TabFormerPretrainer, TabFormerTagger

SENTENCES = [["Alice", "visited", "Paris"], ["Bob", "stays", "home", "with", "Carol"]] * 8
TAGS = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O", "O", "B-PER"]] * 8


@pytest.mark.parametrize("kind", ["pretrainer", "tagger"])
def test_the_pretrainer_and_the_tagger_train_through_accelerate_as_the_other_estimators(kind):
    # Their fit never built the Accelerator: `distributed=` was ignored, so under torchrun every
    # process trained the whole data without DDP, and `accelerator_` (docs/scale.md's save guard) was missing.
    pytest.importorskip("accelerate")
    settings = dict(TINY, max_epochs=1, random_state=0, distributed=dict(gradient_accumulation_steps=2))
    if kind == "pretrainer":
        estimator = TabFormerPretrainer(objective="masked_cells", **settings).fit(make_table(n=64)[0])
    else:
        estimator = TabFormerTagger(**settings).fit(SENTENCES, TAGS)
    assert estimator.accelerator_ is not None and estimator.accelerator_.gradient_accumulation_steps == 2
    assert not hasattr(estimator.optimizer_, "optimizer")  # Accelerate's wrapper was used, then dropped
    assert np.isfinite(estimator.history[:, "train_loss"]).all()


PRETRAINING_JOB = """
import os, sys
import os
import subprocess
import sys

import numpy as np
sys.path.insert(0, {tests!r})
from conftest import make_table
from tabformer import TabFormerPretrainer

settings = dict(encoder__d_model=8, encoder__n_heads=2, encoder__n_layers=1, max_epochs=3, batch_size=16, verbose=0)
pre = TabFormerPretrainer(objective="masked_cells", random_state=None, validation_fraction=0.25, patience=None, **settings)
pre.fit(make_table(n=96)[0])
losses = {{name: pre.history[:, name] for name in ("train_loss", "valid_loss")}}
np.savez(os.path.join({out!r}, "rank%s.npz" % pre.accelerator_.process_index), **losses)
"""


@pytest.fixture(scope="module")
def launched_pretraining(tmp_path_factory):
    """Each process's train_loss and valid_loss histories of a masked-cell pretraining over 2 processes (gloo)."""
    pytest.importorskip("accelerate")
    from test_distributed import free_port

    out = tmp_path_factory.mktemp("launched")
    job = out / "job.py"
    job.write_text(PRETRAINING_JOB.format(tests=os.path.dirname(os.path.abspath(__file__)), out=str(out)))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", free_port(), str(job)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return [np.load(out / f"rank{rank}.npz") for rank in (0, 1)]


def test_without_a_seed_every_process_of_a_launched_pretraining_validates_on_the_same_masks(launched_pretraining):
    # Each process seeded its masks on its own: their validation losses differed, so early stopping
    # stopped them at different epochs and the processes still training waited forever (a hung job).
    first, second = launched_pretraining
    np.testing.assert_allclose(first["valid_loss"], second["valid_loss"], rtol=1e-6)


def test_every_process_records_the_train_loss_of_the_whole_global_batch(launched_pretraining):
    # Each process recorded its own shard's loss: the main process's saved history held half the
    # rows' train_loss, and the processes' histories differed.
    first, second = launched_pretraining
    np.testing.assert_allclose(first["train_loss"], second["train_loss"], rtol=1e-6)


def test_a_compiled_model_exports_to_onnx(tmp_path):
    # compile=True leaves module_ a torch.compile OptimizedModule, and the exporter's trace failed on it:
    # "Detected that you are using FX to torch.jit.trace a dynamo-optimized function".
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from tabformer import TabFormerClassifier
    from tabformer.export import onnx_inputs

    X, y = make_table(n=64)
    clf = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0)).fit(X, y)
    expected = clf.predict_proba(X[:7])
    clf.module_ = torch.compile(clf.module_)  # what compile=True leaves (compiled lazily, so the test stays quick)
    clf.export_onnx(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, onnx_inputs(clf, X[:7]))[0], expected, atol=1e-4)
    assert type(clf.module_).__name__ == "OptimizedModule"  # the estimator's own module is left as it was


@pytest.mark.parametrize("source", ["memory", "parquet"])
def test_a_continued_fit_of_a_loaded_model_trains_through_accelerate_again(source, tmp_path):
    # accelerator_ is never saved or pickled, and partial_fit never built one: a loaded model's
    # partial_fit in a launched job trained every row in every process, without DDP.
    pytest.importorskip("accelerate")
    from tabformer import TabFormerClassifier, load

    X, y = make_table(n=64)
    settings = dict(TINY, max_epochs=1, random_state=0, distributed=dict(gradient_accumulation_steps=2))
    TabFormerClassifier(**settings).fit(X, y).save(tmp_path / "model")
    loaded = load(tmp_path / "model")
    assert getattr(loaded, "accelerator_", None) is None  # never saved
    if source == "parquet":
        pytest.importorskip("pyarrow")
        X.assign(target=y).to_parquet(tmp_path / "rows.parquet")
        loaded.partial_fit(str(tmp_path / "rows.parquet"), "target")
    else:
        loaded.partial_fit(X, y)
    assert loaded.accelerator_ is not None and loaded.accelerator_.gradient_accumulation_steps == 2


def test_only_the_main_process_prints_early_stopping_messages(capsys):
    # The epoch table was silenced outside the main process, but early stopping's
    # "Stopping since..." and "Restoring best model..." printed once per process.
    from types import SimpleNamespace

    from tabformer import TabFormerClassifier

    clf = TabFormerClassifier(verbose=1)
    clf.accelerator_ = SimpleNamespace(is_main_process=False)
    clf._sink("Stopping since valid_loss has not improved in the last 1 epochs.")
    assert capsys.readouterr().out == ""
    clf.accelerator_ = SimpleNamespace(is_main_process=True)
    clf._sink("Restoring best model from epoch 3.")
    assert capsys.readouterr().out == "Restoring best model from epoch 3.\n"


def test_an_example_without_padding_does_not_drop_the_attention_mask_from_the_graph(tmp_path):
    # export_onnx(example=X[:1]) traced a known text model on one text: no padding in the trace,
    # so the graph dropped the attention mask and was off by ~3e-3 on padded batches, silently.
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from test_persistence import LABELS, TEXT, TEXTS

    from tabformer import TabFormerClassifier
    from tabformer.export import onnx_inputs

    clf = TabFormerClassifier(tokenizer="wordpiece", **TEXT).fit(TEXTS, LABELS)
    clf.export_onnx(tmp_path / "t.onnx", example=["a wonderful moving film"])
    session = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    rows = ["a", "i loved every minute of a wonderful film and a funny script"]
    np.testing.assert_allclose(session.run(None, onnx_inputs(clf, rows))[0], clf.predict_proba(rows), atol=1e-5)


def test_seeded_fits_in_threads_of_one_process_score_as_a_serial_search():
    # torch's global RNG is one per process: seeded fits in threads (joblib's threading backend, a
    # Dask worker with several threads) drew from each other's stream, and so did a predict (its
    # DataLoader draws a seed): random_state=0 scored up to 0.03 of log-loss off the serial search.
    from joblib import parallel_backend
    from sklearn.model_selection import GridSearchCV

    from tabformer import TabFormerClassifier

    X, y = make_table(n=80)

    def search(n_jobs):
        estimator = TabFormerClassifier(**dict(TINY, max_epochs=2, random_state=0))
        grid = {"lr": [1e-3, 3e-2]}
        return GridSearchCV(estimator, grid, cv=2, n_jobs=n_jobs, scoring="neg_log_loss", error_score="raise").fit(X, y)

    serial = search(1).cv_results_["mean_test_score"]
    with parallel_backend("threading"):
        threaded = search(2).cv_results_["mean_test_score"]
    np.testing.assert_allclose(threaded, serial, atol=1e-6)


def test_predict_leaves_the_global_torch_rng_alone():
    X, y = make_table(n=64)
    from tabformer import TabFormerClassifier

    clf = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0)).fit(X, y)
    state = torch.get_rng_state()
    clf.predict_proba(X)
    assert torch.equal(state, torch.get_rng_state())


def test_a_seeded_cpu_fit_seeds_no_cuda_rng(monkeypatch):
    # torch.manual_seed also (lazily) seeds CUDA, outside the CPU-only fork: after the fit, a caller's
    # GPU work drew from the fit's seed. A CPU fit now seeds the CPU generator alone.
    X, y = make_table(n=64)
    from tabformer import TabFormerClassifier

    def refuse(seed):
        raise AssertionError(f"a CPU fit seeded CUDA with {seed}")

    monkeypatch.setattr(torch.cuda, "manual_seed_all", refuse)
    monkeypatch.setattr(torch.cuda, "manual_seed", refuse)
    first = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0)).fit(X, y).predict_proba(X)
    again = TabFormerClassifier(**dict(TINY, max_epochs=1, random_state=0)).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(first, again)
