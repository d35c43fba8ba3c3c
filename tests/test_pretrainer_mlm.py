"""TabFormerPretrainer with the masked-token objective, and its objective protocol."""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from torch import nn

from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerPretrainer, TabFormerTagger
from tabformer.nn.heads import IGNORE_INDEX
from tabformer.pretraining import OBJECTIVES, register_objective
from tabformer.pretraining.views import MaskedTokenDataset
from tabformer.tokenizers.base import MASK, PAD, SEP

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log", "red", "big", "small", "quickly", "slowly", "house", "tree"]
RNG = np.random.default_rng(0)
TEXTS = [" ".join(RNG.choice(WORDS, size=RNG.integers(4, 9))) for _ in range(60)]
SMALL = dict(
    tokenizer__vocab_size=60,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    encoder__attention_dropout=0.0,
    batch_size=16,
    verbose=0,
    random_state=0,
)


def test_masking_follows_bert_80_10_10():
    n, length, vocab = 400, 50, 1000
    ids = np.random.default_rng(1).integers(5, vocab, size=(n, length))
    ids[:, -1] = SEP
    ids[:, -10:-1][:100] = PAD
    mask = ids != PAD
    dataset = MaskedTokenDataset({"input_ids": ids, "attention_mask": mask}, vocab, random_state=0)
    X, _ = dataset.__getitems__(list(range(n)))
    labels, corrupted = X["mlm_labels"].numpy(), X["input_ids"].numpy()
    chosen = labels != IGNORE_INDEX
    eligible = mask & (ids >= 5)
    assert not chosen[~eligible].any()  # never [SEP] or padding
    assert chosen.sum() / eligible.sum() == pytest.approx(0.15, abs=0.01)
    assert (labels[chosen] == ids[chosen]).all()
    as_mask = (corrupted[chosen] == MASK).mean()
    unchanged = (corrupted[chosen] == ids[chosen]).mean()
    assert as_mask == pytest.approx(0.8, abs=0.02)
    assert unchanged == pytest.approx(0.1 + 0.1 / vocab, abs=0.02)
    assert (corrupted[~chosen] == ids[~chosen]).all()
    # a fresh draw at every access
    again = dataset.__getitems__(list(range(n)))[0]["mlm_labels"].numpy()
    assert (again != labels).any()


def test_pretrainer_learns_and_transforms():
    pre = TabFormerPretrainer(objective="mlm", max_epochs=12, lr=3e-3, validation_fraction=None, **SMALL)
    with pytest.raises(NotFittedError):
        pre.transform(TEXTS)
    pre.fit(TEXTS)
    losses = pre.history_[:, "train_loss"]
    assert losses[-1] < losses[0] - 0.3
    embeddings = pre.transform(TEXTS[:5])
    assert embeddings.shape == (5, 16) and embeddings.dtype == np.float32
    assert np.isfinite(pre.score(TEXTS))
    encoder = pre.encoder_
    assert isinstance(encoder, PretrainedEncoder) and encoder.d_model == 16


def test_encoder_warm_starts_classifier_and_tagger():
    pre = TabFormerPretrainer(objective="mlm", max_epochs=2, validation_fraction=None, **SMALL).fit(TEXTS)
    encoder = pre.encoder_
    labels = ["cat" if "cat" in t else "other" for t in TEXTS]
    clf = TabFormerClassifier(encoder=encoder, max_epochs=2, validation_fraction=None, verbose=0).fit(TEXTS, labels)
    # the classifier reuses the pretrained vocabulary and starts from its weights
    assert clf.tokenizer_.tokenizer_json_ == pre.tokenizer_.tokenizer_json_
    frozen = TabFormerClassifier(encoder=encoder, freeze_encoder=True, max_epochs=2, validation_fraction=None, verbose=0).fit(
        TEXTS, labels
    )
    for got, want in zip(frozen.module_.encoder.parameters(), encoder.encoder.parameters()):
        torch.testing.assert_close(got, want)
    assert any(not torch.equal(a, b) for a, b in zip(clf.module_.encoder.parameters(), encoder.encoder.parameters()))
    sentences = [t.split() for t in TEXTS]
    tags = [["B-ANI" if w in ("cat", "dog") else "O" for w in s] for s in sentences]
    tagger = TabFormerTagger(encoder=encoder, max_epochs=2, validation_fraction=None, verbose=0).fit(sentences, tags)
    assert [len(p) for p in tagger.predict(sentences[:3])] == [len(s) for s in sentences[:3]]


