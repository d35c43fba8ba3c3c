"""The parameters every tabformer estimator shares: declared once, documented once, and
checked once at ``fit`` (scikit-learn's ``_parameter_constraints`` style), so a bad value
is refused with a message naming the parameter, the value and what is allowed.

The estimators' ``__init__`` only store; sklearn's ``set_params`` and ``clone`` must
never validate (``check_set_params``), which is why every check lives here.
"""

from __future__ import annotations

import difflib
import inspect
import os
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from skorch import NeuralNet

from ..nn.encoder import TransformerEncoder
from ..nn.models import PretrainedEncoder
from ..tokenizers import BaseTokenizer
from ._inference import tokens_per_row
from ._input_kind import refuse_a_dict
from ._precision import PRECISIONS
from ._util import encoder_settings

__all__ = [
    "SHARED_CONSTRAINTS",
    "FINE_TUNING_CONSTRAINTS",
    "ENCODER_CONSTRAINTS",
    "CLASS_WEIGHT_CONSTRAINT",
    "check_params",
    "check_resolved_heads",
    "check_memory",
    "check_fit_params",
    "check_training_memory",
    "DeferredCallbacksMixin",
]

SHARED_CONSTRAINTS = {
    # Names are checked against the registry when the tokenizer is made (make_tokenizer),
    # so a tokenizer registered after import is accepted.
    "tokenizer": [str, BaseTokenizer],
    "encoder": [None, TransformerEncoder, PretrainedEncoder, str, os.PathLike],
    "lr": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "max_epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "batch_size": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1}), StrOptions({"auto"})],
    "lr_schedule": [StrOptions({"cosine", "warmup_linear", "auto"}), None],
    "train_split": [StrOptions({"auto"}), callable, None],
    "validation_fraction": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"}), None],
    "patience": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
    "random_state": [Interval(Integral, 0, 2**32 - 1, closed="both"), np.random.RandomState, None],
    "verbose": ["verbose"],
    "device": [str, torch.device],
    "precision": [StrOptions(set(PRECISIONS))],
    "distributed": [StrOptions({"auto"}), "boolean", dict, None, HasMethods(["prepare_model", "backward"])],
    "memory_limit": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
}

_SHARE = Interval(Real, 0, 1, closed="left")
_POSITIVE = Interval(Integral, 1, None, closed="left")
#: the routed ``encoder__*`` settings of a fresh TransformerEncoder, checked at fit like the rest
ENCODER_CONSTRAINTS = {
    "d_model": [_POSITIVE],
    "n_layers": [_POSITIVE],
    "n_heads": [_POSITIVE],
    "d_ff": [_POSITIVE, None],
    "dropout": [_SHARE],
    "attention_dropout": [_SHARE],
    "ffn_dropout": [_SHARE],
    "max_length": [_POSITIVE],
    "layer_norm_eps": [Interval(Real, 0, None, closed="neither")],
    "gradient_checkpointing": ["boolean"],
    "positions_scale": [Interval(Real, 0, None, closed="neither"), None],
}

#: what the classifier, regressor and tagger add: they warm-start and may freeze parts
FINE_TUNING_CONSTRAINTS = {
    **SHARED_CONSTRAINTS,
    "freeze_encoder": ["boolean"],
    "freeze_embedder": ["boolean"],
}


