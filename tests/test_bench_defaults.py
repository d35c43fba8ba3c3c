"""benchmarks/bench_defaults.py: the split, the summary, and one tiny task end to end."""

import numpy as np
import pandas as pd
from conftest import make_table
from sklearn.dummy import DummyClassifier

from bench_defaults import parse_variant, run_task, summarise, three_way
from suites import KIND_TASKS, Task


def test_every_kind_has_at_least_two_real_tasks():
    assert set(KIND_TASKS) == {"table", "image", "text", "text-regression", "text-pretrained", "tagging"}
    assert all(len(tasks) >= 3 for kind, tasks in KIND_TASKS.items() if kind != "tagging")
    assert all(task.baselines or task.target == "tag" for tasks in KIND_TASKS.values() for task in tasks)


def test_three_way_split_is_disjoint_and_fixed():
    X, y = np.arange(200)[:, None], np.arange(200) % 2
    first = three_way(X, y, seed=0)
    again = three_way(X, y, seed=0)
    train, valid, test = (set(part.ravel()) for part in first[:3])
    assert not (train & valid or train & test or valid & test) and len(train | valid | test) == 200
    assert all(np.array_equal(a, b) for a, b in zip(first, again))


def _tiny_task(max_epochs, **task_options):
    X, y = make_table(n=160)
    return Task(
        "tiny",
        "clf",
        "accuracy",
        lambda quick: (X, pd.Series(y)),
        baselines={"majority": lambda: DummyClassifier()},
        estimator_params=lambda: dict(max_epochs=max_epochs, encoder__d_model=16, encoder__n_heads=2),
        **task_options,
    )


def test_run_task_scores_defaults_tuned_and_baselines_on_validation_and_test():
    task = _tiny_task(2, tuned=dict(lr=3e-3))
    rows = run_task(task, seed=0, quick=True)
    assert [row["model"] for row in rows] == ["tabformer defaults", "tabformer tuned recipe", "majority"]
    assert all(0 <= row["valid"] <= 1 and 0 <= row["test"] <= 1 for row in rows)
    summary = summarise(pd.DataFrame(rows))
    assert summary.loc[0, "baseline"] == "majority"
    assert np.isclose(summary.loc[0, "gap_to_baseline"], rows[0]["test"] - rows[2]["test"])


def test_a_validation_probe_runs_variants_per_training_seed_without_baselines():
    assert parse_variant("wide:encoder__d_model=32,lr_schedule=cosine,lr=3e-4") == (
        "wide",
        {"encoder__d_model": 32, "lr_schedule": "cosine", "lr": 3e-4},
    )
    # commas inside [..] belong to a JSON list value
    assert parse_variant("conv:tokenizer__conv_stem=[32,64],tokenizer__patch_size=2") == (
        "conv",
        {"tokenizer__conv_stem": [32, 64], "tokenizer__patch_size": 2},
    )
    task = _tiny_task(1)
    rows = run_task(task, seed=0, quick=True, variants=[parse_variant("slow:lr=1e-5")], train_seeds=[0, 1])
    assert [row["model"] for row in rows] == [
        "tabformer defaults (seed 0)",
        "tabformer slow (seed 0)",
        "tabformer defaults (seed 1)",
        "tabformer slow (seed 1)",
    ]
