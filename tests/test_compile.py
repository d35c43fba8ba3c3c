"""``compile=True`` (skorch's ``torch.compile`` option) trains, predicts and saves like eager mode."""

import numpy as np
import pytest
import torch

from tabformer import TabFormerClassifier, load
from tabformer.nn.attention import attention_bias_from_mask
from tabformer.nn.encoder import TransformerEncoder


def test_under_compile_an_all_real_mask_gives_a_zero_bias_with_the_same_output(monkeypatch):
    # the eager shortcut (no bias when every token is real) is a data-dependent branch that
    # would break the compiled graph; the zero bias it is replaced by changes nothing
    torch.manual_seed(0)
    encoder = TransformerEncoder(d_model=16, n_layers=2, n_heads=2, dropout=0.0).eval()
    tokens, mask = torch.randn(3, 5, 16), torch.ones(3, 5, dtype=torch.bool)
    assert attention_bias_from_mask(mask, torch.float32) is None
    eager = encoder(tokens, mask)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    bias = attention_bias_from_mask(mask, torch.float32)
    assert bias.shape == (3, 1, 1, 5) and not bias.any()
    torch.testing.assert_close(encoder(tokens, mask), eager, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_a_compiled_fit_predicts_and_saves_like_eager(table, tmp_path):
    X, y = table
    settings = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=2, random_state=0, verbose=0)
    eager = TabFormerClassifier(**settings).fit(X, y)
    compiled = TabFormerClassifier(compile=True, **settings).fit(X, y)
    assert type(compiled.module_).__name__ == "OptimizedModule"
    np.testing.assert_allclose(compiled.predict_proba(X), eager.predict_proba(X), atol=1e-4)
    compiled.save(tmp_path / "model")
    np.testing.assert_allclose(load(tmp_path / "model").predict_proba(X), compiled.predict_proba(X), atol=1e-5)