def check_params(estimator) -> None:
    """Validate ``estimator``'s own parameters against its ``_parameter_constraints``.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError (a ``ValueError`` and a
    ``TypeError``) naming the parameter, the allowed values and the value given.
    """
    check_names(estimator)
    params = {name: getattr(estimator, name) for name in estimator._parameter_constraints}
    if isinstance(params.get("encoder"), BaseEstimator):
        # sklearn's message printed the whole repr of the pretrainer's module, without the way out.
        raise InvalidParameterError(
            f"encoder={type(params['encoder']).__name__}(...) is an estimator; pass its fitted encoder "
            "(encoder=pretrainer.encoder_) or the folder its save wrote (encoder='folder/')"
        )
    validate_parameter_constraints(estimator._parameter_constraints, params, caller_name=type(estimator).__name__)
    device = params.get("device", "auto")
    cuda = not (isinstance(device, str) and device == "auto") and torch.device(device).type == "cuda"
    if cuda and not torch.cuda.is_available():  # else torch's "Found no NVIDIA driver", after the tokenizer's fit
        raise ValueError(
            f"device={str(device)!r}, but torch sees no CUDA GPU (torch.cuda.is_available() is False); pass "
            "device='auto' (a GPU when one is visible, else the CPU) or device='cpu'"
        )
    # Routed encoder settings: named with their prefix, so the message says encoder__d_model.
    routed = {f"encoder__{key}": value for key, value in NeuralNet.get_params_for(estimator, "encoder").items()}
    constraints = {f"encoder__{key}": rule for key, rule in ENCODER_CONSTRAINTS.items() if f"encoder__{key}" in routed}
    validate_parameter_constraints(constraints, routed, caller_name=type(estimator).__name__)
    d_model, n_heads = routed.get("encoder__d_model"), routed.get("encoder__n_heads")
    if d_model is not None and n_heads is not None and d_model % n_heads:
        raise ValueError(
            f"encoder__d_model={d_model} must be divisible by encoder__n_heads={n_heads} (each head gets d_model / "
            f"n_heads dimensions); e.g. encoder__d_model={n_heads * max(1, round(d_model / n_heads))}"
        )


#: other libraries' names for skorch's parameters
_ALIASES = {"learning_rate": "lr", "epochs": "max_epochs", "n_epochs": "max_epochs", "seed": "random_state"}


def check_names(estimator) -> None:
    """Refuse a parameter name no ``__init__`` takes and no prefix routes, with the closest valid name.

    skorch finds such a typo (``max_epoch=2``) only when the module is built, after the
    tokenizer's fit, and names no alternative.

    Raises
    ------
    ValueError
        Naming the unknown parameter and, where one is close, the name meant.
    """
    # skorch adds module, criterion and optimizer to prefixes_ only as initialize() builds them.
    prefixes = sorted({*estimator.prefixes_, "module", "criterion", "optimizer"}, key=len, reverse=True)
    names = {name for cls in type(estimator).__mro__ if "__init__" in vars(cls) for name in inspect.signature(cls).parameters}
    names -= {"self", "args", "kwargs"}
    unknown = [
        key
        for key in sorted(getattr(estimator, "_params_to_validate", ()))
        if key not in names and not any(key == prefix or key.startswith(prefix + "__") for prefix in prefixes)
    ]
    if not unknown:
        _check_part_settings(estimator)
        return
    hints = []
    for key in unknown:
        routed = [f"{prefix}__{key[len(prefix) :].lstrip('_')}" for prefix in prefixes if key.startswith(prefix)]
        similar = difflib.get_close_matches(key, sorted(names) + [f"{prefix}__" for prefix in prefixes], n=1)
        close = routed or ([_ALIASES[key]] if key in _ALIASES else similar)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ValueError(
        f"{type(estimator).__name__} got unknown parameter(s) {', '.join(hints)}; get_params() lists the valid names, "
        "and settings of a part take its prefix (encoder__d_model, tokenizer__vocab_size, optimizer__weight_decay...)"
    )


#: settings skorch routes to the optimizer besides its constructor's (per-group options)
_ROUTED_EXTRA = {"optimizer": {"param_groups"}, "criterion": set()}


