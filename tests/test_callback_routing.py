"""Settings routed to the built-in callbacks (``callbacks__<name>...``), callbacks named like them, ``callbacks="disable"``."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier


@pytest.fixture
def table():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(120), "b": rng.randn(120), "c": rng.choice(["x", "y", "z"], 120)})
    y = np.where(X.a + (X.c == "x") + 0.3 * rng.randn(120) > 0.5, "pos", "neg")
    return X, y


def _small(**params):
    params = {"lr": 1e-2, "batch_size": 32, "ensemble_size": 1, "max_epochs": 2, **params}
    return TabFormerClassifier(encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, random_state=0, verbose=0, **params)


def test_disabled_callbacks_hold_out_no_row_and_report_no_schedule(table):
    # validation_fraction="auto" held out 30% for an early stopping that callbacks="disable" never ran.
    X, y = table
    net = _small(callbacks="disable").fit(X, y)
    assert net.callbacks_ == []
    assert {k: net.resolved_params_[k] for k in ("lr_schedule", "patience", "validation_fraction")} == dict.fromkeys(
        ("lr_schedule", "patience", "validation_fraction")
    )
    assert "valid_loss" not in net.history[-1]
    assert net.history[-1]["train_batch_count"] == 4  # all 120 rows in batches of 32
