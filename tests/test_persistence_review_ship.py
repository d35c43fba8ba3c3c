"""A review of saving and loading before shipping: a tampered config.json cannot set attributes
that are not fitted state, point a callback at other folders or load models by name; an
interrupted save leaves the previous model; and the errors of a load say what to do."""

import json

import numpy as np
import pytest
import torch
from conftest import TINY, make_table

import tabformer
from tabformer import TabFormerClassifier
from tabformer.callbacks import TrainingCheckpoint
from tabformer.persistence import PersistenceError, UntrustedTypeError

SMALL = dict(TINY, max_epochs=1, random_state=0)


@pytest.fixture(scope="module")
def table():
    return make_table(n=60)


@pytest.fixture(scope="module")
def saved(table, tmp_path_factory):
    """A fitted classifier's folder, saved once; tests edit copies of its config."""
    X, y = table
    folder = tmp_path_factory.mktemp("saved") / "m"
    TabFormerClassifier(**SMALL).fit(X, y).save(folder)
    return folder


def _edited(saved, tmp_path, edit, name="edited"):
    """A copy of ``saved`` whose config.json ``edit(config)`` changed."""
    folder = tmp_path / name
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


# ----------------------------------------------------------------------------- fitted attributes
def test_fitted_section_cannot_set_torch_load_kwargs(saved, tmp_path):
    """The "fitted" section set any attribute: torch_load_kwargs with weights_only off, refused under "params",
    passed there, and the loaded model's load_params then unpickled a file shipped with the folder."""
    folder = _edited(saved, tmp_path, lambda c: c["fitted"].update(torch_load_kwargs={"weights_only": False}))
    with pytest.raises(PersistenceError, match=r"config\.json: fitted lists 'torch_load_kwargs'.*not a fitted attribute"):
        tabformer.load(folder)


@pytest.mark.parametrize("name", ["predict_proba", "classes_", "prefixes_", "_auto_validation_fraction", "lr"])
def test_fitted_section_cannot_replace_methods_parameters_or_private_state(saved, tmp_path, name):
    """A method (predict_proba replaced by an allowed class), a property, skorch's class attributes, private state
    and parameters are not fitted attributes: the config naming them is refused, naming the key and the file."""
    scaler = {"__type__": "class", "name": "sklearn.preprocessing._data:StandardScaler"}
    folder = _edited(saved, tmp_path, lambda c: c["fitted"].update({name: scaler}))
    with pytest.raises(PersistenceError, match=rf"{folder / 'config.json'}: fitted lists '{name}'"):
        tabformer.load(folder)


def test_tokenizer_and_sklearn_fitted_state_take_only_fitted_names(saved, tmp_path):
    """The same rule holds for a tokenizer's fitted state and for the objects inside it (a fitted scaler)."""
    function = {"__type__": "function", "name": "builtins:print"}
    folder = _edited(saved, tmp_path, lambda c: c["tokenizer"]["fitted"].update(transform=function))
    with pytest.raises(PersistenceError, match=r"tokenizer_ lists 'transform' among TabularTokenizer's fitted"):
        tabformer.load(folder)
    folder = _edited(saved, tmp_path, lambda c: c["tokenizer"]["fitted"]["scaler_"]["fitted"].update(transform=function), "2")
    with pytest.raises(PersistenceError, match=r"lists 'transform' among RangeQuantileTransformer's fitted attributes"):
        tabformer.load(folder)


def test_every_fitted_attribute_saved_loads_back(saved, table):
    """The rule refuses nothing tabformer writes: the saved fitted names are all plain fitted attributes."""
    config = json.loads((saved / "config.json").read_text())
    loaded = tabformer.load(saved)
    for name in config["fitted"]:
        assert name in vars(loaded)
    for name in config["tokenizer"]["fitted"]:
        assert name in vars(loaded.tokenizer_)
    X, _ = table
    assert loaded.predict_proba(X).shape == (len(X), 2)


def test_torch_load_kwargs_with_weights_only_still_loads(table, tmp_path):
    """The parameter itself (saved under "params") still round-trips when it keeps weights_only=True."""
    X, y = table
    TabFormerClassifier(**SMALL, torch_load_kwargs={"weights_only": True}).fit(X, y).save(tmp_path / "m")
    assert tabformer.load(tmp_path / "m").torch_load_kwargs == {"weights_only": True}
    assert torch.is_tensor(next(tabformer.load(tmp_path / "m").module_.parameters()))


