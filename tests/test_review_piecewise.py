"""Review of the piecewise numeric embedding: the target reaches every table tokenizer, and bad bins are refused."""

import numpy as np
import pandas as pd
import pytest

from tabformer.nn.embedders.tabular import TabularEmbedder
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


@pytest.mark.parametrize(
    "edges, match",
    [(None, r"shape \(2, n_bins \+ 1\)"), ([[0.0, 1.0, 2.0]], r"got shape \(1, 3\)"), ([[0.0, np.nan], [0.0, 1.0]], "finite")],
)
def test_the_embedder_refuses_bins_that_do_not_fit_its_columns(edges, match):
    # Missing bins built one bin of width 0 (every feature 0), a single row was broadcast over every column,
    # and a NaN edge made every token of its column NaN: all silently.
    with pytest.raises(ValueError, match=match):
        TabularEmbedder([], 2, 8, numeric_embedding="piecewise", bin_edges=edges)
    TabularEmbedder([3], 0, 8, numeric_embedding="piecewise", bin_edges=[])  # no numeric column: no bins


def test_a_target_of_another_length_is_named_not_an_index_error():
    X, y = _step_frame()
    with pytest.raises(ValueError, match=r"one target per row of X \(400 rows\), got shape \(10,\)"):
        TabularTokenizer(numeric_embedding="piecewise").fit(X[["a"]], y[:10])
