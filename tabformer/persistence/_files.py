"""The files of a saved folder: written all at once (so a failed save writes nothing) and read
with errors that name the missing or broken file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ._format import ARRAYS_FILE, CONFIG_FILE, MissingFileError, PersistenceError, check_header

__all__ = ["Writer", "Reader"]


class Writer:
    """Collects a folder's files in memory; :meth:`commit` writes them (so a failed save writes nothing).

    ``sub(prefix)`` writes into a subfolder and shares this folder's arrays file;
    ``nested(prefix)`` is a folder of its own (its own config, weights and arrays).
    """

    def __init__(self, prefix: str = "", files: dict | None = None, arrays: dict | None = None):
        self.prefix = prefix
        self.files = {} if files is None else files
        self.arrays = {} if arrays is None else arrays
        self.root = prefix
        self._keys = set()

    def sub(self, prefix: str) -> Writer:
        child = Writer(self.prefix + prefix, self.files, self.arrays)
        child.root, child._keys = self.root, self._keys
        return child

    def nested(self, prefix: str) -> Writer:
        return Writer(self.prefix + prefix, self.files)

    def name(self, filename: str) -> str:
        """``filename`` as listed in this folder's config (relative to its root)."""
        return (self.prefix + filename)[len(self.root) :]

    def text(self, filename: str, text: str) -> str:
        self.files[self.prefix + filename] = text.encode("utf-8")
        return self.name(filename)

    def json(self, filename: str, obj) -> str:
        return self.text(filename, json.dumps(obj, indent=1, allow_nan=False) + "\n")

    def tensors(self, filename: str, tensors: dict, metadata: dict | None = None) -> str:
        from safetensors.torch import save

        tensors = {key: value.detach().to("cpu").contiguous().clone() for key, value in tensors.items()}
        self.files[self.prefix + filename] = save(tensors, metadata={"format": "pt", **(metadata or {})})
        return self.name(filename)

    def array(self, where: str, array: np.ndarray) -> str:
        key = where
        while key in self._keys:
            key += "'"
        self._keys.add(key)
        self.arrays[key] = np.ascontiguousarray(array)
        return key

    def listed(self) -> list:
        """Every file of this folder (relative names), arrays file included."""
        files = [name[len(self.root) :] for name in self.files if name.startswith(self.root)]
        return sorted(set(files) | ({ARRAYS_FILE} if self.arrays else set()))

    def finish_arrays(self):
        if self.arrays:
            from safetensors.numpy import save

            self.files[self.root + ARRAYS_FILE] = save(self.arrays)
            self.arrays = {}

    def commit(self, path) -> Path:
        folder = Path(os.fspath(path))
        if folder.exists() and not folder.is_dir():
            raise PersistenceError(
                f"{folder} exists and is not a folder; save writes a folder (config.json, model.safetensors...)"
            )
        for name, data in sorted(self.files.items()):
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return folder


class Reader:
    """Reads a saved folder's files, with errors that name the file.

    ``nested(prefix)`` reads a saved folder inside this one (with its own config and files).
    """

    def __init__(self, folder, trusted=(), top=None):
        self.folder = Path(os.fspath(folder))
        self.top = self.folder if top is None else top
        # one name as a str is that name, not its characters (the error then advised trusted=['mycb.MyCB'])
        self.trusted = (trusted,) if isinstance(trusted, str) else tuple(trusted or ())
        self._arrays = None

    def nested(self, prefix: str) -> Reader:
        self._check_inside(prefix, "folder")
        return Reader(self.folder / prefix, self.trusted, self.top)

    def _check_inside(self, name, what: str) -> None:
        if not isinstance(name, str) or Path(name).is_absolute() or ".." in Path(name).parts:
            raise PersistenceError(f"{self.folder / CONFIG_FILE} names the {what} {name!r}, which is not inside the folder")

    def path(self, name: str) -> Path:
        self._check_inside(name, "file")
        path = self.folder / name
        if not path.is_file():
            raise MissingFileError(f"{self.top} is missing {path.relative_to(self.top)}: the model cannot be loaded without it")
        return path

    def text(self, name: str) -> str:
        return self.path(name).read_text(encoding="utf-8")

    def json(self, name: str):
        path = self.path(name)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise PersistenceError(f"{path} is not valid JSON ({error})") from None

    def array(self, key: str) -> np.ndarray:
        if self._arrays is None:
            from safetensors.numpy import load_file

            path = self.path(ARRAYS_FILE)
            try:
                self._arrays = load_file(str(path))
            except Exception as error:  # safetensors raises its own error types
                raise PersistenceError(f"{path} is not a readable safetensors file ({error})") from None
        if key not in self._arrays:
            raise PersistenceError(f"{self.folder / ARRAYS_FILE} lacks the array {key!r} that config.json refers to")
        return self._arrays[key]

    def open(self) -> tuple[dict, str]:
        """``(config, object kind)`` of this folder, after checking its header and that every listed file is here."""
        if not self.folder.exists():
            raise MissingFileError(f"{self.folder} does not exist")
        if not self.folder.is_dir():
            raise PersistenceError(
                f"{self.folder} is a file; tabformer saves models as folders (config.json, model.safetensors...) and never "
                "unpickles files. Models saved with pickle or joblib load with pickle.load/joblib.load, if you trust them"
            )
        config = self.json(CONFIG_FILE)
        kind = check_header(config, self.path(CONFIG_FILE))
        for name in config.get("files", []):
            self.path(name)
        return config, kind
