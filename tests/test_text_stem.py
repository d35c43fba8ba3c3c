"""A mixed DataFrame's text columns read through the installed all-MiniLM-L6-v2 as a frozen stem:
one token per text, its mean-pooled sentence embedding projected (docs/mixed.md)."""

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from tabformer import TabFormerClassifier, TabFormerRegressor, load
from tabformer.estimators import _text_recipes
from tabformer.nn.embedders import build_embedder
from tabformer.nn.embedders.feature_cache import caching_frozen_features
from tabformer.nn.embedders.sentence import SentenceEmbedder, TextFeatureCache
from tabformer.nn.encoder import TransformerEncoder
from tabformer.tokenizers import SentenceTokenizer, WordPieceTokenizer

SMALL = dict(d_model=16, n_layers=1, n_heads=2, d_ff=32, positions="learned", max_length=12, embedding_norm=True)


def _stem(d_model=8):
    torch.manual_seed(0)
    return SentenceEmbedder(d_model, words={"vocab_size": 40}, stem_vocab_size=30, encoder=dict(SMALL))


def _rows(ids):
    return torch.stack([ids, (ids > 0).long()], dim=1)


def test_the_sentence_token_leads_the_words_and_is_the_frozen_mean_projected():
    stem = _stem().eval()
    words = torch.tensor([[7, 8, 0], [9, 0, 0], [0, 0, 0]])
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0], [0, 0, 0, 0]])
    tokens, mask = stem(words, (words > 0).long(), _rows(ids))
    assert tokens.shape == (3, 4, 8)
    assert mask.tolist() == [[True, True, True, False], [True, True, False, False], [False, False, False, False]]
    # the mean over the frozen encoder's output, CLS included, padding excluded
    embedded, real = stem.stem_words(ids[:1, :3], torch.ones(1, 3, dtype=torch.bool))
    expected = stem.projection(stem.stem_encoder(embedded, real).mean(dim=1))
    assert torch.allclose(tokens[0, 0], expected[0], atol=1e-6)
    assert torch.allclose(tokens[:, 1:], stem.words(words, words > 0)[0], atol=1e-6)  # the words as TextEmbedder gives them
    # padding the pretrained ids to another length does not move the sentence token
    longer = torch.cat([ids, torch.zeros(3, 3, dtype=torch.long)], dim=1)
    assert torch.allclose(stem(words, (words > 0).long(), _rows(longer))[0][:2], tokens[:2], atol=1e-6)


def test_the_stem_is_frozen_and_stays_in_eval_mode_while_the_rest_trains():
    stem = _stem().train()
    assert not stem.stem_encoder.training and not stem.stem_words.training and stem.words.training
    trainable = {name.split(".")[0] for name, p in stem.named_parameters() if p.requires_grad}
    assert trainable == {"projection", "words"}
    ids = torch.tensor([[5, 6, 7]])
    stem(ids, torch.ones_like(ids), _rows(ids))[0].sum().backward()
    assert stem.projection.weight.grad is not None and stem.words.word_embeddings.weight.grad is not None
    assert all(p.grad is None for p in stem.stem_encoder.parameters())


def test_a_fit_computes_each_text_once_whatever_its_padding():
    stem = _stem()
    words = torch.tensor([[5, 6], [8, 9]])
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    with caching_frozen_features(stem) as caches:
        first = stem.eval()(words, torch.ones_like(words), _rows(ids))[0]
        again = stem(words, torch.ones_like(words), _rows(ids[:, :3]))[0]  # the same texts cut to another length
        assert caches[0].hits == 2 and len(caches[0]) == 2
    assert torch.allclose(first, again) and len(stem.feature_cache) == 0  # emptied after the fit
    copied = copy.deepcopy(stem).feature_cache
    assert isinstance(copied, TextFeatureCache) and len(copied) == 0


def test_the_tokenizer_describes_the_stem_and_refuses_a_missing_folder():
    spec = {"kind": "sentence", "words": {"vocab_size": 40}, "stem_vocab_size": 30, "encoder": dict(SMALL)}
    assert isinstance(build_embedder(spec, 8), SentenceEmbedder)
    with pytest.raises(ValueError, match="stem_folder"):
        SentenceTokenizer(encoder_config=dict(SMALL)).fit(["a text"])


