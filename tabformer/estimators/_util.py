"""Small helpers the estimators share: building a routed part, counting rows."""

from __future__ import annotations

import contextlib
import copy
import difflib
import inspect
import threading

import numpy as np
import torch

from ..nn.encoder import TransformerEncoder

__all__ = [
    "adopt_pretrained_tokenizer",
    "construct",
    "encoder_settings",
    "num_samples",
    "seeded_torch",
    "pretrained_step",
]


def construct(cls, params: dict, prefix: str, *args):
    """``cls(*args, **params)``, with an error naming any ``prefix__`` key it does not take."""
    signature = inspect.signature(cls).parameters
    accepted = set(signature)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values())
    unknown = [] if takes_any else sorted(set(params) - accepted)
    if unknown:
        # What the estimator passes itself (a head's width, a module's parts); an encoder's d_model is the user's to set
        supplied = set() if prefix == "encoder" else {"d_model", "n_outputs", "embedder", "encoder", "head"}
        valid = sorted(accepted - supplied)
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        raise ValueError(
            f"{', '.join(prefix + '__' + key for key in unknown)}: not a parameter of {cls.__name__}"
            + (f" (did you mean {prefix}__{close[0]}?)" if close else "")
            + f"; valid {prefix}__ parameters: {valid}"
        )
    return cls(*args, **params)


def num_samples(X) -> int:
    """Rows in ``X`` (a DataFrame, an array or a list of samples)."""
    if hasattr(X, "__array__") and not hasattr(X, "shape"):
        X = np.asarray(X)
    if hasattr(X, "shape") and len(X.shape) > 0:
        return int(X.shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"X must be a DataFrame, an array or a list of samples, got {type(X).__name__}") from None


#: Held by a seeded fit: torch's global RNG is one per process, so seeded fits in threads of one
#: process (joblib's threading backend, a Dask worker of several threads) drew from each other's
#: stream and restored each other's state, and random_state=0 gave other scores than a serial run.
_SEEDED_FIT = threading.RLock()


@contextlib.contextmanager
def seeded_torch(seed, device="cpu"):
    """Seed torch with ``seed`` inside a fork of its RNGs, restored afterwards; with None, no fork.

    A seeded fit holds :data:`_SEEDED_FIT`: seeded fits in threads of one process take turns.
    Unseeded (``random_state=None``), the fit draws from the global torch RNG and moves it on,
    as scikit-learn's ``None`` does: forked and restored, every unseeded fit started from the
    same state, and fits without a validation split (an ensemble, repeated runs) came out identical.

    A fit on ``device`` "cuda" also forks and seeds every CUDA device's RNG; a CPU fit seeds the CPU's
    alone. ``torch.manual_seed`` inside a CPU-only fork left CUDA's RNGs at the fit's seed afterwards.
    """
    if seed is None:
        yield
        return
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.init()  # now, not lazily inside the fit: the fork saves each device's state only once it exists
    with _SEEDED_FIT, torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if cuda else []):
        if cuda:
            torch.manual_seed(seed)
        else:
            torch.default_generator.manual_seed(seed)
        yield


def encoder_settings(estimator) -> dict:
    """The settings of the encoder ``fit`` will build: TransformerEncoder's defaults, then the routed ones."""
    pretrained = estimator.encoder if estimator.encoder is not None else estimator._pretrained()
    config = getattr(getattr(pretrained, "encoder", pretrained), "config", None)
    if isinstance(config, dict):
        return dict(config)
    defaults = {name: p.default for name, p in inspect.signature(TransformerEncoder).parameters.items()}
    return {**defaults, **estimator.get_params_for("encoder")}


def adopt_pretrained_tokenizer(tokenizer, X):
    """A copy of a pretrained encoder's fitted ``tokenizer`` that reads ``X``'s text columns
    (a sentence pair, DataFrame column names); its vocabulary is the weights' and is not refit.

    Parameters
    ----------
    tokenizer : the PretrainedEncoder's tokenizer (left unchanged)
    X : what ``fit`` was given

    Returns
    -------
    a fitted tokenizer
    """
    tokenizer = copy.deepcopy(tokenizer)
    if hasattr(tokenizer, "read_columns"):  # text: the pair it was saved with need not be X's
        pretrained_step(tokenizer, X, "read_columns")
    return tokenizer


def pretrained_step(tokenizer, X, method: str):
    """``tokenizer.<method>(X)`` for a pretrained encoder's tokenizer; on failure the error also
    says what that tokenizer reads (texts given to an image encoder said "file ... does not exist").

    Parameters
    ----------
    tokenizer : a fitted tokenizer (a PretrainedEncoder's)
    X : the training input
    method : str
        ``"transform"``, ``"read_columns"`` or ``"add_categories"``.

    Returns
    -------
    what the method returns
    """
    try:
        return getattr(tokenizer, method)(X)
    except (ValueError, TypeError) as error:
        kind = getattr(tokenizer, "kind", type(tokenizer).__name__)
        raise type(error)(
            f"the pretrained encoder's {type(tokenizer).__name__} reads {kind} inputs and cannot read X: {error}"
        ) from error