def _check_part_settings(estimator) -> None:
    """Refuse an ``optimizer__*`` or ``criterion__*`` key its class does not take, naming the one meant.

    skorch passes them to the class as the module is built, after the tokenizer's fit, where a
    typo (``optimizer__weight_decy``) was a bare ``TypeError`` from ``AdamW.__init__``.
    """
    for prefix, extra in _ROUTED_EXTRA.items():
        part = getattr(estimator, prefix, None)
        try:
            signature = inspect.signature(part).parameters if isinstance(part, type) else None
        except (TypeError, ValueError):  # a builtin or C class without a readable signature
            signature = None
        if not signature or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values()):
            continue
        # settings the estimator checks once y is seen (the classifier's criterion__pos_weight, for a multi-label y)
        later = getattr(estimator, "_settings_checked_with_y", lambda prefix: set())(prefix)
        accepted = sorted((set(signature) - {"self", "params"}) | extra | later)
        given = {key.split("__")[1] for key in getattr(estimator, "_params_to_validate", ()) if key.startswith(prefix + "__")}
        for key in sorted(given - set(accepted)):
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {prefix}__{close[0]}?)" if close else ""
            raise ValueError(f"{prefix}__{key}: not a parameter of {part.__name__}{hint}; it takes {accepted}")
    _check_reduction(estimator)


def _check_reduction(estimator) -> None:
    """Refuse a criterion ``reduction`` other than ``"mean"``: the training loop needs the rows' mean loss.

    ``sample_weight``, ``class_weight`` and an ensemble's out-of-fold members compute that mean
    themselves (``_weights.weighted_loss``), so ``"sum"`` was dropped silently there (and only
    there), and ``"none"`` failed in backward with torch's "grad can be implicitly created only
    for scalar outputs".
    """
    criterion = getattr(estimator, "criterion", None)
    routed = NeuralNet.get_params_for(estimator, "criterion") if criterion is not None else {}
    reduction = routed.get("reduction", getattr(criterion, "reduction", "mean"))
    if isinstance(reduction, str) and reduction != "mean":
        name = "criterion__reduction" if "reduction" in routed else "the criterion's reduction"
        raise ValueError(
            f"{name}={reduction!r} is not supported: training minimises the rows' mean loss (sample_weight, "
            "class_weight and ensemble members weigh it themselves, which would drop 'sum'; 'none' leaves no single loss "
            "to minimise); leave reduction='mean' and scale lr instead of the loss"
        )


def check_resolved_heads(estimator) -> None:
    """Refuse a new encoder whose ``d_model`` the heads the user did not set do not divide (the table
    recipe's 4, or the encoder's default 8), naming where they came from, before the tokenizer's fit.

    Raises
    ------
    ValueError
        If ``encoder__d_model`` is not divisible by the recipe's or the default ``n_heads``.
    """
    if estimator.encoder is not None or "n_heads" in NeuralNet.get_params_for(estimator, "encoder"):
        return  # a given encoder has its heads; check_params compared the user's own pair
    defaults = inspect.signature(TransformerEncoder).parameters
    params = estimator.get_params_for("encoder")
    d_model, n_heads = params.get("d_model", defaults["d_model"].default), params.get("n_heads", defaults["n_heads"].default)
    if d_model % n_heads:
        source = "the recipe's" if "encoder__n_heads" in estimator.resolved_params_ else "the encoder's default"
        fits = max(k for k in range(1, n_heads + 1) if d_model % k == 0)
        raise ValueError(
            f"encoder__d_model={d_model} is not divisible by encoder__n_heads={n_heads} ({source}; each head gets "
            f"d_model / n_heads dimensions): pass encoder__n_heads={fits}, or an encoder__d_model divisible by {n_heads}"
        )


def _memory_limit_bytes(estimator) -> float | None:
    limit = getattr(estimator, "memory_limit", "auto")
    if limit is None:
        return None
    if limit != "auto":
        return float(limit) * 2**30
    device = torch.device(estimator.device)
    if device.type == "cuda" and torch.cuda.is_available():
        return float(torch.cuda.get_device_properties(device).total_memory)
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not a POSIX system: no automatic limit
        return None


