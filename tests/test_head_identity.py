"""``head__activation="identity"``: a head with no nonlinearity, so that a probe over a frozen
encoder is linear in the strict sense (docs/defaults.md, "Linear probes")."""

import pytest
import torch
from conftest import TINY, make_table
from torch import nn

from tabformer import TabFormerClassifier
from tabformer.nn.heads import ClassificationHead, RegressionHead


@pytest.mark.parametrize("head_class", [ClassificationHead, RegressionHead])
def test_an_identity_head_is_affine_after_its_layernorm(head_class):
    torch.manual_seed(0)
    head = head_class(8, 3, activation="identity").eval()
    assert not any(isinstance(m, (nn.ReLU, nn.GELU)) for m in head.modules())
    after_norm = head.net[1:]  # everything the LayerNorm feeds
    u, v = torch.randn(5, 8), torch.randn(5, 8)
    mixed = after_norm(0.3 * u + 0.7 * v)
    assert torch.allclose(mixed, 0.3 * after_norm(u) + 0.7 * after_norm(v), atol=1e-6)
    # the ReLU head is not: negative inputs are cut
    relu = head_class(8, 3).eval().net[1:]
    assert not torch.allclose(relu(0.3 * u + 0.7 * v), 0.3 * relu(u) + 0.7 * relu(v), atol=1e-4)


def test_an_unknown_head_activation_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"\['gelu', 'identity', 'relu'\], got 'tanh'"):
        ClassificationHead(8, 3, activation="tanh")


def test_head_activation_identity_routes_through_a_classifier_fit():
    X, y = make_table(n=80)
    clf = TabFormerClassifier(**TINY, head__activation="identity", random_state=0).fit(X, y)
    assert not any(isinstance(m, (nn.ReLU, nn.GELU)) for m in clf.module_.head.modules())
    assert clf.predict(X).shape == (len(y),)
