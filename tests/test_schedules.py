"""Learning-rate schedules: BERT's warm-up + linear decay, and accuracy-based early stopping."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.callbacks import WarmupLinearLR


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.choice(["x", "y", "z"], size=120)})
    y = (X["a"] > 0).astype(int).to_numpy()
    return X, y


def _small(**params):
    return TabFormerClassifier(
        encoder__d_model=16,
        encoder__n_layers=1,
        encoder__n_heads=2,
        batch_size=16,
        random_state=0,
        verbose=0,
        **params,
    )


def _batch_lrs(net):
    return [b["lr"] for epoch in net.history for b in epoch["batches"] if "lr" in b]


def test_warmup_linear_rises_then_falls_to_zero(table):
    X, y = table
    net = _small(
        lr=1e-2, max_epochs=5, lr_schedule="warmup_linear", validation_fraction=None, callbacks__lr_scheduler__warmup=0.2
    ).fit(X, y)
    lrs = np.array(_batch_lrs(net))
    steps = 5 * int(np.ceil(len(X) / 16))
    assert len(lrs) == steps
    peak = int(np.argmax(lrs))
    assert peak == int(np.ceil(0.2 * steps))  # first step after the warm-up share
    assert np.all(np.diff(lrs[: peak + 1]) > 0) and np.all(np.diff(lrs[peak:]) < 0)
    assert lrs.max() == pytest.approx(1e-2) and lrs[0] < 2e-3 and lrs[-1] < 1e-3
    # fit leaves the optimizer at the peak, so partial_fit starts a fresh cycle
    assert net.optimizer_.param_groups[0]["lr"] == pytest.approx(1e-2)


def test_warmup_zero_starts_at_peak(table):
    X, y = table
    net = _small(
        lr=1e-2, max_epochs=2, lr_schedule="warmup_linear", validation_fraction=None, callbacks__lr_scheduler__warmup=0.0
    ).fit(X, y)
    lrs = _batch_lrs(net)
    assert lrs[0] == pytest.approx(1e-2) and lrs[-1] < lrs[0] / 5


def test_warmup_share_is_validated(table):
    X, y = table
    with pytest.raises(ValueError, match="warmup must be"):
        _small(lr_schedule="warmup_linear", callbacks__lr_scheduler__warmup=1.5).fit(X, y)
    with pytest.raises(ValueError, match="warmup_linear"):
        _small(lr_schedule="linear").fit(X, y)
    # set_params only stores (sklearn's contract), also on a fitted net; fit refuses
    net = _small(max_epochs=1).fit(X, y).set_params(lr_schedule="linear")
    assert net.lr_schedule == "linear"
    with pytest.raises(ValueError, match="'lr_schedule' parameter of TabFormerClassifier must be"):
        net.fit(X, y)
    from tabformer import TabFormerPretrainer

    with pytest.raises(ValueError, match="'lr_schedule' parameter of TabFormer[A-Za-z]* must be"):
        TabFormerPretrainer(lr_schedule="linear", max_epochs=1, verbose=0).fit(["a b c", "b c d"] * 8)


def test_factor_is_piecewise_linear():
    schedule = WarmupLinearLR(warmup=0.25).initialize()
    schedule.total_steps_ = 8
    factors = [schedule.factor(step) for step in range(8)]
    assert factors[:3] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert factors[2:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])


def test_early_stopping_can_watch_accuracy(table):
    X, y = table
    net = _small(
        max_epochs=40,
        patience=2,
        lr=3e-3,
        callbacks__early_stopping__monitor="valid_acc",
        callbacks__early_stopping__lower_is_better=False,
    ).fit(X, y)
    stopper = dict(net.callbacks_)["early_stopping"]
    assert stopper.monitor == "valid_acc"
    # It stopped `patience` epochs after the best *accuracy*, whatever the loss did.
    accuracies = net.history[:, "valid_acc"]
    assert len(accuracies) < 40
    best = int(np.argmax(accuracies))
    assert len(accuracies) - 1 - best == 2
    assert net.history[best, "valid_acc_best"]


def test_early_stopping_reads_the_direction_from_the_monitored_name(table):
    from tabformer.callbacks import higher_is_better

    assert [higher_is_better(name) for name in ("valid_acc", "valid_f1", "valid_r2", "train_loss", "valid_mse")] == [
        True, True, True, False, False
    ]  # fmt: skip
    with pytest.raises(ValueError, match="'valid_mcc'.*lower_is_better"):
        higher_is_better("valid_mcc")
    X, y = table
    # a text recipe watches accuracy; naming only the loss must not keep the worst-loss epoch
    net = _small(max_epochs=6, patience=2, lr=3e-3, callbacks__early_stopping__monitor="valid_acc").fit(X, y)
    assert dict(net.callbacks_)["early_stopping"].lower_is_better_ is False
    net.set_params(callbacks__early_stopping__monitor="valid_loss").fit(X, y)
    stopper = dict(net.callbacks_)["early_stopping"]
    assert stopper.lower_is_better_ is True
    losses = net.history[:, "valid_loss"]
    assert stopper.best_epoch_ == int(np.argmin(losses)) + 1
    net.set_params(callbacks__early_stopping__monitor="valid_mcc")
    with pytest.raises(ValueError, match="valid_mcc"):
        net.fit(X, y)
    net.set_params(callbacks__early_stopping__monitor="valid_loss", callbacks__early_stopping__lower_is_better=False)
    net.fit(X, y)  # an explicit direction wins, even a strange one
    assert dict(net.callbacks_)["early_stopping"].lower_is_better_ is False


# ------------------------------------------------------------------ length grouping
def test_length_grouped_batches_cover_every_row_once():
    import torch

    from tabformer._data import LengthGroupedBatchSampler

    lengths = torch.randint(1, 60, (203,))
    torch.manual_seed(0)
    sampler = LengthGroupedBatchSampler(lengths, batch_size=10, window=4)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 21
    assert sorted(i for batch in batches for i in batch) == list(range(203))
    padded = sum(len(b) * int(lengths[b].max()) for b in batches)
    random_padded = sum(len(b) * int(lengths[b].max()) for b in torch.randperm(203).split(10))
    assert padded < 0.8 * random_padded
    dropped = list(LengthGroupedBatchSampler(lengths, batch_size=10, drop_last=True, window=4))
    assert len(dropped) == 20 and all(len(b) == 10 for b in dropped)


def test_group_by_length_fits_text_and_repeats(tmp_path):
    from tabformer.tokenizers import WordPieceTokenizer

    texts = ["good film " * (i % 7 + 1) if i % 2 else "bad plot and dull " * (i % 5 + 1) for i in range(80)]
    labels = np.array([i % 2 for i in range(80)])
    # A fixed vocabulary: WordPiece training itself does not repeat exactly (tokenizers#1794).
    vocab = WordPieceTokenizer(vocab_size=60).fit(texts).save_vocabulary(tmp_path / "vocab.txt")
    params = dict(tokenizer="wordpiece", tokenizer__vocab_file=vocab, lr=3e-3, max_epochs=3, iterator_train__group_by_length=2)
    first = _small(**params).fit(texts, labels)
    second = _small(**params).fit(texts, labels)
    np.testing.assert_allclose(first.predict_proba(texts), second.predict_proba(texts))
    assert (
        first.history[-1, "train_loss"]
        != _small(**dict(params, iterator_train__group_by_length=False)).fit(texts, labels).history[-1, "train_loss"]
    )


def test_group_by_length_needs_token_sequences(table):
    X, y = table
    with pytest.raises(ValueError, match="group_by_length needs token sequences"):
        _small(iterator_train__group_by_length=True, max_epochs=1).fit(X, y)
