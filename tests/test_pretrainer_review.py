"""TabFormerPretrainer review: a continued fit refuses a changed objective; a batch too small for the objective is
refused before any training."""

import numpy as np
import pandas as pd
import pytest
from conftest import PRETRAINER_SMALL

from tabformer import TabFormerPretrainer
from tabformer.tokenizers import MixedTokenizer, PatchTokenizer

SMALL = PRETRAINER_SMALL
RNG = np.random.default_rng(0)
IMAGES = RNG.random((24, 8, 8)).astype("float32")
# images, a categorical and a numeric column: both SimCLR and masked-token pretraining apply
MIXED = pd.DataFrame({"photo": list((IMAGES * 255).astype(np.uint8)), "c": RNG.choice(list("abc"), 24), "x": RNG.normal(size=24)})


def mixed_pretrainer(**params):
    return TabFormerPretrainer(tokenizer=MixedTokenizer(image=PatchTokenizer(patch_size=4)), batch_size=8, **SMALL, **params)


@pytest.fixture(scope="module")
def simclr_fit():
    return mixed_pretrainer(objective="simclr").fit(MIXED)


@pytest.mark.parametrize("how", ["partial_fit", "warm_start"])
@pytest.mark.parametrize("objective", ["mlm", "auto"])  # "auto" resolves to mlm on this frame (a categorical column)
def test_a_continued_fit_refuses_a_changed_objective(simclr_fit, how, objective):
    pre = simclr_fit.set_params(objective=objective, warm_start=how == "warm_start")
    try:
        refused = r"objective='(mlm|auto)'.*fitted with objective='simclr'.*keeps its objective and head"
        with pytest.raises(ValueError, match=refused):
            pre.partial_fit(MIXED) if how == "partial_fit" else pre.fit(MIXED)
    finally:
        pre.set_params(objective="simclr", warm_start=False)
    assert pre.resolved_params_["objective"] == "simclr"


def test_a_continued_fit_refuses_an_unknown_objective(simclr_fit):
    pre = simclr_fit.set_params(objective="nonsense")
    try:
        with pytest.raises(ValueError, match=r"unknown objective 'nonsense'; registered objectives"):
            pre.partial_fit(MIXED)
    finally:
        pre.set_params(objective="simclr")


def test_a_continued_fit_keeps_the_same_objective_named_or_auto():
    pre = mixed_pretrainer(objective="mlm").fit(MIXED)
    pre.set_params(objective="auto").partial_fit(MIXED)  # "auto" is mlm here: the same objective, trained on
    assert pre.resolved_params_["objective"] == "mlm" and type(pre.objective_).__name__ == "MaskedTokenModeling"


@pytest.mark.parametrize(
    "params, setting",
    [({"batch_size": 1}, "batch_size"), ({"iterator_train__batch_size": 1}, "iterator_train__batch_size")],
)
def test_simclr_refuses_a_batch_of_one_before_training(monkeypatch, params, setting):
    def no_training(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(TabFormerPretrainer, "_train_new_module", no_training)
    pre = TabFormerPretrainer(objective="simclr", tokenizer__patch_size=4, **{**SMALL, **params})
    refused = rf"objective='simclr' needs {setting} >= 2 \(the other rows of a batch are its negatives\); got 1"
    with pytest.raises(ValueError, match=refused):
        pre.fit(IMAGES)
    assert not hasattr(pre, "tokenizer_")  # an explicit objective and batch size are refused before the tokenizer's fit


def test_an_auto_objective_resolved_to_simclr_refuses_a_batch_of_one(monkeypatch):
    monkeypatch.setattr(TabFormerPretrainer, "_train_new_module", lambda *a, **k: pytest.fail("trained"))
    pre = TabFormerPretrainer(tokenizer__patch_size=4, **{**SMALL, "batch_size": 1})
    with pytest.raises(ValueError, match=r"objective='simclr' needs batch_size >= 2"):
        pre.fit(IMAGES)


def test_a_continued_simclr_fit_refuses_a_batch_of_one(simclr_fit):
    pre = simclr_fit.set_params(iterator_train__batch_size=1)
    try:
        with pytest.raises(ValueError, match=r"needs iterator_train__batch_size >= 2.*got 1"):
            pre.partial_fit(MIXED)
    finally:
        pre.set_params(iterator_train__batch_size=8)


def test_masked_tokens_train_with_a_batch_of_one():
    pre = mixed_pretrainer(objective="mlm").set_params(batch_size=1).fit(MIXED.iloc[:4])
    assert pre.resolved_params_["objective"] == "mlm"
