import os
import sys

import numpy as np
import pandas as pd
import pytest
import torch

# The benchmark scripts import their fixed splits as `from splits import ...` (they run as
# scripts from benchmarks/); tests that load them need the same folder on the path.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

# Tiny models run fastest single-threaded, and it avoids oversubscribing 2-core CI machines.
torch.set_num_threads(1)

TINY = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    max_epochs=3,
    batch_size=32,
    verbose=0,
)
#: a pretrainer's one-epoch fit with no holdout, seeded (the pretrainer tests' settings)
PRETRAINER_SMALL = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    max_epochs=1,
    validation_fraction=None,
    patience=None,
    verbose=0,
    random_state=0,
)


@pytest.fixture(autouse=True)
def _patches_unless_stem_tested(request, monkeypatch):
    """Image inputs default to a frozen ImageNet CNN stem at 64 px when its weights are
    installed (docs/defaults.md). That stem costs 10-30x a patch embedding per image, so
    unit tests of everything else keep the patch default; tests marked ``pretrained_stem``
    check the stem default itself."""
    if request.node.get_closest_marker("pretrained_stem") is None:
        from tabformer.estimators import _image_recipes

        monkeypatch.setattr(_image_recipes, "stem_available", lambda: False)


@pytest.fixture(autouse=True)
def _scratch_text_unless_weights_tested(request, monkeypatch):
    """Texts default to fine-tuning all-MiniLM-L6-v2 when its package is installed
    (docs/defaults.md): 22M parameters, seconds per fit even on a few texts. Unit tests of
    everything else keep the from-scratch default; tests marked ``pretrained_text`` check
    the weights default itself."""
    if request.node.get_closest_marker("pretrained_text") is None:
        from tabformer.estimators import _text_recipes

        monkeypatch.setattr(_text_recipes, "text_weights_available", lambda: False)


@pytest.fixture(autouse=True)
def _one_model_unless_ensembles_tested(request, monkeypatch):
    """A table of under 2,048 rows trains five members by default (``ensemble_size``): five
    times a fit, and most tests fit small tables (the suite took 1.6x as long). Unit tests of
    everything else keep one model; tests marked ``small_table_ensemble`` check the default itself."""
    if request.node.get_closest_marker("small_table_ensemble") is None:
        from tabformer.estimators import _ensemble

        monkeypatch.setattr(_ensemble, "SMALL_TABLE_MEMBERS", 1)


_CUDA_IS_AVAILABLE = torch.cuda.is_available


@pytest.fixture(autouse=True, scope="session")
def _cpu_by_default():
    """``device="auto"`` is the CPU in every test not marked ``cuda``, so the suite reads the
    same on a machine with a GPU (its tests compare with CPU tensors and exact CPU outputs).
    Session-wide, so that module-scoped fixtures fit on the CPU too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: False)
        yield


@pytest.fixture(autouse=True)
def _gpu_for_cuda_tests(request, monkeypatch):
    if request.node.get_closest_marker("cuda") is not None:
        monkeypatch.setattr(torch.cuda, "is_available", _CUDA_IS_AVAILABLE)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests, restored after: tiny models on a shared 2-core box run
    several times faster without thread contention. Use with ``pytest.mark.usefixtures("one_torch_thread")``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def tiny():
    """Settings that keep a fit to well under a second."""
    return dict(TINY)


def make_table(n=120, seed=0):
    """A small mixed table whose label depends on a number and a category."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n),
            "city": rng.choice(["paris", "rome", "oslo"], n),
            "income": rng.lognormal(10, 1, n),
            "member": rng.choice([True, False], n),
        }
    )
    X.loc[X.index[::17], "age"] = np.nan
    X.loc[X.index[::13], "city"] = None
    score = (X["age"].fillna(40) - 40) / 10 + (X["city"] == "rome") * 1.5
    y = np.where(score > 0.3, "yes", "no")
    return X, y


@pytest.fixture
def table():
    return make_table()


@pytest.fixture
def pos_neg_table():
    """120 rows: two numbers and a category, labels "pos"/"neg" (the callback tests' small fits)."""
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(120), "b": rng.randn(120), "c": rng.choice(["x", "y", "z"], 120)})
    y = np.where(X.a + (X.c == "x") + 0.3 * rng.randn(120) > 0.5, "pos", "neg")
    return X, y