def check_memory(estimator, n_bytes: float, what: str) -> None:
    """Refuse a fit whose estimated memory ``n_bytes`` exceeds the estimator's ``memory_limit``.

    Parameters
    ----------
    estimator : TabFormerNet
    n_bytes : float
        The estimate, in bytes.
    what : str
        What would be allocated, and from which settings (for the message).

    Raises
    ------
    MemoryError
        Naming the estimate, the limit and how to raise it.
    """
    limit = _memory_limit_bytes(estimator)
    if limit is not None and n_bytes > limit:
        raise MemoryError(
            f"{type(estimator).__name__}: {what} needs about {n_bytes / 2**30:,.1f} GiB, over the memory_limit of "
            f"{limit / 2**30:,.1f} GiB ({'the device memory' if estimator.memory_limit == 'auto' else 'yours'}); "
            "choose smaller settings, or set memory_limit (GiB, None: no check) if the estimate is wrong"
        )


def check_fit_params(estimator, fit_params: dict, method: str = "fit", X=None) -> None:
    """Refuse, before anything is fitted, the fit parameters that skorch would drop or pass on to fail late,
    and an ``X`` given as a dict (:func:`~._input_kind.refuse_a_dict`).

    skorch hands ``**fit_params`` to the module's forward: ``classes`` in ``fit`` was dropped without a
    word (its ``partial_fit`` takes it), and a misspelt ``sample_weights`` failed after the tokenizer's fit,
    naming an embedder's ``forward``. Other names still reach the module (a custom ``module=`` may take them).

    Parameters
    ----------
    estimator : TabFormerNet
    fit_params : dict
        The extra keyword arguments of ``fit`` or ``partial_fit``.
    method : str, default="fit"
    X : the input of ``fit``, optional
    """
    refuse_a_dict(X, type(estimator).__name__, method)
    name = f"{type(estimator).__name__}.{method}()"
    if "classes" in fit_params:
        raise TypeError(
            f"{name} takes no classes=: it reads the classes from y. Declare them with the constructor's classes= "
            "or partial_fit's first call"
        )
    for key in fit_params:
        if difflib.get_close_matches(key, ["sample_weight"], n=1, cutoff=0.75):
            raise TypeError(f"{name} got an unexpected keyword argument {key!r}; did you mean sample_weight?")


def check_training_memory(estimator, data) -> None:
    """Refuse (``MemoryError``) a fit whose encoder and training batch would not fit in ``memory_limit``.

    Parameters
    ----------
    estimator : TabFormerNet, with a fitted ``tokenizer_`` and ``resolved_params_``
    data : dict of ndarray (the training tokens) or a dataset
    """
    n_tokens = tokens_per_row(estimator, data) or 1
    settings = encoder_settings(estimator)
    batch_size = estimator._setting("batch_size")
    if batch_size == -1:
        batch_size = len(next(iter(data.values()))) if isinstance(data, dict) else len(data)
    # An ensemble's members each keep their weights, optimizer moments and activations (ensemble_size)
    members = int((getattr(estimator, "resolved_params_", None) or {}).get("ensemble_size", 1))
    what = (
        f"training {f'{members} members of ' if members > 1 else ''}an encoder of d_model={settings['d_model']}, "
        f"n_layers={settings['n_layers']}, n_heads={settings['n_heads']}, "
        f"d_ff={settings.get('d_ff') or 4 * settings['d_model']} on {n_tokens} tokens per row, {batch_size} rows per batch"
    )
    check_memory(estimator, members * training_bytes(settings, int(n_tokens), int(batch_size)), what)


def training_bytes(settings: dict, n_tokens: int, batch_size: int) -> float:
    """Rough float32 bytes of training: weights, gradients and AdamW's two moments of the
    encoder, and the activations one batch keeps for backward (attention maps included).

    Parameters
    ----------
    settings : dict
        The encoder's ``d_model``, ``n_layers``, ``n_heads`` and ``d_ff``.
    n_tokens : int
        Tokens per row (the sequence length, CLS aside).
    batch_size : int
        Rows per training step.

    Returns
    -------
    float
    """
    d, layers, heads = int(settings["d_model"]), int(settings["n_layers"]), int(settings["n_heads"])
    d_ff = int(settings.get("d_ff") or 4 * d)
    weights = layers * (4.0 * d * d + 2.0 * d * d_ff)
    length = n_tokens + 1
    activations = layers * float(batch_size) * length * (heads * length + 8.0 * d + 2.0 * d_ff)
    return 4.0 * (4 * weights + activations)


