"""Text and tagging inputs at their edges, as a review used them: each test failed, or answered wrong, before its fix."""

import warnings

import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from tabformer import TabFormerTagger

TINY = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    max_epochs=1,
    verbose=0,
    random_state=0,
    tokenizer="wordpiece",
    tokenizer__vocab_size=80,
)
SENTENCES = [["Alice", "visits", "Paris"], ["Bob", "stays", "home"]] * 4
TAGS = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"]] * 4


@pytest.fixture(scope="module")
def tagger():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # one epoch: the answers are not the point
        return TabFormerTagger(**TINY).fit(SENTENCES, TAGS)


def test_tagger_scores_a_one_column_frame_of_tags_as_fit_reads_it(tagger):
    # fit reads y given as a one-column DataFrame of tag lists; score read the frame's column
    # name as its one sentence: "y_true has 1 sentences but y_pred has 8".
    expected = tagger.score(SENTENCES, TAGS)
    assert tagger.score(SENTENCES, pd.DataFrame({"tags": TAGS})) == expected
    assert tagger.score(pd.DataFrame({"words": SENTENCES}), pd.DataFrame({"tags": TAGS})) == expected
    with pytest.raises(ValueError, match="sentence 0 has 3 words but 2 tags"):
        tagger.score(SENTENCES, [row[:2] for row in TAGS])
