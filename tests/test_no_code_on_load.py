"""No loading path runs code from a file: a crafted pickle that would create a marker file
is refused by every one of them, with a clear error, and the marker never appears."""

import ast
import json
import pathlib
import pickle

import pytest
import torch
from conftest import TINY, make_table
from safetensors.torch import save_file
from skorch.callbacks import Freezer

import tabformer
from tabformer import PretrainedEncoder, TabFormerClassifier, TransformerEncoder
from tabformer.nn.embedders.backbone import load_backbone
from tabformer.nn.safe_load import UnsafeFileError, load_tensors
from tabformer.persistence import PersistenceError, UntrustedTypeError

PACKAGE = pathlib.Path(tabformer.__file__).parent
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch notes the crafted file's protocol


class Payload:
    """Unpickling this calls ``Path.touch(marker)``: proof that a loader ran the file's code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


@pytest.fixture(params=["torch.save", "pickle"])
def crafted(request, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pt"
    if request.param == "torch.save":
        torch.save({"format": "tabformer.TransformerEncoder/1", "state_dict": Payload(marker)}, path)
    else:
        path.write_bytes(pickle.dumps(Payload(marker)))
    yield path, marker
    assert not marker.exists(), "a loader unpickled the crafted file and ran its code"


@pytest.fixture
def bert_folder(crafted, tmp_path):
    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_act": "gelu"}))
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nword\n")
    (folder / "pytorch_model.bin").write_bytes(crafted[0].read_bytes())
    return folder


@pytest.fixture
def saved_folder(crafted, tmp_path):
    """A genuine saved model whose weights file was swapped for the crafted pickle."""
    X, y = make_table(n=40)
    folder = tmp_path / "saved"
    TabFormerClassifier(**dict(TINY, max_epochs=1)).fit(X, y).save(folder)
    (folder / "model.safetensors").write_bytes(crafted[0].read_bytes())
    return folder


def test_tabformer_load(crafted, saved_folder):
    with pytest.raises(PersistenceError, match="is a file; tabformer saves models as folders"):
        tabformer.load(crafted[0])
    with pytest.raises(PersistenceError, match="model.safetensors is not a readable safetensors file"):
        tabformer.load(saved_folder)


def test_pretrained_encoder_load(crafted, saved_folder):
    with pytest.raises(PersistenceError, match="is a file"):
        PretrainedEncoder.load(crafted[0])
    with pytest.raises(PersistenceError, match="not a readable safetensors file"):
        PretrainedEncoder.load(saved_folder)


def test_transformer_encoder_load(crafted):
    with pytest.raises(UnsafeFileError, match="was not loaded: a TransformerEncoder.save file holds only tensors"):
        TransformerEncoder.load(crafted[0])


def test_from_pretrained(crafted, bert_folder, saved_folder):
    with pytest.raises(UnsafeFileError, match="tabformer 0.1 were such pickles"):
        TabFormerClassifier.from_pretrained(crafted[0])
    with pytest.raises(UnsafeFileError, match="pytorch_model.bin was not loaded"):
        TabFormerClassifier.from_pretrained(bert_folder)
    with pytest.raises(PersistenceError, match="not a readable safetensors file"):
        TabFormerClassifier.from_pretrained(saved_folder)


def test_encoder_path_then_fit(crafted, bert_folder):
    X, y = make_table(n=40)
    for path in (crafted[0], bert_folder):
        with pytest.raises(UnsafeFileError, match="was not loaded"):
            TabFormerClassifier(encoder=str(path), max_epochs=1, verbose=0).fit(X, y)


def test_backbone_weights(crafted):
    pytest.importorskip("timm")
    with pytest.raises(UnsafeFileError, match="was not loaded"):
        load_backbone("tf_efficientnet_lite0", 2, weights=str(crafted[0]))


def _unsafe_calls(source: str) -> list:
    """``torch.load`` calls without ``weights_only=True``, and any ``pickle``/``joblib``/``dill`` load."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
        if owner == "torch" and node.func.attr == "load":
            safe = any(
                k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
            )
            if not safe:
                found.append(f"line {node.lineno}: torch.load without weights_only=True")
        if owner in ("pickle", "joblib", "dill", "cloudpickle") and node.func.attr in ("load", "loads", "Unpickler"):
            found.append(f"line {node.lineno}: {owner}.{node.func.attr}")
    return found