def pixel_bytes(tokenizer, n_rows: int) -> float:
    """Bytes of the float32 pixels a tokenizer with an ``image_size`` setting will allocate for ``n_rows`` images.

    Parameters
    ----------
    tokenizer : unfitted tokenizer
    n_rows : int

    Returns
    -------
    float (0 when no ``image_size`` is set)
    """
    sizes = [value for key, value in tokenizer.get_params(deep=True).items() if key.split("__")[-1] == "image_size"]
    total = 0.0
    for size in sizes:
        if isinstance(size, Integral) and not isinstance(size, bool):
            size = (size, size)
        if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(s, Integral) for s in size):
            total += 3.0 * 4.0 * float(np.prod(size, dtype=float)) * n_rows * 2  # (N, C, H, W) float32, and a copy
    return total


#: the classifier's and the tagger's ``class_weight``
CLASS_WEIGHT_CONSTRAINT = [StrOptions({"balanced"}), dict, None]

#: routed prefixes a fitted net reads when it next needs them, so ``set_params`` only stores them
_READ_LATER = ("iterator_train", "iterator_valid", "dataset", "tokenizer", "encoder", "head", "objective")
#: settings the module is built from (a fitted module keeps its own until the next fit rebuilds it)
_BUILDS_MODULE = ("encoder", "head", "fusion")
_UNSET = object()


class DeferredCallbacksMixin:
    """For a skorch net: before the first ``fit``, ``set_params`` only stores callback settings."""

    def initialize(self):
        """skorch's ``initialize``: the module is built now, from the settings as they are."""
        self.__dict__.pop("_module_built_with", None)
        return super().initialize()

    def stale_module_settings(self) -> dict:
        """Settings changed since the fitted module was built, ``{name: (built with, now)}``.

        ``set_params(encoder__n_layers=2)`` on a fitted model is read at the next fit; until then
        the module keeps its layers, and a folder saved with the new setting could not be loaded
        (``load`` builds the module from the saved settings).

        Returns
        -------
        dict
        """
        built = self.__dict__.get("_module_built_with") or {}
        now = {key: vars(self).get(key, _UNSET) for key in built}
        return {key: (value, now[key]) for key, value in built.items() if not _same(value, now[key])}

    def set_params(self, **params):
        """skorch's ``set_params``; before the first ``fit``, callback settings are only stored.

        skorch rebuilds every callback whenever a ``callbacks*`` key is set, using the
        *previous* ``callbacks`` value, so ``set_params(callbacks=<bad>)`` succeeded and
        every later ``set_params`` (which ``clone`` and grid searches pass all keys to)
        raised ``TypeError``. Unfitted, nothing needs the callbacks yet: ``initialize``
        builds them at ``fit`` from the stored values, which is also where bad ones fail.
        """
        if getattr(self, "initialized_", False):
            built = vars(self).setdefault("_module_built_with", {})
            for key in params:  # the value the fitted module was built with, for `stale_module_settings`
                if key.partition("__")[0] in _BUILDS_MODULE and key not in built:
                    built[key] = vars(self).get(key, _UNSET)
            # skorch re-initialises a fitted net's module or criterion for a routed setting and
            # raises ("Something went wrong") for any other prefix; these are read at the next
            # fit (tokenizer, encoder, head, dataset, objective) or the next call (iterator_*), so
            # store them, and the components themselves (set_params(tokenizer="table") raised so too).
            stored = {k: v for k, v in params.items() if k.partition("__")[0] in _READ_LATER}
            vars(self).update(stored)
            self._params_to_validate.update(stored)
            return super().set_params(**{key: value for key, value in params.items() if key not in stored})
        callback_params = {key: value for key, value in params.items() if key.startswith("callbacks")}
        super().set_params(**{key: value for key, value in params.items() if key not in callback_params})
        self._params_to_validate.update(callback_params)
        vars(self).update(callback_params)
        return self


def _same(a, b) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # arrays and the like: compared by identity
        return False
