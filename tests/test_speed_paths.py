"""The fast paths of issue 18 give the outputs of the plain ones: short keys padded to 16,
CLS-only last layer, per-batch text trimming, lazy ``import tabformer``, the table recipe."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from tabformer import TabFormerClassifier
from tabformer._data import trim_padding
from tabformer.estimators import _inference
from tabformer.nn import TransformerEncoder, attention
from tabformer.nn.attention import MultiHeadSelfAttention, pad_keys
from tabformer.nn.heads import ClassificationHead, TokenClassificationHead
from tabformer.nn.models import TabFormerModel

TOL = dict(rtol=1e-5, atol=2e-6)  # float32 rounding: GEMMs of other shapes sum in another order


def _mask(batch, length, seed=0):
    mask = torch.rand(batch, length, generator=torch.Generator().manual_seed(seed)) > 0.3
    mask[:, 0] = True
    return mask


def test_pad_keys_shapes_and_noop():
    k = v = torch.randn(2, 4, 15, 8)
    k16, v16, bias = pad_keys(k, v, None)
    assert k16.shape == v16.shape == (2, 4, 16, 8) and bias.shape == (1, 1, 1, 16)
    assert bias[..., :15].eq(0).all() and bias[..., 15].item() == torch.finfo(torch.float32).min
    long = torch.randn(2, 4, 16, 8)
    assert pad_keys(long, long, None)[2] is None


@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("train", [False, True])
def test_padded_attention_equals_unpadded(monkeypatch, with_mask, train):
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(32, 4).train(train)
    x = torch.randn(8, 15, 32, requires_grad=True)
    bias = attention.attention_bias_from_mask(_mask(8, 15), x.dtype) if with_mask else None
    padded, _ = layer(x, bias)
    (grad_padded,) = torch.autograd.grad(padded.square().sum(), x)
    monkeypatch.setattr(attention, "pad_keys", lambda k, v, b, length=16: (k, v, b))
    plain, _ = layer(x, bias)
    (grad_plain,) = torch.autograd.grad(plain.square().sum(), x)
    torch.testing.assert_close(padded, plain, **TOL)
    torch.testing.assert_close(grad_padded, grad_plain, **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_cls_only_last_layer_equals_full_cls(norm_first, with_mask):
    torch.manual_seed(0)
    encoder = TransformerEncoder(d_model=32, n_layers=3, n_heads=4, norm_first=norm_first).eval()
    tokens, mask = torch.randn(16, 20, 32), (_mask(16, 20) if with_mask else None)
    cls = encoder(tokens, mask, cls_only=True)
    assert cls.shape == (16, 1, 32)
    torch.testing.assert_close(cls, encoder(tokens, mask)[:, :1], **TOL)


def test_cls_only_with_grouped_layers():
    torch.manual_seed(0)
    encoder = TransformerEncoder(d_model=16, n_layers=2, n_heads=2).eval()
    tokens, mask, groups = torch.randn(4, 6, 16), _mask(4, 6), torch.tensor([0, 0, 0, 1, 1, 1])
    full = encoder(tokens, mask, token_groups=groups, grouped_layers=2)
    torch.testing.assert_close(encoder(tokens, mask, token_groups=groups, grouped_layers=2, cls_only=True), full[:, :1], **TOL)


class _Embedder(torch.nn.Module):
    def forward(self, x):
        return x, None


def test_model_uses_cls_only_for_cls_heads_only():
    torch.manual_seed(0)
    encoder = TransformerEncoder(d_model=16, n_layers=2, n_heads=2).eval()
    x = torch.randn(4, 9, 16)
    for head, expected in [
        (ClassificationHead(16, 3), True),
        (ClassificationHead(16, 3, pooling="mean"), False),
        (TokenClassificationHead(16, 3), False),
    ]:
        model = TabFormerModel(_Embedder(), encoder, head).eval()
        assert getattr(head, "reads_cls_only", False) is expected
        hidden = encoder(x)
        reference = head(hidden) if not getattr(head, "uses_mask", False) else head(hidden, None)
        torch.testing.assert_close(model(x=x), reference, **TOL)


def test_trim_padding_cuts_each_segment_to_its_longest_row():
    batch = {
        "input_ids": torch.tensor([[5, 6, 7, 0, 0], [5, 0, 0, 0, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]),
        "word_ids": torch.tensor([[0, 1, 2, -1, -1], [0, -1, -1, -1, -1]]),
        "text/input_ids": torch.tensor([[5, 0, 0], [5, 6, 0]]),
        "text/attention_mask": torch.tensor([[1, 0, 0], [1, 1, 0]]),
        "table/num_values": torch.zeros(2, 5),
    }
    out = trim_padding(batch)
    assert out["input_ids"].tolist() == [[5, 6, 7], [5, 0, 0]] and out["word_ids"].shape == (2, 3)
    assert out["text/input_ids"].shape == (2, 2) and out["text/attention_mask"].shape == (2, 2)
    assert out["table/num_values"].shape == (2, 5)  # not a text array: left alone


def _tiny_text_classifier(texts, y):
    """A one-layer text classifier fitted for one epoch in batches of 4 (a fast fixture, not a model)."""
    settings = dict(tokenizer__vocab_size=60, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, max_epochs=1)
    return TabFormerClassifier(batch_size=4, validation_fraction=None, random_state=0, verbose=0, **settings).fit(texts, y)


def test_text_predictions_equal_with_per_batch_trimming(monkeypatch):
    texts = ["a good film"] * 6 + ["bad"] * 6 + ["a very long and rather tedious film that goes on and on and on"] * 2
    y = ["pos"] * 6 + ["neg"] * 8
    net = _tiny_text_classifier(texts, y)
    net.set_params(iterator_valid__batch_size=4)  # several inference batches
    trimmed = net.predict_proba(texts)
    monkeypatch.setattr(_inference, "trim_padding", lambda batch: batch)
    np.testing.assert_allclose(trimmed, net.predict_proba(texts), rtol=1e-5, atol=1e-6)


def test_text_is_batched_by_length_at_inference_and_outputs_keep_row_order(monkeypatch):
    rng = np.random.default_rng(0)
    words = ["good", "bad", "film", "plot", "long", "dull", "fine", "actor"]
    texts = [" ".join(rng.choice(words, size=n)) for n in rng.integers(1, 12, size=30)]
    y = ["pos" if "good" in t or "fine" in t else "neg" for t in texts]
    net = _tiny_text_classifier(texts, y)
    net.set_params(iterator_valid__batch_size=4)
    widths = []
    forward = net.module_.forward
    net.module_.forward = lambda **inputs: widths.append(inputs["attention_mask"].shape[1]) or forward(**inputs)
    sorted_proba = net.predict_proba(texts)
    assert widths == sorted(widths) and len(widths) == 8  # shortest texts first, each batch trimmed
    one_by_one = np.concatenate([net.predict_proba([text]) for text in texts])
    np.testing.assert_allclose(sorted_proba, one_by_one, rtol=1e-5, atol=1e-6)  # back in row order
    monkeypatch.setattr(_inference, "_length_order", lambda tokens: None)
    widths.clear()
    np.testing.assert_allclose(net.predict_proba(texts), sorted_proba, rtol=1e-5, atol=1e-6)
    assert widths != sorted(widths)  # unsorted, the widths follow the rows


def _run_fresh(code: str, *args: str) -> None:
    """``code`` in a fresh interpreter (what a new process imports), failing the test if it fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-W", "ignore", "-c", code, *args], check=True, env=env)


