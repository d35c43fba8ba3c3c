"""Multi-process training through Accelerate, for real: two CPU processes over gloo."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("accelerate")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distributed_job  # noqa: E402


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def launch(kind, out, batch_size, *extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", free_port()]
    command += [os.path.join(HERE, "distributed_job.py"), kind, str(out), str(batch_size), *extra]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return np.load(out)


@pytest.mark.parametrize("kind", ["table", "text"])
def test_two_processes_match_one_process_with_the_same_global_batch(kind, tmp_path):
    extra = []
    if kind == "text":
        # A WordPiece vocabulary trained in fit may differ by a few tokens between runs;
        # a vocabulary file makes both runs tokenize identically.
        clf, _ = distributed_job.train("text", 32)
        extra = [clf.tokenizer_.save_vocabulary(tmp_path / "vocab.txt")]
    two = launch(kind, tmp_path / "two.npz", 16, *extra)  # 2 processes x 16 rows
    assert int(two["world"]) == 2 and "MULTI_CPU" in str(two["distributed"])
    _, proba = distributed_job.train(kind, 32, *extra)  # 1 process x 32 rows
    # DDP averages the two shards' mean-loss gradients: the same gradient as one batch of
    # 32, up to float summation order. After 12 AdamW steps that leaves ~1e-6; 1e-4 is
    # far below what a wrong setup gives (a per-process batch of 16 steps differently:
    # see the last assertion).
    np.testing.assert_allclose(two["proba"], proba, atol=1e-4)
    _, proba_16 = distributed_job.train(kind, 16, *extra)
    assert np.abs(proba_16 - proba).max() > 1e-3


def test_gradient_accumulation_of_two_batches_of_16_matches_one_batch_of_32():
    _, proba = distributed_job.train("table", 32)
    X, y = distributed_job.data("table")
    settings = dict(distributed_job.SETTINGS, batch_size=16, distributed=dict(gradient_accumulation_steps=2))
    clf = distributed_job.TabFormerClassifier(**settings).fit(X, y)
    assert clf.accelerator_.gradient_accumulation_steps == 2 and clf.accelerator_.num_processes == 1
    # Accelerate divides each loss by the steps accumulated and steps the optimizer every second batch.
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-4)
    assert clf.get_params()["distributed"] == {"gradient_accumulation_steps": 2}
    assert not hasattr(clf.optimizer_, "optimizer")  # Accelerate's wrapper is gone after fit


def test_distributed_auto_stays_off_in_one_process_and_bad_values_are_refused():
    X, y = distributed_job.data("table")
    clf = distributed_job.TabFormerClassifier(**dict(distributed_job.SETTINGS, max_epochs=1, batch_size=32)).fit(X, y)
    assert clf.get_params()["distributed"] == "auto" and clf.accelerator_ is None
    with pytest.raises(ValueError, match="distributed"):
        distributed_job.TabFormerClassifier(distributed="yes", **distributed_job.SETTINGS).fit(X, y)
    with pytest.raises(ValueError, match="contradicts the accelerator"):
        distributed_job.TabFormerClassifier(
            distributed=dict(mixed_precision="no"), precision="bf16", **distributed_job.SETTINGS
        ).fit(X, y)


def test_the_users_precision_applies_to_predictions_after_an_accelerated_fit():
    X, y = distributed_job.data("table")
    clf = distributed_job.TabFormerClassifier(distributed=dict(mixed_precision="no"), **distributed_job.SETTINGS).fit(X, y)
    fp32 = clf.predict_proba(X)
    clf.set_params(precision="bf16")
    bf16 = clf.predict_proba(X)  # raised "contradicts the accelerator" before
    assert 0 < np.abs(bf16 - fp32).max() < 0.05  # bf16 autocast ran, and the predictions are still the model's
    with pytest.raises(ValueError, match="contradicts the accelerator"):  # training steps still follow the accelerator
        clf.partial_fit(X, y)


def test_without_a_seed_every_process_validates_on_the_main_processs_holdout_and_bins(tmp_path):
    # Each process drew its own holdout, so their validation losses (and piecewise bins, which
    # leave the holdout out) differed, and so did what early stopping kept.
    launch("holdout", tmp_path / "holdout.npz", 16)
    ranks = [np.load(tmp_path / f"holdout.npz.rank{rank}.npz") for rank in (0, 1)]
    np.testing.assert_array_equal(ranks[0]["edges"], ranks[1]["edges"])
    np.testing.assert_allclose(ranks[0]["valid_loss"], ranks[1]["valid_loss"], rtol=1e-5)