def test_the_package_never_unpickles():
    """Static guard: every torch.load in tabformer passes weights_only=True; nothing calls pickle/joblib loads."""
    assert _unsafe_calls("torch.load(p)\ntorch.load(p, weights_only=False)\npickle.loads(b)") == [
        "line 1: torch.load without weights_only=True",
        "line 2: torch.load without weights_only=True",
        "line 3: pickle.loads",
    ]
    offenders = {str(path.relative_to(PACKAGE)): _unsafe_calls(path.read_text()) for path in PACKAGE.rglob("*.py")}
    assert not {path: calls for path, calls in offenders.items() if calls}
    loaders = [path for path in PACKAGE.rglob("*.py") if "torch.load(" in path.read_text().replace("``torch.load(", "")]
    assert [path.name for path in loaders] == ["safe_load.py"]  # the one place that reads torch files


def _genuine_folder(tmp_path, name="genuine"):
    X, y = make_table(n=40)
    folder = tmp_path / name
    TabFormerClassifier(**dict(TINY, max_epochs=1)).fit(X, y).save(folder)
    return folder, X, y


def _edit_config(folder, edit):
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


def test_a_config_cannot_name_skorchs_checkpoint_callbacks_or_turn_weights_only_off(crafted, tmp_path):
    # The attack a review found: skorch's LoadInitState torch.loads its checkpoint (with the
    # net's torch_load_kwargs) as a fit starts, from wherever the config points.
    folder, X, y = _genuine_folder(tmp_path)
    crafted_file = crafted[0]
    checkpoint = {
        "__type__": "object",
        "cls": "skorch.callbacks.training:Checkpoint",
        "params": {"dirname": str(crafted_file.parent), "f_params": crafted_file.name, "f_optimizer": None,
                   "f_criterion": None, "f_history": None, "monitor": None, "event_name": None},
        "fitted": {},
    }  # fmt: skip
    warm = {"__type__": "object", "cls": "skorch.callbacks.training:LoadInitState", "params": {"checkpoint": checkpoint}}
    _edit_config(folder, lambda c: c["estimator"]["params"].update(callbacks=[{"__type__": "tuple", "items": ["warm", warm]}]))
    with pytest.raises(PersistenceError, match=r"skorch.callbacks.training.LoadInitState, which reads files \(torch.load"):
        tabformer.load(folder)
    hub = {"__type__": "object", "cls": "skorch.hf:HuggingfacePretrainedTokenizer", "params": {"tokenizer": "any/name"}}
    _edit_config(folder, lambda c: c["estimator"]["params"].update(callbacks=[{"__type__": "tuple", "items": ["hub", hub]}]))
    with pytest.raises(PersistenceError, match=r"skorch.hf.HuggingfacePretrainedTokenizer, which reads files"):
        tabformer.load(folder)
    folder, X, y = _genuine_folder(tmp_path, "second")
    _edit_config(folder, lambda c: c["estimator"]["params"].update(torch_load_kwargs={"weights_only": False}))
    with pytest.raises(PersistenceError, match=r"torch_load_kwargs=\{'weights_only': False\} would let skorch unpickle"):
        tabformer.load(folder)


@pytest.mark.parametrize(
    ("slot", "name", "refusal"),
    [
        ("fn", "os:system", r"os.system, which is outside the modules a saved model may use"),
        ("fn", "builtins:exec", r"builtins.exec, which is outside the modules"),
        ("fn", "skorch.utils:open_file_like", r"skorch.utils.open_file_like is a function outside tabformer"),
        ("fn", "torch.nn.init:sparse_", r"torch.nn.init.sparse_ is a function outside tabformer"),
        ("at", "builtins:eval", r"builtins.eval, which is outside the modules"),
        ("schedule", "subprocess:getoutput", r"subprocess.getoutput, which is outside the modules"),
    ],
)
def test_a_freezer_saves_but_its_config_cannot_name_another_function(tmp_path, slot, name, refusal):
    # Freezer/Unfreezer save by their arguments, with skorch.utils.freeze_parameter/unfreeze_parameter allowed by
    # their exact names: a config naming any other function in one of their slots is refused before importing it.
    X, y = make_table(n=40)
    folder = tmp_path / "frozen"
    TabFormerClassifier(callbacks=[Freezer("encoder.*")], ensemble_size=1, **dict(TINY, max_epochs=1)).fit(X, y).save(folder)
    tabformer.load(folder)  # the genuine folder loads
    _edit_config(
        folder,
        lambda c: c["estimator"]["params"]["callbacks"][0]["params"].update({slot: {"__type__": "function", "name": name}}),
    )
    with pytest.raises(UntrustedTypeError, match=refusal):
        tabformer.load(folder)