def test_import_tabformer_is_lazy():
    code = (
        "import sys, tabformer; assert 'torch' not in sys.modules, 'torch imported'; "
        "assert tabformer.TabFormerClassifier.__name__ == 'TabFormerClassifier'; "
        "assert callable(tabformer.datasets.load_adult); "
        "assert 'TabFormerClassifier' in dir(tabformer)"
    )
    _run_fresh(code)
    import tabformer

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tabformer.nothing_here  # noqa: B018


def test_a_table_model_fits_saves_and_loads_without_importing_torchvision(tmp_path):
    # Only images need torchvision (seconds to import); tabformer.load of a table model imported it
    # through the pretrainers' SimCLR views.
    code = (
        "import sys, numpy as np, pandas as pd, tabformer\n"
        "X = pd.DataFrame({'a': np.arange(40.0), 'b': list('xy') * 20})\n"
        "tabformer.TabFormerClassifier(max_epochs=1, verbose=0).fit(X, [0, 1] * 20).save(sys.argv[1])\n"
        "tabformer.load(sys.argv[1]).predict(X)\n"
        "assert 'torchvision' not in sys.modules, 'torchvision imported'\n"
    )
    _run_fresh(code, str(tmp_path / "model"))


def test_table_recipe_has_no_attention_dropout():
    X = pd.DataFrame({"a": np.arange(40.0), "b": list("xy") * 20})
    net = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, [0, 1] * 20)
    assert net.resolved_params_["encoder__attention_dropout"] == 0.0
    assert net.module_.encoder.layers[0].attention.attention_dropout == 0.0
    explicit = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0, encoder__attention_dropout=0.2).fit(X, [0, 1] * 20)
    assert explicit.module_.encoder.layers[0].attention.attention_dropout == 0.2
