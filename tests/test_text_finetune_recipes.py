"""What a text classifier's recipe stops on."""

import numpy as np
import pytest
import torch

from tabformer import TabFormerClassifier


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log", "red", "big", "small", "quickly", "slowly", "house", "tree"]
RNG = np.random.default_rng(0)
TEXTS = [" ".join(RNG.choice(WORDS, size=RNG.integers(4, 9))) for _ in range(60)]
LABELS = np.array(["cat" in text for text in TEXTS])
SMALL = dict(
    tokenizer__vocab_size=60,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    verbose=0,
    random_state=0,
)


def test_a_multilabel_text_classifier_stops_on_the_loss_not_on_subset_accuracy():
    # Subset accuracy moves by whole rows: on 6 labels of 400 reviews, stopping on it kept epoch 1 of 10 (per-label
    # AUC near 0.5), where the loss kept falling (a review's repro; docs/defaults.md).
    Y = np.column_stack([LABELS, ["dog" in text for text in TEXTS], ["red" in text for text in TEXTS]]).astype(int)
    clf = TabFormerClassifier(tokenizer="wordpiece", max_epochs=2, patience=1, **SMALL).fit(TEXTS, Y)
    assert clf.resolved_params_["monitor"] == "valid_loss"
    stopper = dict(clf.callbacks_)["early_stopping"]
    assert stopper.monitor == "valid_loss" and stopper.lower_is_better
    single = TabFormerClassifier(tokenizer="wordpiece", max_epochs=1, patience=1, **SMALL).fit(TEXTS, LABELS)
    assert single.resolved_params_["monitor"] == "valid_acc"  # one label: accuracy, as before