def test_load_pretrained_copies_the_weights():
    stem = _stem()
    donor = _stem()
    for p in donor.parameters():
        torch.nn.init.normal_(p)
    encoder = TransformerEncoder(**SMALL)
    encoder.load_state_dict(donor.stem_encoder.state_dict())
    stem.load_pretrained(donor.stem_words, encoder)
    assert all(torch.equal(a, b) for a, b in zip(stem.stem_encoder.state_dict().values(), encoder.state_dict().values()))


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    animals, tools = ["cat", "dog", "horse", "rabbit"], ["hammer", "saw", "drill", "wrench"]
    label = rng.integers(0, 2, n)
    names = [f"a {(animals if k else tools)[i % 4]} number {i}" for i, k in enumerate(label)]
    images = list(rng.integers(0, 255, (n, 8, 8), dtype=np.uint8))
    frame = pd.DataFrame({"name": names, "image": images, "size": rng.normal(size=n)})
    return frame, np.where(label == 1, "animal", "tool")


@pytest.mark.pretrained_text
def test_a_mixed_frame_reads_its_texts_through_the_installed_weights():
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    X, y = _frame()
    clf = TabFormerClassifier(max_epochs=12, verbose=0, random_state=0).fit(X, y)
    assert clf.text_stem_weights_ == _text_recipes.text_weights_folder() and clf.pretrained_weights_ is None
    assert clf.resolved_params_["fusion"] == "late"
    tokenizer = clf.tokenizer_.transformers_[0][1]
    assert type(tokenizer).__name__ == "SentenceTokenizer" and tokenizer.vocab_size_ < 200  # its own words, fitted on X
    assert tokenizer.sentence_dropout == 0.5
    batch = clf.tokenize(X.iloc[:2])
    assert batch["text:name/stem_rows"].shape[:2] == (2, 2) and batch["text:name/input_ids"].shape[0] == 2
    stems = [m for m in clf.module_.modules() if isinstance(m, SentenceEmbedder)]
    minilm = _text_recipes.default_text_weights(clf.text_stem_weights_)
    assert len(stems) == 1 and torch.equal(
        stems[0].stem_encoder.layers[0].attention.query.weight, minilm.encoder.layers[0].attention.query.weight
    )
    assert clf.get_params()["tokenizer"] == "auto" and not hasattr(clone(clf), "text_stem_weights_")
    # the names' words carry the label, and MiniLM knows which are animals
    assert clf.score(X, y) > 0.8


@pytest.mark.pretrained_text
def test_a_saved_mixed_model_loads_without_reading_the_weights(tmp_path, monkeypatch):
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    X, y = _frame(40)
    reg = TabFormerRegressor(max_epochs=1, verbose=0, random_state=0).fit(X, (y == "animal").astype(float))
    reg.save(tmp_path / "model")

    def unreadable(folder):
        raise AssertionError("the installed weights were read while loading")

    monkeypatch.setattr(_text_recipes, "default_text_weights", unreadable)
    loaded = load(tmp_path / "model")
    assert loaded.text_stem_weights_ == reg.text_stem_weights_
    np.testing.assert_allclose(loaded.predict(X), reg.predict(X), atol=1e-6)


@pytest.mark.pretrained_text
def test_the_users_own_text_settings_a_text_and_table_frame_or_texts_alone_keep_their_paths():
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    X, y = _frame(30)
    own = TabFormerClassifier(max_epochs=1, verbose=0, tokenizer__text=WordPieceTokenizer(vocab_size=60)).fit(X, y)
    assert own.text_stem_weights_ is None and type(own.tokenizer_.transformers_[0][1]) is WordPieceTokenizer
    table = TabFormerClassifier(max_epochs=1, verbose=0).fit(X[["name", "size"]], y)  # no image: early fusion
    assert table.text_stem_weights_ is None and type(table.tokenizer_.transformers_[0][1]) is WordPieceTokenizer
    early = TabFormerClassifier(max_epochs=1, verbose=0, fusion="early").fit(X, y)
    assert early.text_stem_weights_ is None
    texts = TabFormerClassifier(max_epochs=1, verbose=0).fit(X[["name"]], y)
    assert texts.text_stem_weights_ is None and texts.pretrained_weights_ is not None  # text alone: fine-tuned
    scratch = TabFormerClassifier(max_epochs=1, verbose=0, tokenizer="mixed").fit(X, y)
    assert scratch.text_stem_weights_ is None


def test_without_the_package_mixed_texts_train_from_scratch():
    X, y = _frame(30)
    clf = TabFormerClassifier(max_epochs=1, verbose=0).fit(X, y)  # conftest: the package reads as absent
    assert clf.text_stem_weights_ is None
    assert isinstance(clf.tokenizer_.transformers_[0][1], WordPieceTokenizer)


