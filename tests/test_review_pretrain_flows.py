"""Review of pretraining handed to supervised estimators, and of checkpoint/resume (found in a review).

Each test failed before its fix: the symptom a user saw is in its docstring.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_table
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.callbacks import TrainingCheckpoint

TINY = dict(encoder__d_model=8, encoder__n_layers=1, encoder__n_heads=2, verbose=0, random_state=0, batch_size=32)


def _table(n=96, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(list("xyz"), n), "c": rng.normal(size=n)})


class _Crash(Callback):
    """Raise in the given epoch after its first training batch (the optimizer has stepped)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_batch_end(self, net, training=False, **kwargs):
        if training and len(net.history) == self.epoch:
            raise RuntimeError("simulated crash")


def _pretrainer(folder, *extra, **params):
    return TabFormerPretrainer(**{**TINY, **params}, callbacks=[("checkpoint", TrainingCheckpoint(folder)), *extra])


def test_a_pretrainer_checkpoint_of_other_rows_of_the_same_length_is_refused(tmp_path):
    """A pretrainer's fit hands skorch a dataset (masks drawn per batch), and the checkpoint hashed only its type and
    length: fitting other rows of the same length into the folder of a finished fit returned the first fit's model,
    trained on none of these rows, silently."""
    params = dict(max_epochs=2, patience=None, validation_fraction=None)
    _pretrainer(tmp_path, **params).fit(_table(seed=0))
    with pytest.raises(ValueError, match="other data"):
        _pretrainer(tmp_path, **params).fit(_table(seed=1))


_IMAGES = np.random.default_rng(0).integers(0, 255, size=(64, 8, 8), dtype=np.uint8)


@pytest.mark.parametrize(
    "data, params",
    [
        ("table", dict(validation_fraction=None)),
        ("table", dict(validation_fraction=0.25)),  # the holdout's masks come from the same generator
        ("images", dict(objective="simclr", tokenizer__patch_size=4, batch_size=16, validation_fraction=None)),
    ],
    ids=["masked-cells", "masked-cells-holdout", "simclr"],
)
def test_a_crashed_pretrainer_fit_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path, data, params):
    """The objective's masks (or SimCLR's views) come from a generator of the dataset, rebuilt from the seed at every
    fit, and the checkpoint did not save it: the resumed epochs drew the first epochs' masks again (training loss 0.80
    where the uninterrupted fit read 1.15) and ended with other weights than the uninterrupted fit, which the docs
    promise."""
    X, params = _table() if data == "table" else _IMAGES, dict(max_epochs=4, patience=None, **params)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _pretrainer(tmp_path / "run", ("crash", _Crash(3)), **params).fit(X)
    resumed = _pretrainer(tmp_path / "run", **params).fit(X)
    assert dict(resumed.callbacks_)["checkpoint"].resumed_epochs_ == 2
    reference = _pretrainer(tmp_path / "reference", **params).fit(X)
    assert resumed.history[:, "train_loss"] == reference.history[:, "train_loss"]
    for key, value in reference.module_.state_dict().items():
        torch.testing.assert_close(resumed.module_.state_dict()[key], value, rtol=0, atol=0, msg=key)


def test_a_checkpoint_of_fine_tuning_from_other_pretrained_weights_is_refused(tmp_path):
    """The checkpoint described ``encoder`` by its type only: fine-tuning from a pretrained encoder B into the folder
    of a finished fine-tuning from encoder A returned A's model, silently, as if B had been fine-tuned."""
    X = _table()
    y = (X["a"] > 0).astype(int).to_numpy()
    first, second = (TabFormerPretrainer(max_epochs=1, **{**TINY, "random_state": seed}).fit(X) for seed in (0, 1))
    params = dict(max_epochs=1, random_state=0, verbose=0, callbacks=[("checkpoint", TrainingCheckpoint(tmp_path))])
    TabFormerClassifier(encoder=first.encoder_, **params).fit(X, y)
    TabFormerClassifier(encoder=first.encoder_, **params).fit(X, y)  # the same weights (a copy) resume
    with pytest.raises(ValueError, match="encoder: PretrainedEncoder"):
        TabFormerClassifier(encoder=second.encoder_, **params).fit(X, y)


def test_a_pretrainer_given_as_encoder_says_to_pass_its_encoder():
    """``encoder=pre`` (the estimator, not ``pre.encoder_``) was refused with sklearn's message, which printed the
    whole repr of the pretrainer's module and not the way out."""
    X = _table()
    pre = TabFormerPretrainer(max_epochs=1, **TINY).fit(X)
    with pytest.raises(ValueError, match=r"encoder=TabFormerPretrainer\(\.\.\.\) is an estimator.*pretrainer\.encoder_") as info:
        TabFormerClassifier(encoder=pre, max_epochs=1, verbose=0).fit(X, (X["a"] > 0).astype(int))
    assert "PretrainingModel" not in str(info.value)


def test_a_tokenizer_name_the_pretrained_encoder_does_not_use_is_refused():
    """With a pretrained ``encoder``, a tokenizer instance was refused but any name was ignored: ``tokenizer="tabular"``
    over an MLM text encoder fitted a classifier with the encoder's WordPiece tokenizer, silently."""
    texts = [" ".join(np.random.default_rng(i).choice(["alpha", "beta", "gamma", "delta"], 5)) for i in range(64)]
    labels = np.arange(64) % 2
    pre = TabFormerPretrainer(tokenizer="wordpiece", max_epochs=1, **TINY).fit(texts)
    with pytest.raises(ValueError, match="tokenizer='tabular', but the pretrained `encoder` brings its own fitted WordPiece"):
        TabFormerClassifier(encoder=pre.encoder_, tokenizer="tabular", max_epochs=1, verbose=0).fit(texts, labels)
    for name in ("auto", "wordpiece"):  # its own kind, by name, is what it is
        TabFormerClassifier(encoder=pre.encoder_, tokenizer=name, max_epochs=1, verbose=0).fit(texts, labels)


