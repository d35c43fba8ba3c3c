"""TabFormerPretrainer.score does not depend on the inference batch size, and is minus the mean loss over hidden cells.

Before, masks were drawn over each batch's shape (a row hid other cells in another batching) and the per-batch mean
losses were averaged by rows (a batch hiding nothing scored 0, a perfect batch): batch sizes 512 / 64 / 7 / 1 scored
one fitted table model -0.956 / -0.866 / -1.017 / -0.614.
"""

import copy

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from conftest import PRETRAINER_SMALL

from tabformer import TabFormerPretrainer
from tabformer.pretraining._draws import Draws, row_seed

SMALL = PRETRAINER_SMALL
RNG = np.random.default_rng(0)
A = RNG.normal(size=80)
TABLE = pd.DataFrame({"a": A, "b": 2 * A + RNG.normal(size=80) * 0.1, "c": RNG.choice(list("xyz"), 80)})
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "birds", "fly", "high", "sky", "fish", "swim", "deep"]
TEXTS = [" ".join(RNG.choice(WORDS, RNG.integers(1, 12))) for _ in range(60)]


@pytest.fixture(scope="module")
def table_model():
    return TabFormerPretrainer(**SMALL).fit(TABLE)


@pytest.mark.parametrize("which", ["masked_cells", "mlm"])
def test_score_does_not_depend_on_the_inference_batch_size(which, table_model):
    pre = table_model if which == "masked_cells" else TabFormerPretrainer(**SMALL).fit(TEXTS)
    X = TABLE if which == "masked_cells" else TEXTS
    scores = []
    for batch_size in (512, 7, 1):
        pre.set_params(iterator_valid__batch_size=batch_size)
        scores.append(pre.score(X))
    assert scores == pytest.approx([scores[0]] * 3, abs=1e-5)


def test_score_is_minus_the_mean_loss_over_all_hidden_cells(table_model):
    pre = table_model
    dataset = pre.objective_.make_dataset(pre.tokenize(TABLE), pre.tokenizer_, 0)  # random_state=0: score's seed
    dataset.seed_rows = True
    inputs, _ = dataset.__getitems__(list(range(len(TABLE))))
    pre.module_.eval()
    with torch.no_grad():
        categorical, (predicted, target) = pre.module_(**inputs)
    losses = [F.cross_entropy(logits, labels, reduction="none") for logits, labels in categorical]
    losses.append((predicted - target) ** 2)  # numeric_weight=1
    cells = torch.cat(losses)
    assert len(cells) == int((inputs["cell_labels"] != -100).sum() + inputs["num_hidden"].sum()) > 0
    pre.set_params(iterator_valid__batch_size=1)  # most single rows hide 0 or 1 cells: a mean of means weighed them alike
    assert pre.score(TABLE) == pytest.approx(-float(cells.mean()), abs=1e-5)


def test_a_row_hides_the_same_cells_in_any_batch_and_training_masks_are_unchanged(table_model):
    pre = table_model
    dataset = pre.objective_.make_dataset(pre.tokenize(TABLE), pre.tokenizer_, 5)
    dataset.seed_rows = True
    whole, _ = dataset.__getitems__(list(range(20)))
    for row in (0, 3, 19):
        alone, _ = dataset.__getitems__([row])
        assert all(torch.equal(alone[key][0], whole[key][row]) for key in whole)
    # Training draws each batch's masks from the dataset's one stream, as before (same numbers, so same distribution).
    dataset = pre.objective_.make_dataset(pre.tokenize(TABLE), pre.tokenizer_, 5)
    batch, _ = dataset.__getitems__([0, 1, 2, 3])
    generator = torch.Generator().manual_seed(5)
    expected_cat = torch.rand(batch["cat_ids"].shape, generator=generator) < pre.objective_.mask_prob
    expected_num = torch.rand(batch["num_values"].shape, generator=generator) < pre.objective_.mask_prob
    assert torch.equal(batch["cell_labels"] != -100, expected_cat)
    assert torch.equal(batch["num_hidden"], expected_num)


def test_per_row_draws_come_from_the_row_index():
    draws = Draws(None, [4, 9], seed=2)
    values = draws.rand((2, 3))
    assert torch.equal(values[1], torch.rand(3, generator=torch.Generator().manual_seed(row_seed(2, 9))))
    assert Draws(None, [], seed=2).rand((0, 3)).shape == (0, 3)


def test_score_refuses_rows_with_nothing_hidden(table_model):
    pre = copy.deepcopy(table_model)
    pre.objective_.mask_prob = 1e-9  # hides no cell of a few rows; this scored 0 (perfect) before
    with pytest.raises(ValueError, match="score found nothing to predict in the 3 rows of X"):
        pre.score(TABLE.iloc[:3])
