"""TabFormerPretrainer.score draws its masks and views from a fixed seed: the same fitted model scores the same X alike."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import PRETRAINER_SMALL

from tabformer import TabFormerPretrainer
from tabformer.tokenizers import MixedTokenizer, PatchTokenizer

SMALL = {k: v for k, v in PRETRAINER_SMALL.items() if k != "random_state"}
RNG = np.random.default_rng(0)
TABLE = pd.DataFrame({"a": RNG.normal(size=60), "b": RNG.choice(list("xyz"), 60)})
TEXTS = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea", "fish swim in the lake"] * 10
IMAGES = RNG.random((16, 8, 8)).astype("float32")
MIXED = pd.DataFrame({"title": TEXTS[:16], "photo": list((IMAGES * 255).astype(np.uint8)), "brand": list("abcd") * 4})


def mixed(objective):
    return {"objective": objective, "tokenizer": MixedTokenizer(image=PatchTokenizer(patch_size=4))}


@pytest.mark.parametrize(
    "X, settings",
    [(TABLE, {}), (TEXTS, {}), (IMAGES, {"tokenizer__patch_size": 4}), (MIXED, mixed("mlm")), (MIXED, mixed("simclr"))],
    ids=["masked_cells", "mlm", "simclr", "mixed-mlm", "mixed-simclr"],
)
@pytest.mark.parametrize("random_state", [None, 3])
def test_score_is_deterministic_and_leaves_the_global_rng(X, settings, random_state):
    pre = TabFormerPretrainer(**SMALL, **settings, random_state=random_state).fit(X)
    state = torch.get_rng_state()
    first = pre.score(X)
    # Unseeded, each call drew fresh masks from the global RNG (and moved it on): GridSearchCV compared noise.
    assert pre.score(X) == first
    assert torch.equal(torch.get_rng_state(), state)