def test_objective_settings_set_after_a_fit_reach_the_continued_fit():
    """``set_params(objective__mask_prob=...)`` after a fit was ignored by ``partial_fit`` and a ``warm_start`` fit
    (the fitted ``objective_`` kept its first settings), though the docs promise that parameters set after a fit
    reach the next continued fit. A setting that would change the head built at the first fit is refused."""
    X = _table()
    pre = TabFormerPretrainer(max_epochs=1, **TINY).fit(X)
    center = pre.objective_.center_.copy()
    pre.set_params(objective__mask_prob=1.0).partial_fit(X)
    assert pre.objective_.mask_prob == 1.0
    np.testing.assert_array_equal(pre.objective_.center_, center)  # the fitted standardisation is kept
    pre.set_params(objective__numeric_weight=0.5, warm_start=True).fit(X)
    assert (pre.objective_.mask_prob, pre.objective_.numeric_weight) == (1.0, 0.5)
    with pytest.raises(ValueError, match="objective__tie_weights=False changes the objective's head"):
        pre.set_params(objective__tie_weights=False).partial_fit(X)


def test_a_checkpoint_of_fine_tuning_from_a_folder_whose_weights_were_resaved_is_refused(tmp_path):
    """``encoder="encoder/"`` was compared by its path only: pretraining again into the same folder and rerunning the
    fine-tuning resumed (here: returned) the model fine-tuned from the old weights, silently."""
    X = _table()
    y = (X["a"] > 0).astype(int).to_numpy()
    params = dict(max_epochs=1, random_state=0, verbose=0, callbacks=[("checkpoint", TrainingCheckpoint(tmp_path / "run"))])
    folder = tmp_path / "encoder"
    TabFormerPretrainer(max_epochs=1, **TINY).fit(X).save(folder)
    TabFormerClassifier(encoder=str(folder), **params).fit(X, y)
    TabFormerClassifier(encoder=str(folder), **params).fit(X, y)  # the same folder, untouched, resumes
    TabFormerPretrainer(max_epochs=1, **{**TINY, "random_state": 1}).fit(X).save(folder)
    with pytest.raises(ValueError, match="encoder: .*contents sha256"):
        TabFormerClassifier(encoder=str(folder), **params).fit(X, y)


def test_a_linear_probe_unfrozen_for_fine_tuning_takes_the_fine_tuning_rate():
    """``set_params(freeze_encoder=False)`` on a fitted probe unfroze the encoder but kept the probe recipe's rate: the
    whole pretrained image encoder was fine-tuned at 1e-2, 33 times the fine-tuning recipe's 3e-4. Freezing a
    fine-tuned model takes the probe's rate; a rate the user set is kept."""
    images, labels = _IMAGES, np.arange(len(_IMAGES)) % 2
    pre = TabFormerPretrainer(objective="simclr", tokenizer__patch_size=4, max_epochs=1, **{**TINY, "batch_size": 16})
    encoder = pre.fit(images).encoder_
    probe = TabFormerClassifier(encoder=encoder, freeze_encoder=True, max_epochs=1, verbose=0, random_state=0)
    probe.fit(images, labels)
    fine_tuned = TabFormerClassifier(encoder=encoder, max_epochs=1, verbose=0, random_state=0).fit(images, labels)
    probe_rate, fine_tuning_rate = probe.resolved_params_["lr"], fine_tuned.resolved_params_["lr"]
    assert probe_rate > fine_tuning_rate
    probe.set_params(freeze_encoder=False)
    assert probe.resolved_params_["lr"] == fine_tuning_rate
    assert [group["lr"] for group in probe.optimizer_.param_groups] == [fine_tuning_rate]
    probe.partial_fit(images, labels)
    assert max(row["lr"] for row in probe.history[-1]["batches"]) <= fine_tuning_rate
    fine_tuned.set_params(freeze_encoder=True)
    assert fine_tuned.resolved_params_["lr"] == probe_rate
    mine = TabFormerClassifier(encoder=encoder, freeze_encoder=True, lr=0.05, max_epochs=1, verbose=0).fit(images, labels)
    assert mine.set_params(freeze_encoder=False).resolved_params_["lr"] == 0.05


def test_an_encoder_of_bfloat16_weights_is_fingerprinted():
    """Comparing a warm start's encoder by its weights went through numpy, which has no bfloat16 (a TypeError)."""
    from tabformer._fingerprint import _describe

    layer = torch.nn.Linear(2, 2)
    assert _describe(layer.to(torch.bfloat16)) != _describe(torch.nn.Linear(2, 2).to(torch.bfloat16))


def test_freezing_a_fresh_encoder_is_refused():
    # freeze_embedder refused a randomly initialised embedder; freeze_encoder froze a random encoder without a word.
    X, y = make_table(n=60)
    with pytest.raises(ValueError, match="freeze_encoder=True would freeze a randomly initialised encoder"):
        TabFormerClassifier(freeze_encoder=True, **TINY).fit(X, y)
    fitted = TabFormerClassifier(**TINY, max_epochs=2).fit(X, y)
    with pytest.raises(ValueError, match="freezing would fix randomly initialised weights"):
        fitted.set_params(freeze_encoder=True)
    warm = TabFormerClassifier(encoder=fitted.module_.encoder, freeze_encoder=True, max_epochs=1, verbose=0).fit(X, y)
    assert not any(p.requires_grad for p in warm.module_.encoder.parameters())  # a trained encoder freezes
