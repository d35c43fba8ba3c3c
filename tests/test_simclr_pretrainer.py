"""TabFormerPretrainer(objective="simclr") end to end on images."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from tabformer import TabFormerClassifier, TabFormerPretrainer
from tabformer.pretraining.simclr import ContrastiveHead

TINY = dict(
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    batch_size=32,
    verbose=0,
    objective__blur_p=0.0,
    tokenizer__patch_size=4,
)


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:128], data.target[:128]


def test_fit_without_labels_then_transform_gives_cls_embeddings(digits):
    X, _ = digits
    pre = TabFormerPretrainer(objective="simclr", max_epochs=2, random_state=0, **TINY).fit(X)
    assert isinstance(pre.module_.head, ContrastiveHead)
    assert pre.objective_.blur_p == 0.0  # objective__* parameters reach the objective
    embeddings = pre.transform(X[:10])
    assert embeddings.shape == (10, 16) and np.isfinite(embeddings).all()
    assert len(pre.history_) == 2 and np.isfinite(pre.history_[-1, "train_loss"])
    views = pre.objective_.make_dataset(pre.tokenizer_.transform(X), pre.tokenizer_, 0)
    assert pre.get_iterator(views, training=True).drop_last  # SimCLR trains on full batches only
    assert not pre.get_iterator(views, training=False).drop_last
    # the embeddings are the encoder's CLS output, not the projection head's
    pre.module_.eval()
    with torch.no_grad():
        cls = pre.module_.forward_features(pixels=torch.from_numpy(pre.tokenizer_.transform(X[:10])["pixels"]))[:, 0]
    np.testing.assert_allclose(embeddings, cls.numpy(), rtol=1e-5, atol=1e-6)


def test_linear_probe_pipeline_and_warm_start(digits):
    X, y = digits
    probe = make_pipeline(
        TabFormerPretrainer(objective="simclr", max_epochs=1, random_state=0, **TINY), LogisticRegression(max_iter=200)
    )
    assert probe.fit(X, y).predict(X[:5]).shape == (5,)
    pre = probe[0]
    clf = TabFormerClassifier(encoder=pre.encoder_, freeze_encoder=True, max_epochs=1, verbose=0, random_state=0).fit(X, y)
    pretrained = pre.encoder_.encoder.state_dict()
    assert all(torch.equal(pretrained[k], v) for k, v in clf.module_.encoder.state_dict().items())