# ----------------------------------------------------------------------------- refused classes
def test_a_training_checkpoint_pointed_anywhere_is_refused_unless_trusted(saved, tmp_path, table):
    """tabformer's TrainingCheckpoint was allowed: a tampered config pointing it at another folder made the loaded
    model's next partial_fit write there and delete that folder's epoch-* folders. It is refused unless trusted,
    as skorch's Checkpoint is."""
    victim = tmp_path / "victim"
    (victim / "epoch-0001-users-own-run").mkdir(parents=True)
    callback = {"__type__": "object", "cls": "tabformer._checkpoint:TrainingCheckpoint", "params": {"dirname": str(victim)}}
    tuple_ = {"__type__": "tuple", "items": ["ck", callback]}
    folder = _edited(saved, tmp_path, lambda c: c["estimator"]["params"].update(callbacks=[tuple_]))
    with pytest.raises(UntrustedTypeError, match=r"tabformer\._checkpoint\.TrainingCheckpoint, which reads files.*writes or "):
        tabformer.load(folder)
    assert sorted(p.name for p in victim.iterdir()) == ["epoch-0001-users-own-run"]


def test_a_model_trained_with_a_training_checkpoint_loads_when_trusted(table, tmp_path):
    """A model trained with TrainingCheckpoint saves with its folder, as one with skorch's Checkpoint does, and loads
    when the caller trusts the class (the error names it)."""
    X, y = table
    callbacks = [("checkpoint", TrainingCheckpoint(str(tmp_path / "run")))]
    clf = TabFormerClassifier(**SMALL, callbacks=callbacks).fit(X, y)
    clf.save(tmp_path / "m")
    with pytest.raises(UntrustedTypeError, match=r"trusted=\['tabformer\._checkpoint\.TrainingCheckpoint'\]"):
        tabformer.load(tmp_path / "m")
    loaded = tabformer.load(tmp_path / "m", trusted=["tabformer._checkpoint.TrainingCheckpoint"])
    ((name, callback),) = loaded.callbacks
    assert name == "checkpoint" and isinstance(callback, TrainingCheckpoint) and callback.dirname == str(tmp_path / "run")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_skorch_llm_classes_are_refused_unless_trusted(saved, tmp_path):
    """skorch.llm (ZeroShotClassifier...) loads Hugging Face models by name, as skorch.hf does: refused like it."""
    llm = {"__type__": "object", "cls": "skorch.llm.classifier:ZeroShotClassifier", "params": {"model_name": "any/model"}}
    folder = _edited(saved, tmp_path, lambda c: c["fitted"].update(extra_=llm))
    with pytest.raises(UntrustedTypeError, match=r"skorch\.llm\.classifier\.ZeroShotClassifier, which reads files"):
        tabformer.load(folder)


# ----------------------------------------------------------------------------- interrupted saves
def _fail_at_weights(monkeypatch):
    """Make writing model.safetensors fail as a full disk does (whichever way save writes its files)."""
    import pathlib

    import tabformer.persistence._files as files

    def failing(real):
        def write(path, data):
            if "model.safetensors" in pathlib.Path(path).name:
                raise OSError(28, "No space left on device")
            return real(path, data)

        return write

    if hasattr(files, "write_file"):
        monkeypatch.setattr(files, "write_file", failing(files.write_file))
    monkeypatch.setattr(pathlib.Path, "write_bytes", failing(pathlib.Path.write_bytes))


def _hidden(folder):
    return sorted(path.name for path in folder.parent.iterdir() if path.name.startswith("."))


