"""benchmarks/probe_mixup.py: mixup acts on every training batch and never at predict (docs/defaults.md quotes it)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after

TEXTS = ["red apple pie", "green apple tart", "blue sky blue sea", "grey sky rain", "apple juice", "sky at night"] * 8
LABELS = ["food", "food", "sky", "sky", "food", "sky"] * 8
TINY = dict(tokenizer="wordpiece", encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, batch_size=16)


@pytest.mark.parametrize("kind", ["sen", "word"])
def test_mixup_mixes_every_training_batch_and_leaves_predict_alone(kind):
    from probe_mixup import MixupClassifier

    plain = MixupClassifier(**TINY, random_state=0, verbose=0).fit(TEXTS, LABELS)
    mixed = MixupClassifier(**TINY, random_state=0, verbose=0, mixup_kind=kind, mixup_alpha=1.0).fit(TEXTS, LABELS)
    batches = sum(len(epoch["batches"]) for epoch in mixed.history)  # training batches only (no holdout here)
    assert getattr(plain, "mix_calls_", 0) == 0 and mixed.mix_calls_ == batches > 0
    assert not np.allclose(plain.predict_proba(TEXTS), mixed.predict_proba(TEXTS))  # training differed
    # at predict the hooks do nothing: the same weights answer the same without them
    proba = mixed.predict_proba(TEXTS)
    mixed.mixup_kind = "none"
    for module in mixed.module_.modules():
        module._forward_pre_hooks.clear()
        module._forward_hooks.clear()
    np.testing.assert_allclose(mixed.predict_proba(TEXTS), proba, atol=1e-6)
