"""Device and mixed-precision paths. CUDA tests skip cleanly without a GPU."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from tabformer import TabFormerClassifier
from tabformer.callbacks import MixedPrecision

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:64], data.target[:64]


def test_mixed_precision_autocasts_training_batches_only(digits, tiny):
    X, y = digits
    seen = []
    clf = TabFormerClassifier(tokenizer="patch", callbacks=[MixedPrecision("bf16")], random_state=0, **dict(tiny, max_epochs=1))
    clf.fit(X, y)
    clf.module_.head.net[-1].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    clf.partial_fit(X, y)
    assert torch.bfloat16 in seen and torch.float32 in seen  # training batches autocast (CPU bf16), validation not
    assert not torch.is_autocast_enabled("cpu")  # and the context was closed afterwards
    seen.clear()
    assert clf.predict_proba(X[:4]).dtype == np.float32
    with pytest.raises(ValueError, match="dtype must be one of"):
        TabFormerClassifier(tokenizer="patch", callbacks=[MixedPrecision("int8")], **tiny).fit(X, y)


@needs_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("precision", [None, "bf16"])
def test_patch_classifier_on_cuda(digits, tiny, precision):
    X, y = digits
    callbacks = [MixedPrecision(precision)] if precision else None
    clf = TabFormerClassifier(tokenizer="patch", device="cuda", callbacks=callbacks, random_state=0, **tiny).fit(X, y)
    assert next(clf.module_.parameters()).device.type == "cuda"
    assert clf.predict_proba(X[:8]).shape == (8, 10)
    assert clf.forward_features(X[:8]).shape == (8, tiny["encoder__d_model"])


@needs_cuda
@pytest.mark.cuda
def test_simclr_pretrainer_on_cuda(digits):
    from tabformer import TabFormerPretrainer

    pre = TabFormerPretrainer(
        objective="simclr",
        device="cuda",
        callbacks=[MixedPrecision("bf16")],
        max_epochs=1,
        batch_size=32,
        encoder__d_model=16,
        encoder__n_heads=2,
        encoder__n_layers=1,
        verbose=0,
    )
    assert pre.fit(digits[0]).transform(digits[0][:4]).shape == (4, 16)
    assert pre.encoder_.encoder.cls_token.device.type == "cpu"  # encoder_ is handed back on CPU


TEXTS = [
    f"the {a} {b} was {c}"
    for a in ("film", "plot", "cast", "score")
    for b in ("truly", "rather", "not")
    for c in ("great", "dull", "fine", "awful")
]
TEXT_LABELS = ["pos" if ("great" in t or "fine" in t) != ("not" in t) else "neg" for t in TEXTS]
TEXT_TINY = dict(
    tokenizer__vocab_size=60,
    tokenizer__min_frequency=1,
    encoder__d_model=16,
    encoder__n_heads=2,
    encoder__n_layers=1,
    batch_size=8,
    verbose=0,
    random_state=0,
)


@needs_cuda
@pytest.mark.cuda
def test_text_classifier_tagger_and_mlm_on_cuda():
    from tabformer import TabFormerPretrainer, TabFormerTagger

    clf = TabFormerClassifier(
        device="cuda",
        callbacks=[MixedPrecision("bf16")],
        max_epochs=3,
        lr_schedule="warmup_linear",
        iterator_train__group_by_length=True,
        head__pooling="mean",
        **TEXT_TINY,
    ).fit(TEXTS, TEXT_LABELS)
    assert next(clf.module_.parameters()).is_cuda
    assert set(clf.predict(TEXTS[:6])) <= {"pos", "neg"}
    assert clf.predict_proba(TEXTS[:6]).dtype == np.float32
    explanation = clf.explain(TEXTS[:2])
    assert len(explanation) and np.isfinite(explanation["attention"]).all()

    sentences = [t.split() for t in TEXTS]
    tags = [["B-ADJ" if w in ("great", "dull", "fine", "awful") else "O" for w in s] for s in sentences]
    tagger = TabFormerTagger(device="cuda", max_epochs=2, **TEXT_TINY).fit(sentences, tags)
    assert [len(p) for p in tagger.predict(sentences[:3])] == [len(s) for s in sentences[:3]]

    pre = TabFormerPretrainer(objective="mlm", device="cuda", max_epochs=2, validation_fraction=None, **TEXT_TINY).fit(TEXTS)
    assert pre.transform(TEXTS[:4]).shape == (4, 16)
    probe = TabFormerClassifier(
        encoder=pre.encoder_, freeze_encoder=True, freeze_embedder=True, device="cuda", max_epochs=2, verbose=0
    ).fit(TEXTS, TEXT_LABELS)
    frozen = [
        *zip(probe.module_.encoder.parameters(), pre.encoder_.encoder.parameters()),
        *zip(probe.module_.embedder.parameters(), pre.encoder_.embedder.parameters()),
    ]
    for got, want in frozen:
        torch.testing.assert_close(got.cpu(), want)


@needs_cuda
@pytest.mark.cuda
def test_cuda_forward_matches_cpu_with_padding():
    # Rows of very different lengths: CUDA's fused attention kernels must treat the
    # padding mask exactly as the CPU path does.
    import copy

    clf = TabFormerClassifier(max_epochs=1, **TEXT_TINY).fit(TEXTS, TEXT_LABELS)
    texts = ["great", "the film was truly rather not great and the cast was dull " * 2]
    batch = clf.tokenize(texts)
    module = clf.module_.eval()
    with torch.no_grad():
        on_cpu = module(**{k: torch.as_tensor(v) for k, v in batch.items()})
        on_gpu = copy.deepcopy(module).cuda()(**{k: torch.as_tensor(v).cuda() for k, v in batch.items()})
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-4, rtol=1e-4)


@needs_cuda
@pytest.mark.cuda
def test_cuda_fitted_model_pickles_and_predicts_the_same():
    import pickle

    clf = TabFormerClassifier(device="cuda", max_epochs=2, **TEXT_TINY).fit(TEXTS, TEXT_LABELS)
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS), atol=1e-6)