def test_freeze_embedder_trains_only_the_head():
    pre = TabFormerPretrainer(objective="mlm", max_epochs=2, validation_fraction=None, **SMALL).fit(TEXTS)
    encoder = pre.encoder_
    labels = ["cat" if "cat" in t else "other" for t in TEXTS]
    probe = TabFormerClassifier(
        encoder=encoder,
        freeze_encoder=True,
        freeze_embedder=True,
        max_epochs=2,
        validation_fraction=None,
        verbose=0,
    ).fit(TEXTS, labels)
    for got, want in zip(probe.module_.embedder.parameters(), encoder.embedder.parameters()):
        torch.testing.assert_close(got, want)
    for got, want in zip(probe.module_.encoder.parameters(), encoder.encoder.parameters()):
        torch.testing.assert_close(got, want)
    trainable = {name.split(".")[0] for name, p in probe.module_.named_parameters() if p.requires_grad}
    assert trainable == {"head"}
    probe.module_.train()
    assert not probe.module_.embedder.training and probe.module_.head.training
    # frozen embeddings, trained encoder: the encoder moves, the word embeddings do not
    static = TabFormerClassifier(encoder=encoder, freeze_embedder=True, max_epochs=2, validation_fraction=None, verbose=0).fit(
        TEXTS, labels
    )
    torch.testing.assert_close(static.module_.embedder.word_embeddings.weight, encoder.embedder.word_embeddings.weight)
    assert any(not torch.equal(a, b) for a, b in zip(static.module_.encoder.parameters(), encoder.encoder.parameters()))
    with pytest.raises(ValueError, match="freeze_embedder=True would freeze a randomly initialised embedder"):
        TabFormerClassifier(freeze_embedder=True, max_epochs=1, **SMALL).fit(TEXTS, labels)


def test_pretrainer_is_a_pipeline_transformer():
    pipe = make_pipeline(TabFormerPretrainer(max_epochs=1, validation_fraction=None, **SMALL), LogisticRegression())
    labels = ["cat" if "cat" in t else "other" for t in TEXTS]
    assert 0 <= pipe.fit(TEXTS, labels).score(TEXTS, labels) <= 1


def test_objective_errors_are_clear():
    with pytest.raises(ValueError, match="unknown objective 'nope'"):
        TabFormerPretrainer(objective="nope", **SMALL).fit(TEXTS)
    with pytest.raises(ValueError, match="objective__mask_prob"):
        TabFormerPretrainer(objective__mask_prob=1.5, max_epochs=1, **SMALL).fit(TEXTS)


def test_any_registered_objective_plugs_in():
    """The pretrainer knows nothing about MLM: a new objective only registers itself."""

    class MeanHead(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(d_model))

        def forward(self, embedder, encoder, input_ids, attention_mask, **_):
            tokens, mask = embedder(input_ids=input_ids, attention_mask=attention_mask)
            return encoder(tokens, mask)[:, 0] * self.scale

    @register_objective("test-mean")
    class MeanObjective:
        drop_last = True

        def __init__(self, scale=1.0):
            self.scale = scale

        def make_dataset(self, batch, tokenizer, random_state=None):
            from tabformer._data import TensorDictDataset

            return TensorDictDataset(batch)

        def build_head(self, tokenizer, embedder, d_model):
            return MeanHead(d_model)

        def loss(self, cls):
            return self.scale * cls.pow(2).mean()

    try:
        pre = TabFormerPretrainer(
            objective="test-mean", objective__scale=2.0, max_epochs=2, validation_fraction=None, **SMALL
        ).fit(TEXTS)
        assert pre.objective_.scale == 2.0
        assert pre.transform(TEXTS[:2]).shape == (2, 16)
        # drop_last: 60 rows at batch 16 make 3 full batches per epoch
        assert len(pre.history_[-1, "batches"]) == 3
    finally:
        OBJECTIVES.pop("test-mean", None)


def test_transform_pooling_options():
    pre = TabFormerPretrainer(objective="mlm", max_epochs=1, validation_fraction=None, pooling="cls+mean", **SMALL).fit(TEXTS)
    texts = [TEXTS[0], TEXTS[1] + " " + TEXTS[2]]  # different lengths: padding in the first row
    both = pre.transform(texts)
    d = pre.module_.encoder.d_model
    assert both.shape == (2, 2 * d) and len(pre.get_feature_names_out()) == 2 * d
    np.testing.assert_allclose(both[:, :d], pre.forward_features(texts), atol=1e-6)
    # The mean over CLS and real tokens ignores padding: a row alone gives the same mean.
    np.testing.assert_allclose(both[0, d:], pre.transform(texts[:1])[0, d:], atol=1e-5)
    with pytest.raises(ValueError, match="'pooling' parameter of TabFormerPretrainer must be a str among"):
        TabFormerPretrainer(pooling="max", **SMALL).fit(TEXTS)
