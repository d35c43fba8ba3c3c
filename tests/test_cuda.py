"""Device and mixed-precision paths (``device``, ``precision``). CUDA tests skip cleanly without a GPU."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier
from tabformer.callbacks import MixedPrecision

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:64], data.target[:64]


def _record_head_dtypes(clf, seen):
    return clf.module_.head.net[-1].register_forward_hook(lambda module, args, out: seen.append(out.dtype))


def test_bf16_autocasts_forward_of_training_validation_and_prediction(digits, tiny):
    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", precision="bf16", random_state=0, **dict(tiny, max_epochs=1)).fit(X, y)
    assert clf.resolved_params_["precision"] == "bf16" and clf.get_params()["precision"] == "bf16"
    seen = []
    _record_head_dtypes(clf, seen)
    clf.partial_fit(X, y)
    assert seen and set(seen) == {torch.bfloat16}  # training and validation batches alike
    assert not torch.is_autocast_enabled("cpu")  # the context was left after the batch
    assert all(p.dtype == torch.float32 for p in clf.module_.parameters())  # weights stay fp32
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in clf.module_.parameters())
    assert clf.history[-1, "valid_loss"] == clf.history[-1, "valid_loss"]  # finite, recorded
    seen.clear()
    proba = clf.predict_proba(X[:4])
    assert seen == [torch.bfloat16] and proba.dtype == np.float64  # bf16 never reaches the user
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)


def test_auto_precision_is_fp32_on_cpu_and_fp32_means_no_autocast(digits, tiny):
    X, y = digits
    for precision in ("auto", "fp32"):
        clf = TabFormerClassifier(tokenizer="patch", precision=precision, device="cpu", **dict(tiny, max_epochs=1)).fit(X, y)
        seen = []
        _record_head_dtypes(clf, seen)
        clf.predict_proba(X[:4])
        assert clf.resolved_params_["precision"] == "fp32" and seen == [torch.float32]
        assert not clf.grad_scaler_.is_enabled()


def test_fp16_scales_the_loss_and_unscales_gradients_before_callbacks(digits, tiny):
    X, y = digits
    norms = []

    class RecordGradNorm(Callback):
        def on_grad_computed(self, net, named_parameters, **kwargs):
            grads = [p.grad for _, p in named_parameters if p.grad is not None]
            norms.append(float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))))

    clf = TabFormerClassifier(
        tokenizer="patch", precision="fp16", callbacks=[RecordGradNorm()], random_state=0, **dict(tiny, max_epochs=2)
    ).fit(X, y)
    assert clf.grad_scaler_.is_enabled() and clf.grad_scaler_.get_scale() > 1.0
    # Scaled gradients would be ~scale (65536) times larger; callbacks see the true ones.
    assert norms and np.isfinite(norms).all() and max(norms) < 100.0
    assert np.isfinite(clf.predict_proba(X[:8])).all()


def test_device_auto_resolves_for_skorch_but_get_params_clone_and_pickle_keep_auto(digits, tiny):
    import pickle

    from sklearn.base import clone

    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", **dict(tiny, max_epochs=1))
    assert clf.get_params()["device"] == "auto" and clone(clf).get_params()["device"] == "auto"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert clf.device == expected
    clf.fit(X, y)
    assert next(clf.module_.parameters()).device.type == expected
    loaded = pickle.loads(pickle.dumps(clf))
    assert loaded.get_params()["device"] == "auto" and loaded.device == expected
    np.testing.assert_allclose(loaded.predict_proba(X[:4]), clf.predict_proba(X[:4]), atol=1e-6)
    assert clf.set_params(device="cpu").device == "cpu" and clf.get_params()["device"] == "cpu"


def test_precision_is_validated_and_the_old_callback_names_its_replacement(digits, tiny):
    X, y = digits
    with pytest.raises(ValueError, match="precision"):
        TabFormerClassifier(tokenizer="patch", precision="int8", **tiny).fit(X, y)
    with pytest.raises(TypeError, match="precision='bf16'"):
        MixedPrecision("bf16")


@needs_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16", "auto"])
def test_patch_classifier_on_cuda(digits, tiny, precision):
    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", device="cuda", precision=precision, random_state=0, **tiny).fit(X, y)
    assert next(clf.module_.parameters()).device.type == "cuda"
    assert clf.resolved_params_["precision"] == ("bf16" if precision == "auto" else precision)
    assert np.isfinite(clf.predict_proba(X[:8])).all()
    assert clf.predict_proba(X[:8]).shape == (8, 10)
    assert clf.forward_features(X[:8]).shape == (8, tiny["encoder__d_model"])


@needs_cuda
@pytest.mark.cuda
def test_simclr_pretrainer_on_cuda(digits):
    from tabformer import TabFormerPretrainer

    pre = TabFormerPretrainer(
        objective="simclr",
        device="cuda",
        precision="bf16",
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
        precision="bf16",
        max_epochs=3,
        lr_schedule="warmup_linear",
        iterator_train__group_by_length=True,
        head__pooling="mean",
        **TEXT_TINY,
    ).fit(TEXTS, TEXT_LABELS)
    assert next(clf.module_.parameters()).is_cuda
    assert set(clf.predict(TEXTS[:6])) <= {"pos", "neg"}
    assert clf.predict_proba(TEXTS[:6]).dtype == np.float64
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

    clf = TabFormerClassifier(device="cpu", max_epochs=1, **TEXT_TINY).fit(TEXTS, TEXT_LABELS)
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


@needs_cuda
@pytest.mark.cuda
def test_cuda_fit_steps_fused_and_defers_the_guard_to_the_end_of_each_phase():
    from skorch.callbacks import Callback as SkorchCallback

    from tabformer.callbacks import NonFiniteTrainingError

    clf = TabFormerClassifier(device="cuda", max_epochs=2, **TEXT_TINY).fit(TEXTS, TEXT_LABELS)
    assert clf.resolved_params_["optimizer__fused"] is True and clf.optimizer_.defaults["fused"] is True
    guard = dict(clf.callbacks_)["nonfinite"]
    assert guard.deferred_ is True
    torch.cuda.synchronize()  # the snapshot's copies are non-blocking
    for key, value in clf.module_.state_dict().items():
        assert guard.good_state_[key].is_pinned()
        torch.testing.assert_close(guard.good_state_[key], value.cpu(), rtol=0, atol=0)
    assert all(type(row["train_loss"]) is float for row in clf.history[-1]["batches"])

    class NaNAtThirdBatch(SkorchCallback):
        def on_train_begin(self, net, **kwargs):
            calls = []

            def hook(module, args, out):
                if module.training:
                    calls.append(1)
                return out * float("nan") if module.training and len(calls) == 3 else out

            net.module_.register_forward_hook(hook)

    with pytest.raises(NonFiniteTrainingError, match=r"non-finite training loss \(nan\) at epoch 1, training batch 3;"):
        TabFormerClassifier(device="cuda", max_epochs=2, callbacks=[("nan", NaNAtThirdBatch())], **TEXT_TINY).fit(
            TEXTS, TEXT_LABELS
        )


@needs_cuda
@pytest.mark.cuda
def test_cuda_graphs_keep_every_batch_loss_of_the_phase():
    # CUDA graphs overwrite their outputs at the next replay; the losses read back at the
    # phase's end are copies (before, the read-back raised "accessing tensor output of
    # CUDAGraphs that has been overwritten" on an H200).
    clf = TabFormerClassifier(
        device="cuda", max_epochs=2, compile=True, compile__mode="reduce-overhead", iterator_train__drop_last=True, **TEXT_TINY
    ).fit(TEXTS, TEXT_LABELS)
    losses = [row["train_loss"] for row in clf.history[-1]["batches"]]
    assert len(losses) > 1 and all(type(value) is float and np.isfinite(value) for value in losses)
    assert len(set(losses)) == len(losses)  # each batch's own loss, not the last one repeated


@needs_cuda
@pytest.mark.cuda
def test_a_seeded_fit_leaves_every_devices_rng_as_it_found_it(digits, tiny):
    X, y = digits
    torch.cuda.init()
    torch.cuda.manual_seed(123)
    cpu, cuda = torch.get_rng_state(), torch.cuda.get_rng_state()
    for device in ("cuda", "cpu"):  # torch.manual_seed inside a CPU-only fork left CUDA's RNG at the fit's seed
        TabFormerClassifier(tokenizer="patch", device=device, random_state=0, **dict(tiny, max_epochs=1)).fit(X, y)
        assert torch.equal(torch.get_rng_state(), cpu) and torch.equal(torch.cuda.get_rng_state(), cuda)
    first = TabFormerClassifier(tokenizer="patch", device="cuda", random_state=0, **dict(tiny, max_epochs=1)).fit(X, y)
    again = TabFormerClassifier(tokenizer="patch", device="cuda", random_state=0, **dict(tiny, max_epochs=1)).fit(X, y)
    np.testing.assert_allclose(first.predict_proba(X), again.predict_proba(X), atol=1e-5)  # still seeded on the GPU
