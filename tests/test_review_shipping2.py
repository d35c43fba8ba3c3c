"""Review of shipping and scaling (ONNX export, distributed fits, searches): bugs found and their regression tests."""

import numpy as np
import pytest
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