def test_sentence_dropout_masks_the_sentence_token_of_some_rows_while_training_only():
    torch.manual_seed(0)
    stem = SentenceEmbedder(8, words={"vocab_size": 40}, stem_vocab_size=30, encoder=dict(SMALL), sentence_dropout=0.5)
    words = torch.randint(5, 40, (200, 3))
    ids = torch.randint(5, 30, (200, 4))
    mask = stem.train()(words, torch.ones_like(words), _rows(ids))[1]
    assert 0.3 < mask[:, 0].float().mean() < 0.7 and mask[:, 1:].all()
    assert stem.eval()(words, torch.ones_like(words), _rows(ids))[1].all()
    with pytest.raises(ValueError, match="sentence_dropout"):
        tokenizer = SentenceTokenizer(stem_folder="x", encoder_config=dict(SMALL), sentence_dropout=1.0)
        tokenizer.vocab_size_, tokenizer.stem_state_ = 40, {"vocab_size_": 30}
        tokenizer.embedder_spec()


@pytest.mark.pretrained_text
def test_a_mixed_model_with_the_text_stem_exports_to_onnx(tmp_path):
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from tabformer.export import onnx_inputs

    X, y = _frame(30)
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, y)
    clf.export_onnx(tmp_path / "model.onnx")
    session = ort.InferenceSession(str(tmp_path / "model.onnx"))
    rows = X.iloc[[0, 5, 9]].copy()
    rows.loc[rows.index[1], "name"] = "a much longer name than any the model was traced with, to check the length axes"
    probabilities = session.run(None, onnx_inputs(clf, rows))[0]
    np.testing.assert_allclose(probabilities, clf.predict_proba(rows), atol=1e-5)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_stem_runs_on_a_gpu_under_bf16_autocast_as_on_the_cpu():
    stem = _stem().eval()
    words = torch.tensor([[7, 8, 0], [9, 0, 0]])
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    expected = stem(words, (words > 0).long(), _rows(ids))[0]
    gpu = copy.deepcopy(stem).cuda()
    with caching_frozen_features(gpu) as caches, torch.autocast("cuda", torch.bfloat16):
        tokens, mask = gpu(words.cuda(), (words > 0).long().cuda(), _rows(ids).cuda())
        assert len(caches[0]) == 0  # GPU tensors are never hashed
    assert tokens.device.type == "cuda" and mask.tolist() == [[True, True, True, False], [True, True, False, False]]
    torch.testing.assert_close(tokens.float().cpu(), expected, atol=0.05, rtol=0.05)
    tokens.float().sum().backward()
    assert gpu.projection.weight.grad is not None


@pytest.mark.pretrained_text
def test_explanations_place_the_sentence_token_and_initialize_keeps_the_weights():
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    X, y = _frame(30)
    clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, y)
    batch = clf.tokenize(X.iloc[:2])
    rows = clf.tokenizer_.describe_tokens(batch)
    assert rows[0][0][1:] == ("name", "[SENTENCE]")
    clf.module_.eval()
    tensors = {key: torch.as_tensor(value) for key, value in batch.items()}
    length = sum(tokens.shape[1] for _, tokens, _ in clf.module_.embedder.forward_segments(**tensors))
    assert max(position for position, _, _ in rows[0]) == length - 1  # the last table cell is the last token
    assert [label for _, column, label in rows[0] if column == "image"][0] == "r0c0"
    # initialize() rebuilds the module (set_params(module__...) does too): the stem is MiniLM again
    clf.initialize()
    stem = next(m for m in clf.module_.modules() if isinstance(m, SentenceEmbedder))
    minilm = _text_recipes.default_text_weights(clf.text_stem_weights_)
    assert torch.equal(
        stem.stem_encoder.layers[5].feed_forward.linear2.weight, minilm.encoder.layers[5].feed_forward.linear2.weight
    )


@pytest.mark.pretrained_text
def test_loading_the_weights_draws_nothing_from_the_seeded_generator():
    # The first fit of a process loads them inside its seeded block; drawing there made that
    # fit differ from every later one with the same random_state (the text-alone default too).
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    folder = _text_recipes.text_weights_folder()
    _text_recipes.default_text_weights.cache_clear()
    torch.manual_seed(0)
    _text_recipes.default_text_weights(folder)
    after_loading = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after_loading, torch.rand(3))


@pytest.mark.pretrained_text
def test_the_sentence_tokenizer_reads_a_pair_as_it_was_fitted():
    pytest.importorskip(_text_recipes.TEXT_WEIGHTS_PACKAGE)
    folder = _text_recipes.text_weights_folder()
    config = dict(_text_recipes.default_text_weights(folder).encoder.config)
    pairs = pd.DataFrame({"premise": ["first part", "x y"], "hypothesis": ["second part", "z"]})
    tokenizer = SentenceTokenizer(folder, encoder_config=config, min_frequency=1).fit(pairs)
    assert tokenizer.n_features_in_ == 2 and tokenizer.transform(pairs)["stem_rows"].shape[:2] == (2, 2)
