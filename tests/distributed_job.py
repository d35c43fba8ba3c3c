"""A training job for tests/test_distributed.py, launched by torchrun (or run alone).

    python -m torch.distributed.run --nproc_per_node 2 tests/distributed_job.py table OUT.npz BATCH [VOCAB]

Rank 0 writes the fitted model's probabilities and its history to OUT.npz; the ``holdout``
kind (no random_state, early stopping) also has every rank write its bins and validation
losses to OUT.npz.rankN.npz.
"""

import sys

import numpy as np

from tabformer import TabFormerClassifier

SETTINGS = dict(
    ensemble_size=1,  # the launched processes do not see the conftest's one-model fixture; the test's own fit does
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    encoder__attention_dropout=0.0,
    max_epochs=3,
    lr=1e-2,
    lr_schedule=None,
    patience=None,
    validation_fraction=None,
    iterator_train__shuffle=False,  # the same rows in the same order in both runs
    random_state=0,
    verbose=0,
)
WORDS = ["good", "great", "fine", "bad", "awful", "dull", "film", "plot", "cast", "the", "was", "very"]


def data(kind, n=128):
    rng = np.random.default_rng(0)
    if kind in ("table", "holdout"):
        import pandas as pd

        X = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b", "c"], n)})
        y = (X["x"] + (X["c"] == "a") > 0.3).astype(int).to_numpy()
        return X, y
    X = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
    y = np.array([int(any(w in t.split() for w in ("good", "great", "fine"))) for t in X])
    return X, y


def train(kind, batch_size, vocab=None):
    X, y = data(kind, n=400 if kind == "holdout" else 128)
    extra = {}
    if kind == "holdout":  # no seed: each process would draw its own holdout, and its own piecewise bins
        extra = dict(random_state=None, validation_fraction=0.25, patience=5, tokenizer__numeric_embedding="piecewise")
    if kind == "text":
        # The text recipe's dropouts draw different masks for a batch of 32 than for two of
        # 16, and its length grouping shuffles batches.
        extra = dict(tokenizer="wordpiece", tokenizer__vocab_file=vocab, tokenizer__token_dropout=0.0)
        extra.update(encoder__dropout=0.0, head__dropout=0.0, iterator_train__group_by_length=False)
    clf = TabFormerClassifier(batch_size=batch_size, **{**SETTINGS, **extra}).fit(X, y)
    return clf, clf.predict_proba(X)


if __name__ == "__main__":
    kind, out, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    clf, proba = train(kind, batch_size, sys.argv[4] if len(sys.argv) > 4 else None)
    accelerator = clf.accelerator_
    if kind == "holdout":  # every process's own view, to compare
        rank = accelerator.process_index if accelerator else 0
        np.savez(f"{out}.rank{rank}.npz", edges=clf.tokenizer_.bin_edges_, valid_loss=np.array(clf.history[:, "valid_loss"]))
    if accelerator is None or accelerator.is_main_process:
        np.savez(
            out,
            proba=proba,
            train_loss=np.array(clf.history[:, "train_loss"]),
            world=accelerator.num_processes if accelerator else 1,
            distributed=str(accelerator.distributed_type) if accelerator else "none",
        )