def test_a_save_that_fails_part_way_leaves_the_previous_model(table, tmp_path, monkeypatch):
    """save wrote its files one by one: a save over a model folder that failed at the weights left the new config
    beside the old weights, and load accepted it (shapes match), predicting with neither model."""
    X, y = table
    old = TabFormerClassifier(**SMALL).fit(X, y)
    new = TabFormerClassifier(**{**SMALL, "random_state": 1}).fit(X, y)
    old.save(tmp_path / "m")
    before = {path.name: path.read_bytes() for path in (tmp_path / "m").iterdir()}
    _fail_at_weights(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        new.save(tmp_path / "m")
    monkeypatch.undo()
    assert {path.name: path.read_bytes() for path in (tmp_path / "m").iterdir()} == before
    assert _hidden(tmp_path / "m") == []
    np.testing.assert_array_equal(tabformer.load(tmp_path / "m").predict_proba(X), old.predict_proba(X))
    new.save(tmp_path / "m")  # and a save that succeeds replaces it
    np.testing.assert_array_equal(tabformer.load(tmp_path / "m").predict_proba(X), new.predict_proba(X))
    assert _hidden(tmp_path / "m") == []


def test_a_save_keeps_the_other_files_of_the_folder(saved, table, tmp_path):
    """As before: files of an earlier save the new one does not write, and the user's own, stay in the folder."""
    X, _ = table
    folder = tmp_path / "m"
    clf = tabformer.load(saved)
    clf.save(folder)
    (folder / "README.md").write_text("my notes")
    (folder / "extra").mkdir()
    (folder / "extra" / "data.csv").write_text("a,b\n")
    (folder / "vocab.txt").write_text("an earlier text model's")
    mode = (folder.stat().st_mode | 0o070) & 0o777
    folder.chmod(mode)
    clf.save(folder)
    assert (folder / "README.md").read_text() == "my notes" and (folder / "extra" / "data.csv").read_text() == "a,b\n"
    assert (folder / "vocab.txt").read_text() == "an earlier text model's"
    assert folder.stat().st_mode & 0o777 == mode
    np.testing.assert_array_equal(tabformer.load(folder).predict_proba(X), clf.predict_proba(X))


def test_a_save_into_a_folder_that_is_no_model_or_a_link_or_the_working_directory(saved, table, tmp_path, monkeypatch):
    """A folder of the user's (no model in it), a link to a folder, the working directory and a folder that cannot
    be renamed (a mount point) are written into, their other files kept."""
    X, _ = table
    clf = tabformer.load(saved)
    expected = clf.predict_proba(X)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    clf.save(mine)
    assert (mine / "notes.txt").read_text() == "keep"
    link = tmp_path / "link"
    link.symlink_to(mine, target_is_directory=True)
    clf.save(link)
    assert link.is_symlink() and (mine / "notes.txt").read_text() == "keep"
    np.testing.assert_array_equal(tabformer.load(link).predict_proba(X), expected)
    monkeypatch.chdir(mine)
    clf.save(".")
    assert (mine / "notes.txt").read_text() == "keep"
    np.testing.assert_array_equal(tabformer.load(".").predict_proba(X), expected)
    monkeypatch.chdir(tmp_path)
    import tabformer.persistence._files as files

    def busy(tmp, target):
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(files, "swap_in", busy)
    clf.save(mine)
    assert (mine / "notes.txt").read_text() == "keep" and _hidden(mine) == []
    assert [path.name for path in mine.iterdir() if path.name.startswith(".")] == []
    np.testing.assert_array_equal(tabformer.load(mine).predict_proba(X), expected)
    # written file by file, a save that fails still leaves the previous model
    before = {path.name: path.read_bytes() for path in mine.iterdir()}
    _fail_at_weights(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        TabFormerClassifier(**SMALL).fit(*table).save(mine)
    assert {path.name: path.read_bytes() for path in mine.iterdir()} == before


# ----------------------------------------------------------------------------- errors of a load
def test_a_device_this_machine_lacks_is_refused_naming_the_parameter(saved, monkeypatch):
    """load(device="cuda") without a GPU raised torch's "Found no NVIDIA driver", and a misspelt device torch's list
    of every device type; both name load's device now and say what to pass."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(PersistenceError, match=r"load\(device='cuda'\): CUDA is not available.*pass device='cpu'"):
        tabformer.load(saved, device="cuda")
    with pytest.raises(PersistenceError, match=r"load\(device='gpu'\): not a device torch knows; pass device='cpu'"):
        tabformer.load(saved, device="gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(PersistenceError, match=r"load\(device='cuda:3'\): this machine has 1 GPU\(s\), cuda:0 to cuda:0"):
        tabformer.load(saved, device="cuda:3")
    monkeypatch.undo()
    assert tabformer.load(saved, device="cpu").device == "cpu"


def test_a_folder_of_a_newer_tabformer_says_to_upgrade(saved, tmp_path):
    """A newer tabformer's folder (same format version, a parameter this one lacks) was blamed on editing."""

    def newer(config):
        config["versions"]["tabformer"] = "99.1.0"
        config["estimator"]["params"]["calibration"] = "isotonic"

    with pytest.raises(PersistenceError, match=rf"saved by tabformer 99\.1\.0, this is {tabformer.__version__}: upgrade"):
        tabformer.load(_edited(saved, tmp_path, newer))
    same = _edited(saved, tmp_path, lambda c: c["estimator"]["params"].update(calibration="isotonic"), "same")
    with pytest.raises(PersistenceError, match=r"was a file edited or copied from another version\?"):
        tabformer.load(same)


def test_a_hugging_face_folder_points_to_from_pretrained(tmp_path):
    """tabformer.load on a Hugging Face folder said only that it is not a tabformer config.json."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    with pytest.raises(PersistenceError, match=r"Hugging Face model's config \(model_type 'bert'\).*from_pretrained\(.*encoder="):
        tabformer.load(tmp_path)


def test_info_names_a_datetime_column_datetime_not_table(tmp_path):
    # describe_columns fell back to the tokenizer's kind ("table") for a datetime column of a plain table.
    import pandas as pd

    from tabformer import TabFormerClassifier
    from tabformer.persistence.estimators import describe_columns

    rng = np.random.RandomState(0)
    X = pd.DataFrame({"a": rng.randn(40), "when": pd.date_range("2024-01-01", periods=40, freq="D")})
    model = TabFormerClassifier(max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, verbose=0)
    model.fit(X, np.where(X.a > 0, "p", "n"))
    kinds = {column["name"]: column["kind"] for column in describe_columns(model)}
    assert kinds == {"a": "numeric", "when": "datetime"}
