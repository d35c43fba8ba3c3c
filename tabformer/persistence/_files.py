"""The files of a saved folder: written all at once, under a temporary name renamed into place (so a
failed save leaves the previous folder whole), and read with errors that name the missing or broken file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from .._atomic import sibling, swap_in, write_file
from ._format import ARRAYS_FILE, CONFIG_FILE, MissingFileError, PersistenceError, check_header

__all__ = ["Writer", "Reader"]


class Writer:
    """Collects a folder's files in memory; :meth:`commit` writes them (so a failed save leaves the previous folder).

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
        """Write the collected files into the folder ``path``: all of them or, if the save fails, none.

        A new folder, or one that holds a model (a ``config.json``), is filled under a temporary name beside
        it and renamed into place (the old one renamed aside first, then removed), so a save that fails or is
        killed leaves the previous model whole. Files of the old folder this save does not write stay
        (linked, or copied, into the new one). Any other folder (and one the rename cannot replace: a mount
        point, the working directory, a parent that is read-only) gets each file under a temporary name and
        then renamed over the old one, ``config.json`` last: a save cut short there is no model.

        Parameters
        ----------
        path : str or os.PathLike
            The folder (created with its parents if needed).

        Returns
        -------
        pathlib.Path
        """
        folder = Path(os.fspath(path))
        if folder.exists() and not folder.is_dir():
            raise PersistenceError(
                f"{folder} exists and is not a folder; save writes a folder (config.json, model.safetensors...)"
            )
        target = Path(os.path.realpath(folder))  # a link to a folder: the folder it points at is replaced
        if (not target.is_dir() or (target / CONFIG_FILE).exists()) and not _holds_working_directory(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = sibling(target, "tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                tmp.mkdir()
            except OSError:  # a parent we cannot write in: the folder's files are replaced one by one
                return self._write_in_place(folder)
            try:
                self._write_into(tmp)
            except BaseException:  # a full disk, an interrupt: the folder is as it was
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            try:
                if target.is_dir():
                    _carry_over(target, tmp, set(self.files))
                    shutil.copymode(target, tmp)
                swap_in(tmp, target)
                return folder
            except OSError:  # a mount point, a folder in use, a file we cannot read: as it was; replaced file by file
                shutil.rmtree(tmp, ignore_errors=True)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return self._write_in_place(folder)

    def _write_into(self, folder: Path) -> None:
        for name, data in sorted(self.files.items()):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            write_file(folder / name, data)

    def _write_in_place(self, folder: Path) -> Path:
        """Each file under a temporary name, then renamed over the old one; the old config.json goes first, the new last."""
        names = sorted(self.files, key=lambda name: (name == CONFIG_FILE, name))
        temps = {}
        try:
            for name in names:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                temps[name] = sibling(folder / name, "tmp")
                write_file(temps[name], self.files[name])
        except BaseException:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
            raise
        if CONFIG_FILE in self.files and (folder / CONFIG_FILE).exists():
            (folder / CONFIG_FILE).unlink()  # until the new one is in, the folder is no model (not old and new mixed)
        for name in names:
            os.replace(temps[name], folder / name)
        return folder


def _holds_working_directory(folder: Path) -> bool:
    """Whether this process works in ``folder`` (or below it): renaming it would move the working directory away."""
    try:
        here = Path(os.getcwd()).resolve()
    except OSError:
        return False
    return here == folder or folder in here.parents


def _carry_over(old: Path, new: Path, written: set) -> None:
    """Link (or copy) into ``new`` every file of ``old`` that the save does not write: an earlier save's or the user's."""

    def skip(directory, names):
        here = Path(directory).relative_to(old)

        def merged(name):  # a folder in both is merged; any other name the new folder holds keeps the new one
            before, after = old / here / name, new / here / name
            return not os.path.lexists(after) or (before.is_dir() and after.is_dir() and not before.is_symlink())

        return {name for name in names if (here / name).as_posix() in written or not merged(name)}

    shutil.copytree(old, new, symlinks=True, ignore=skip, copy_function=_link_or_copy, dirs_exist_ok=True)


def _link_or_copy(source, destination) -> None:
    try:
        os.link(source, destination)
    except OSError:  # a file system without hard links
        shutil.copy2(source, destination)


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
