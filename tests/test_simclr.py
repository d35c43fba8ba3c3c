"""SimCLR objective: NT-Xent against numpy, fresh views, training, and warm starts."""

import copy

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader

from tabformer import PretrainedEncoder, TabFormerClassifier, TransformerEncoder
from tabformer.nn.models import PretrainingModel
from tabformer.pretraining import OBJECTIVES
from tabformer.pretraining.losses import nt_xent_loss
from tabformer.pretraining.simclr import SimCLR
from tabformer.tokenizers import PatchTokenizer


def nt_xent_numpy(z1, z2, temperature):
    """Reference: the SimCLR paper's l(i, j) averaged over all 2N anchors, one by one."""
    z = np.concatenate([z1, z2]).astype(np.float64)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    n = len(z1)
    losses = []
    for i in range(2 * n):
        j = (i + n) % (2 * n)
        sims = np.array([z[i] @ z[k] / temperature for k in range(2 * n)])
        denominator = sum(np.exp(sims[k]) for k in range(2 * n) if k != i)
        losses.append(-np.log(np.exp(sims[j]) / denominator))
    return float(np.mean(losses))


@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("batch", [2, 7])
def test_nt_xent_matches_numpy_reference(temperature, batch):
    rng = np.random.default_rng(batch)
    z1, z2 = rng.normal(size=(batch, 5)), rng.normal(size=(batch, 5))
    ours = nt_xent_loss(torch.tensor(z1), torch.tensor(z2), temperature)
    assert float(ours) == pytest.approx(nt_xent_numpy(z1, z2, temperature), rel=1e-5)


def test_nt_xent_rewards_matching_views_and_rejects_tiny_batches():
    z = torch.randn(8, 4)
    assert nt_xent_loss(z, z + 0.01 * torch.randn(8, 4)) < nt_xent_loss(z, torch.randn(8, 4))
    with pytest.raises(ValueError, match="at least 2"):
        nt_xent_loss(z[:1], z[:1])


class _Loss(torch.nn.Module):
    """The pretraining model with the objective's loss on top, as TabFormerPretrainer.get_loss scores it."""

    def __init__(self, model, objective):
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, **inputs):
        return self.objective.loss(self.model(**inputs))


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:96], data.target[:96]


@pytest.fixture
def setup(digits):
    torch.manual_seed(0)
    tokenizer = PatchTokenizer(patch_size=4).fit(digits[0])
    encoder = TransformerEncoder(d_model=16, n_layers=1, n_heads=2, attention_dropout=0.0)
    # Mild views: a 1-layer d=16 model learns the full 8x8 recipe too slowly for a unit test.
    objective = OBJECTIVES["simclr"](crop_scale=(0.6, 1.0), jitter_p=0.0, blur_p=0.0, projection_dim=8)
    embedder = tokenizer.build_embedder(16)
    model = PretrainingModel(embedder, encoder, objective.build_head(tokenizer, embedder, 16))
    module = _Loss(model, objective)
    dataset = objective.make_dataset(tokenizer.transform(digits[0]), tokenizer, random_state=0)
    return tokenizer, objective, module, dataset


def test_registered_and_views_are_fresh_reproducible_augmentations(setup, digits):
    tokenizer, objective, _, dataset = setup
    assert OBJECTIVES["simclr"] is SimCLR and SimCLR.drop_last
    (first, _), (again, _) = dataset[3], dataset[3]
    assert first["view1/pixels"].shape == (1, 8, 8)
    assert not torch.equal(first["view1/pixels"], first["view2/pixels"])  # two different views
    assert not torch.equal(first["view1/pixels"], again["view1/pixels"])  # new views at every access
    assert float(first["view1/pixels"].min()) >= 0 and float(first["view1/pixels"].max()) <= 1
    twin = objective.make_dataset(tokenizer.transform(digits[0]), tokenizer, random_state=0)
    torch.testing.assert_close(twin[3][0]["view1/pixels"], first["view1/pixels"])  # seeded
    with pytest.raises(TypeError, match="PatchTokenizer"):
        objective.make_dataset({"pixels": np.zeros((2, 1, 8, 8))}, object(), 0)


def test_colour_augmentations_include_grayscale():
    colour = PatchTokenizer(patch_size=4).fit(np.random.default_rng(0).random((4, 8, 8, 3)))
    names = [type(t).__name__ for t in SimCLR(grayscale_p=0.3).make_transform(colour).transforms]
    assert "RandomGrayscale" in names and "RandomResizedCrop" in names
    grey = PatchTokenizer(patch_size=4).fit(np.zeros((4, 8, 8)))
    assert "RandomGrayscale" not in [type(t).__name__ for t in SimCLR().make_transform(grey).transforms]


def _train(module, dataset, steps, batch_size=32, lr=3e-3):
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=SimCLR.drop_last)
    optimizer = torch.optim.AdamW(module.parameters(), lr=lr)
    module.train()
    done = 0
    while done < steps:
        for inputs, _ in loader:
            assert len(inputs["view1/pixels"]) == batch_size  # the last small batch was dropped
            loss = module(**inputs)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            if done == steps:
                break


def _fixed_loss(module, dataset):
    fixed = torch.utils.data.default_collate(copy.deepcopy(dataset).__getitems__(range(64)))[0]
    module.eval()
    with torch.no_grad():
        return float(module(**fixed))


def test_a_few_steps_reduce_the_contrastive_loss(setup):
    _, _, module, dataset = setup
    before = _fixed_loss(module, dataset)
    _train(module, dataset, steps=45)
    after = _fixed_loss(module, dataset)
    assert after < before - 0.1, (before, after)


def _pretrained(setup):
    tokenizer, _, module, dataset = setup
    _train(module, dataset, steps=6)
    return PretrainedEncoder(tokenizer, module.model.embedder, module.model.encoder)


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_frozen_encoder_keeps_pretrained_weights_and_trains_head(setup, digits, tiny):
    pretrained = _pretrained(setup)
    snapshot = copy.deepcopy(pretrained)
    clf = TabFormerClassifier(encoder=pretrained, freeze_encoder=True, random_state=0, **tiny).fit(*digits)
    assert _same(clf.module_.encoder, pretrained.encoder)
    assert clf.module_.encoder is not pretrained.encoder
    assert not any(p.requires_grad for p in clf.module_.encoder.parameters())
    head_params = [p for p in clf.module_.head.parameters()]
    assert any(p.grad is not None for p in head_params)
    assert _same(pretrained, snapshot)  # the user's module is never modified


def test_fine_tuning_starts_from_pretrained_weights_and_moves_them(setup, digits, tiny):
    pretrained = _pretrained(setup)
    X, y = digits
    start = TabFormerClassifier(encoder=pretrained, lr=0.0, random_state=0, **tiny).fit(X, y)
    assert _same(start.module_.encoder, pretrained.encoder) and _same(start.module_.embedder, pretrained.embedder)
    with torch.no_grad():
        expected = pretrained.encoder(
            *pretrained.embedder(pixels=torch.from_numpy(pretrained.tokenizer.transform(X[:4])["pixels"]))
        )[:, 0]
    np.testing.assert_allclose(start.forward_features(X[:4]), expected.numpy(), rtol=1e-5, atol=1e-6)
    tuned = TabFormerClassifier(encoder=pretrained, lr=1e-2, random_state=0, **tiny).fit(X, y)
    assert not _same(tuned.module_.encoder, pretrained.encoder)
