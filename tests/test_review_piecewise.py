"""Review of the piecewise numeric embedding: the target reaches every table tokenizer, and bad bins are refused."""

import numpy as np
import pandas as pd

from tabformer.tokenizers import MixedTokenizer, TabularTokenizer


def _step_frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "t": rng.choice(["good movie", "bad film", "fine"], n)})
    return X, (X["a"] > 0.3).astype(int).to_numpy()


def test_a_mixed_tokenizer_hands_the_target_to_its_piecewise_table():
    # MixedTokenizer.fit took y and dropped it: its table's bins were quantiles (33 edges), not the step's one split.
    X, y = _step_frame()

    def edges(*target):
        mixed = MixedTokenizer(table=TabularTokenizer(numeric_embedding="piecewise")).fit(X, *target)
        return next(tokenizer for name, tokenizer, _ in mixed.transformers_ if name == "table").bin_edges_[0]

    assert len(np.unique(edges(y))) == 3
    assert len(np.unique(edges())) > 3  # without a target: quantiles