def test_a_nested_encoder_folder_must_stay_inside_the_model_folder(tmp_path):
    folder, _, _ = _genuine_folder(tmp_path)
    for escape in (str(tmp_path / "elsewhere") + "/", "../elsewhere/"):
        nested = {"__type__": "encoder_folder", "folder": escape}
        _edit_config(folder, lambda c, nested=nested: c["estimator"]["params"].update(encoder=nested))
        with pytest.raises(PersistenceError, match=r"names the folder .*, which is not inside the folder"):
            tabformer.load(folder)


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c.pop("module"),
        lambda c: c["estimator"].update(params=[1]),
        lambda c: c["estimator"]["params"].update(no_such_parameter=1),
    ],
    ids=["no module entry", "params a list", "unknown parameter"],
)
def test_a_damaged_config_is_a_persistence_error_naming_the_folder(tmp_path, edit):
    folder, _, _ = _genuine_folder(tmp_path)
    _edit_config(folder, edit)
    with pytest.raises(PersistenceError, match=r"does not hold a model tabformer can read: \w+Error"):
        tabformer.load(folder)


class _Shell:
    """Unpickling this runs a shell command (``os.system``): torch refuses it as a blocked module."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


class _Copy:
    """Unpickling this copies a file onto the marker (``shutil.copy``): torch refuses it as not allowlisted."""

    def __init__(self, source, marker):
        self.source, self.marker = source, marker

    def __reduce__(self):
        import shutil

        return (shutil.copy, (str(self.source), str(self.marker)))


def test_the_refusal_names_the_import_and_never_suggests_weights_only_false(tmp_path):
    # A review: the detail was torch's first line cut off ("Re-running `torch.load` with
    # `weights_only` set to `False`)"), read as advice; the blocked global was not named
    # (torch words it "Trying to load unsupported GLOBAL posix.system ..."); a protocol-4
    # pickle was "unsupported operand 149".
    marker = tmp_path / "pwned"
    files = [
        (r"(posix|nt)\.system", lambda path: torch.save({"w": torch.zeros(2), "x": _Shell(marker)}, path)),  # blocked module
        (r"shutil\.copy", lambda path: torch.save({"x": _Copy(tmp_path / "source", marker)}, path)),  # not allowlisted
        (r"(posix|nt)\.system", lambda path: torch.save({"x": _Shell(marker)}, path, _use_new_zipfile_serialization=False)),
        (r"pathlib\.Path\.touch", lambda path: path.write_bytes(pickle.dumps(Payload(marker), protocol=5))),
    ]
    (tmp_path / "source").write_text("x")
    for index, (name, write) in enumerate(files):
        write(tmp_path / f"{index}.bin")
        with pytest.raises(UnsafeFileError, match=rf"pickled Python objects \(it imports {name}, which torch's safe") as error:
            load_tensors(tmp_path / f"{index}.bin", what="a pytorch_model.bin")
        message = str(error.value).replace(str(tmp_path), "")
        assert "False" not in message and "weights_only off" not in message and "weights_only=True)" in message
    assert not marker.exists()


def test_a_file_that_is_not_a_torch_file_is_called_so(tmp_path):
    (tmp_path / "garbage.bin").write_bytes(b"not a torch file")
    with pytest.raises(
        ValueError, match=r"is not a pytorch_model.bin: it is neither a torch.save file nor a safetensors file"
    ) as error:
        load_tensors(tmp_path / "garbage.bin", what="a pytorch_model.bin")
    assert not isinstance(error.value, UnsafeFileError) and "b'not a torch file'" in str(error.value)
    save_file({"w": torch.zeros(2)}, str(tmp_path / "weights.bin"))
    with pytest.raises(ValueError, match="it is a safetensors file, not a torch.save file"):
        load_tensors(tmp_path / "weights.bin")
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        load_tensors(tmp_path / "empty.bin")
