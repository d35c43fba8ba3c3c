"""``TrainingCheckpoint``: a fit that survives a crash and resumes where it stopped.

At every epoch end the callback writes the whole training state to a folder: the module's
weights, the optimizer's and the learning-rate schedule's state, early stopping's best
weights and counters, the torch RNG and the history. Tensors go to one safetensors file,
everything else to JSON; nothing is pickled. The write is atomic: a new ``epoch-NNNN``
folder is filled under a temporary name, renamed into place (``os.replace``), and only then
does ``latest.json`` (itself replaced atomically) point at it, so a process killed at any
moment leaves the previous complete checkpoint.

A later ``fit`` of the same estimator on the same data with the same folder loads that state
at ``on_train_begin`` and runs only the epochs that were left (skorch's ``LoadInitState``
would run ``max_epochs`` more). With the RNG, optimizer and schedule restored, the resumed
fit ends with the same weights as an uninterrupted one. A checkpoint written by another
configuration, other data or another validation split is refused with a ``ValueError``
naming what differs.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from skorch.callbacks import Callback, EarlyStopping, LRScheduler, PrintLog
from skorch.history import History

from . import _strict_json
from ._atomic import swap_in
from ._fingerprint import (
    _collect_data_rngs,
    _config,
    _data_hash,
    _data_rngs,
    _restore_data_rngs,
    _split_hash,
)

__all__ = ["TrainingCheckpoint", "checkpoints_last", "epochs_left"]

LATEST = "latest.json"
FORMAT = 1


class TrainingCheckpoint(Callback):
    """Write the training state at every epoch end; a later ``fit`` resumes from it.

    Add it under any name, e.g. ``callbacks=[("checkpoint", TrainingCheckpoint("run1"))]``.
    Wherever it is listed, it runs after every other callback but ``PrintLog``: it saves the
    epoch's final state (your schedule's step, your early stopping's counters). If the folder
    holds a checkpoint when ``fit`` starts, the fit resumes from it: it
    rebuilds the tokenizer and module as usual (same ``random_state``, same data), loads
    the saved state and runs only the remaining epochs. A finished fit (all epochs, or early
    stopping) is marked so: fitting again loads the final model and trains no further.
    ``partial_fit`` on a fitted estimator never resumes; it only writes.

    Parameters
    ----------
    dirname : str or os.PathLike
        The checkpoint folder (created if missing). Use one folder per fit: a search or
        cross-validation that gives every fold the same folder is refused at the second fold.
    keep : int, default=1
        How many epoch folders to keep (the newest); older ones are deleted after each write.

    Attributes
    ----------
    resumed_epochs_ : int or None
        Epochs loaded from the folder by the current fit, or None if it started afresh.
    finished_ : bool
        Whether the loaded checkpoint was of a finished fit (the fit then runs no epoch).

    Raises
    ------
    ValueError
        When the folder's checkpoint was written by a fit with other parameters, other
        data (a hash of the tokens and targets), another validation split or other module
        shapes; the message names the difference.

    Notes
    -----
    What is restored exactly: module and criterion weights, optimizer state, skorch
    ``LRScheduler`` and :class:`~tabformer.callbacks.WarmupLinearLR` state, ``EarlyStopping``
    counters and best weights, the fp16 grad scaler, the torch CPU (and CUDA) RNG, the
    pretraining dataset's mask or view generators and the history. NumPy's and Python's
    global RNGs are not saved (tabformer's training does not draw from them). Distributed
    (``accelerate``) fits are not supported.

    Examples
    --------
    >>> from tabformer import TabFormerClassifier
    >>> from tabformer.callbacks import TrainingCheckpoint
    >>> clf = TabFormerClassifier(random_state=0, callbacks=[("checkpoint", TrainingCheckpoint("run1"))])
    >>> # clf.fit(X, y) is killed in epoch 7; running clf.fit(X, y) again trains epochs 7..max_epochs only
    """

    def __init__(self, dirname, keep: int = 1):
        self.dirname = dirname
        self.keep = keep

    def initialize(self):
        """Check ``keep`` (skorch hook); returns ``self``."""
        if not isinstance(self.keep, (int, np.integer)) or isinstance(self.keep, bool) or self.keep < 1:
            raise ValueError(f"TrainingCheckpoint keep must be an int >= 1, got {self.keep!r}")
        self.resumed_epochs_ = None
        self.finished_ = False
        return self

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Fingerprint the fit; resume from the folder if it holds a checkpoint (skorch hook)."""
        self.resumed_epochs_, self.finished_, self._split = None, False, None
        self._fingerprint = {"config": _config(net), "data": _data_hash(X, y)}
        self._data_rngs = _data_rngs(X)
        if len(net.history) > 0:
            return  # a continued fit (partial_fit): it writes, it never resumes
        folder = latest_folder(self.dirname)
        if folder is None:
            return
        meta = _strict_json.loads((folder / "meta.json").read_text())  # a checkpoint's bare NaN (older ones) reads too
        self._check_same_fit(meta)
        tensors = load_file(str(folder / "state.safetensors"), device="cpu")
        # Every callback with state has built it in its own on_train_begin by now: a tabformer estimator runs its
        # checkpoints after all other callbacks (checkpoints_last), so the loaded state is not reset after this.
        _restore(net, meta, tensors)
        _restore_data_rngs(self._data_rngs, meta, tensors)
        self.resumed_epochs_, self.finished_ = int(meta["epochs_done"]), bool(meta["finished"])
        self._split = meta["split"]
        logging.getLogger("tabformer").info("%s: resumed from %s after epoch %d", type(net).__name__, folder, meta["epochs_done"])
        if net.verbose:
            print(f"Resuming from {folder} ({self.resumed_epochs_} epochs done{', finished' if self.finished_ else ''})")

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        """Check (resume) or record the split (skorch hook)."""
        split = {"train": _split_hash(dataset_train), "valid": _split_hash(dataset_valid)}
        if self._split is not None and self._split != split:
            raise ValueError(
                f"TrainingCheckpoint: the checkpoint in {str(self.dirname)!r} was trained on another train/validation "
                "split than this fit's; pass an int random_state (random_state=None draws a new split every fit), "
                "or a new folder"
            )
        self._split = split

    def on_epoch_end(self, net, **kwargs):
        """Write the state after this epoch (skorch hook)."""
        self._write(net, finished=False)

    def on_train_end(self, net, **kwargs):
        """Mark the checkpoint finished when the fit ended by itself (skorch hook)."""
        if self.finished_ or self._split is None or len(net.history) == 0:
            return
        stopping = [cb for _, cb in net.callbacks_ if isinstance(cb, EarlyStopping)]
        stopped = any(getattr(cb, "misses_", 0) >= cb.patience for cb in stopping)
        guard_failed = any(getattr(cb, "failure_", None) for _, cb in net.callbacks_)
        complete = "dur" in net.history[-1] and len(net.history) >= _max_epochs(net)
        # A Ctrl-C, an exception or a diverged fit keeps the last epoch-end checkpoint, to resume from.
        if (stopped or complete) and not guard_failed:
            self._write(net, finished=True)

    def __getstate__(self):  # the dataset's generators are this fit's, not settings: a pickle carries none of them
        return {key: value for key, value in vars(self).items() if key != "_data_rngs"}

    # ----------------------------------------------------------------- helpers
    def _check_same_fit(self, meta):
        if meta.get("format") != FORMAT:
            raise ValueError(f"TrainingCheckpoint: {str(self.dirname)!r} holds a checkpoint of format {meta.get('format')!r}")
        saved, now = meta["fingerprint"]["config"], self._fingerprint["config"]
        changed = sorted(key for key in saved.keys() | now.keys() if saved.get(key) != now.get(key))
        if changed:
            pairs = "; ".join(f"{key}: {saved.get(key, '<unset>')} -> {now.get(key, '<unset>')}" for key in changed[:6])
            raise ValueError(
                f"TrainingCheckpoint: the checkpoint in {str(self.dirname)!r} was written by a fit with other "
                f"parameters ({pairs}); use a new folder, or delete this one to start afresh"
            )
        if meta["fingerprint"]["data"] != self._fingerprint["data"]:
            raise ValueError(
                f"TrainingCheckpoint: the checkpoint in {str(self.dirname)!r} was written by a fit on other data "
                f"({meta['fingerprint']['data']['shapes']} against this fit's {self._fingerprint['data']['shapes']}); "
                "use a new folder, or delete this one to start afresh"
            )

    def _write(self, net, finished: bool):
        root = Path(self.dirname)
        root.mkdir(parents=True, exist_ok=True)
        epochs = len(net.history)
        name = f"epoch-{epochs:04d}{'-final' if finished else ''}"
        tensors, meta = _collect(net)
        meta["data_rngs"] = _collect_data_rngs(getattr(self, "_data_rngs", ()), tensors)
        meta.update(format=FORMAT, epochs_done=epochs, finished=finished, fingerprint=self._fingerprint, split=self._split)
        tmp = root / f".tmp-{name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        save_file(tensors, str(tmp / "state.safetensors"))
        # strict JSON: a NaN in the history or early stopping's infinite threshold is tagged, and read back exactly
        _write_text(tmp / "meta.json", _strict_json.dumps(meta, default=_json_default))
        swap_in(tmp, root / name)  # a folder of this name (a finished fit's, rewritten) is replaced only once this one is whole
        _write_text(root / f".{LATEST}.tmp", json.dumps({"folder": name}))
        os.replace(root / f".{LATEST}.tmp", root / LATEST)
        folders = sorted(p for p in root.glob("epoch-*") if p.is_dir() and p.name != name)
        for old in folders[: max(0, len(folders) - (int(self.keep) - 1))]:
            shutil.rmtree(old, ignore_errors=True)


def latest_folder(dirname) -> Path | None:
    """The epoch folder ``latest.json`` in ``dirname`` points at, or None if there is none.

    Parameters
    ----------
    dirname : str or os.PathLike

    Returns
    -------
    pathlib.Path or None
    """
    pointer = Path(dirname) / LATEST
    if not pointer.is_file():
        return None
    folder = Path(dirname) / json.loads(pointer.read_text())["folder"]
    if not (folder / "meta.json").is_file() or not (folder / "state.safetensors").is_file():
        raise ValueError(f"TrainingCheckpoint: {str(pointer)!r} points at {str(folder)!r}, which is incomplete")
    return folder


def checkpoints_last(callbacks: list) -> list:
    """``callbacks`` with every ``TrainingCheckpoint`` moved after the others, before the ``PrintLog`` (skorch's last).

    A checkpoint listed before a schedule or an early stopping wrote its epoch-end state before
    theirs (a ``StepLR`` one step behind, the previous epoch's counters), and its resume at
    ``on_train_begin`` was reset by theirs: a resumed fit was not the uninterrupted one.

    Parameters
    ----------
    callbacks : list of (str, Callback)
        A net's initialized ``callbacks_``.

    Returns
    -------
    list of (str, Callback)
    """
    rank = [1 if isinstance(cb, TrainingCheckpoint) else 2 if isinstance(cb, PrintLog) else 0 for _, cb in callbacks]
    return [callbacks[i] for i in sorted(range(len(callbacks)), key=rank.__getitem__)]  # stable: each group keeps its order


def epochs_left(net, epochs):
    """The epochs ``fit_loop`` runs: the rest of ``max_epochs`` after a resume, else ``epochs``.

    Parameters
    ----------
    net : skorch NeuralNet
    epochs : int or None
        What the caller asked for (None: ``max_epochs``).

    Returns
    -------
    int or None
    """
    for _, callback in getattr(net, "callbacks_", []):
        done = getattr(callback, "resumed_epochs_", None)
        if isinstance(callback, TrainingCheckpoint) and done is not None:
            return 0 if callback.finished_ else max(0, (_max_epochs(net) if epochs is None else epochs) - done)
    return epochs


def _max_epochs(net) -> int:
    """The epochs a fit runs: a tabformer estimator's resolved ``max_epochs`` (its parameter
    may be ``"auto"``), or any skorch net's ``max_epochs``."""
    setting = getattr(net, "_setting", None)
    return int(setting("max_epochs") if callable(setting) else net.max_epochs)


def _write_text(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _json_default(value):
    if isinstance(value, (np.generic, torch.Tensor)):
        return value.item()
    if isinstance(value, (tuple, set)):
        return list(value)
    raise TypeError(f"TrainingCheckpoint cannot write {type(value).__name__} {value!r} as JSON")


def _plain(state: dict, prefix: str, tensors: dict) -> dict:
    """Tensors of ``state`` into ``tensors`` under ``prefix``; the rest returned as JSON values."""
    rest = {}
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            # clone: safetensors refuses tensors that share memory (tied weights)
            tensors[f"{prefix}{key}"] = value.detach().to("cpu", copy=True).contiguous()
        else:
            rest[str(key)] = value
    return rest


def _named_callbacks(net):
    return [(name, cb) for name, cb in getattr(net, "callbacks_", []) if not isinstance(cb, TrainingCheckpoint)]


def _collect(net):
    """``(tensors, meta)``: the training state of ``net`` as safetensors tensors and JSON values."""
    tensors, meta = {}, {}
    _plain(net.module_.state_dict(), "module.", tensors)
    criterion = getattr(net, "criterion_", None)
    if isinstance(criterion, torch.nn.Module):
        _plain(criterion.state_dict(), "criterion.", tensors)
    optimizer = net.optimizer_.state_dict()
    meta["optimizer"] = {
        "param_groups": optimizer["param_groups"],
        "state": {str(i): _plain(state, f"optimizer.{i}.", tensors) for i, state in optimizer["state"].items()},
    }
    meta["shapes"] = {key: list(value.shape) for key, value in net.module_.state_dict().items()}
    callbacks = {}
    for name, cb in _named_callbacks(net):
        if isinstance(cb, LRScheduler) and getattr(cb, "lr_scheduler_", None) is not None:
            callbacks[name] = {"scheduler": cb.lr_scheduler_.state_dict(), "batch_idx_": getattr(cb, "batch_idx_", 0)}
        elif isinstance(cb, EarlyStopping):
            weights = cb.best_model_weights_
            if weights is not None:
                _plain(weights, f"callbacks.{name}.", tensors)
            callbacks[name] = {key: getattr(cb, key) for key in ("misses_", "dynamic_threshold_", "best_epoch_")}
            callbacks[name]["has_weights"] = weights is not None
        elif hasattr(cb, "peak_lrs_"):  # WarmupLinearLR
            callbacks[name] = {key: getattr(cb, key) for key in ("total_steps_", "step_", "peak_lrs_")}
    meta["callbacks"] = callbacks
    scaler = getattr(net, "grad_scaler_", None)
    meta["grad_scaler"] = scaler.state_dict() if scaler is not None and scaler.is_enabled() else None
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.stack(torch.cuda.get_rng_state_all())
    meta["history"] = net.history.to_list()
    return tensors, meta


def _prefixed(tensors: dict, prefix: str) -> OrderedDict:
    return OrderedDict((key[len(prefix) :], value) for key, value in tensors.items() if key.startswith(prefix))


def _restore(net, meta: dict, tensors: dict) -> None:
    """Load the state ``_collect`` wrote into ``net`` (initialized, every other callback's ``on_train_begin`` run)."""
    now = {key: list(value.shape) for key, value in net.module_.state_dict().items()}
    if now != meta["shapes"]:
        differ = sorted(key for key in now.keys() | meta["shapes"].keys() if now.get(key) != meta["shapes"].get(key))
        raise ValueError(
            f"TrainingCheckpoint: the checkpoint's module differs from this fit's: {differ[0]!r} has shape "
            f"{meta['shapes'].get(differ[0])} there and {now.get(differ[0])} here; use a new folder"
        )
    net.module_.load_state_dict(_prefixed(tensors, "module."))
    criterion = getattr(net, "criterion_", None)
    if isinstance(criterion, torch.nn.Module) and criterion.state_dict():
        criterion.load_state_dict(_prefixed(tensors, "criterion."))
    _restore_optimizer(net, meta, tensors)
    _restore_callbacks(net, meta, tensors)
    for cb in dict(_named_callbacks(net)).values():
        if hasattr(cb, "_snapshot"):  # NonFiniteGuard: the restored weights are the last good ones
            cb._snapshot(net)
    scaler = getattr(net, "grad_scaler_", None)
    if meta.get("grad_scaler") and scaler is not None:
        scaler.load_state_dict(meta["grad_scaler"])
    net.history = History(meta["history"])
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and torch.cuda.is_available() and len(tensors["rng.cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(list(tensors["rng.cuda"]))


def _restore_optimizer(net, meta: dict, tensors: dict) -> None:
    current = net.optimizer_.state_dict()
    groups = []
    for saved, group in zip(meta["optimizer"]["param_groups"], current["param_groups"]):
        groups.append({key: tuple(value) if isinstance(group.get(key), tuple) else value for key, value in saved.items()})
    state = {}
    for index, plain in meta["optimizer"]["state"].items():
        state[int(index)] = {**plain, **_prefixed(tensors, f"optimizer.{index}.")}
    net.optimizer_.load_state_dict({"state": state, "param_groups": groups})


def _restore_callbacks(net, meta: dict, tensors: dict) -> None:
    callbacks = dict(_named_callbacks(net))
    for name, saved in meta["callbacks"].items():
        cb = callbacks.get(name)
        if isinstance(cb, LRScheduler):
            cb.lr_scheduler_.load_state_dict(saved["scheduler"])
            cb.batch_idx_ = saved["batch_idx_"]
        elif isinstance(cb, EarlyStopping):
            for key in ("misses_", "dynamic_threshold_", "best_epoch_"):
                setattr(cb, key, saved[key])
            cb.best_model_weights_ = _prefixed(tensors, f"callbacks.{name}.") if saved["has_weights"] else None
        elif cb is not None and hasattr(cb, "peak_lrs_"):
            cb.total_steps_, cb.step_, cb.peak_lrs_ = saved["total_steps_"], saved["step_"], saved["peak_lrs_"]
