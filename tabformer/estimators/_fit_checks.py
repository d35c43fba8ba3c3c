"""What ``fit`` checks once the tokenizer is fitted, before the module is built and trained."""

from __future__ import annotations

import inspect
import re
from numbers import Integral

import numpy as np
from sklearn.metrics import get_scorer, get_scorer_names
from skorch import NeuralNet
from skorch.callbacks.scoring import ScoringBase

from ._params import check_training_memory
from ._user_callbacks import user_callbacks
from ._util import encoder_settings

__all__ = [
    "check_before_training",
    "check_callback_names",
    "named_callback_error",
    "check_positions",
    "check_predict_nonlinearity",
    "check_scorer_labels",
]


def check_before_training(estimator, data) -> None:
    """What ``fit`` checks once the tokenizer is fitted, before the module is built: the training memory
    (:func:`check_training_memory`), the encoder's positions (:func:`check_positions`), the scorers'
    positive label (:func:`check_scorer_labels`) and skorch's ``predict_nonlinearity``
    (:func:`check_predict_nonlinearity`)."""
    check_predict_nonlinearity(estimator)
    check_positions(estimator)
    check_scorer_labels(estimator)
    check_training_memory(estimator, data)


def check_positions(estimator) -> None:
    """Refuse a text tokenizer whose ``max_length`` exceeds the positions of the encoder ``fit`` will build.

    The fit went through on short texts and ``predict`` failed on the first long one ("sequence needs
    position 701 but the encoder was built with max_length=512").

    Parameters
    ----------
    estimator : TabFormerNet, with a fitted ``tokenizer_``
    """
    longest = getattr(estimator.tokenizer_, "max_length", None)
    settings = encoder_settings(estimator)
    kind = settings.get("positions")
    if kind is None and "positions" not in NeuralNet.get_params_for(estimator, "encoder"):
        kind = getattr(estimator.tokenizer_, "default_positions", None)  # what build_encoder sets when the user did not
    positions = settings.get("max_length") if kind else None  # no position table: any length reads
    if isinstance(longest, Integral) and isinstance(positions, Integral) and longest > positions:
        pretrained = estimator.encoder is not None or estimator._pretrained() is not None
        raise ValueError(
            f"tokenizer__max_length={longest} is longer than the encoder's {positions} positions: texts of more than "
            f"{positions} sub-words would fail at predict. Pass tokenizer__max_length={positions} or less"
            + ("" if pretrained else f", or encoder__max_length={longest} (a from-scratch encoder's positions)")
        )


def check_predict_nonlinearity(estimator) -> None:
    """Refuse a ``predict_nonlinearity`` other than skorch's ``"auto"``, which tabformer does not read.

    ``predict_proba`` applies the output's own link (softmax; a sigmoid per label for multi-label; the
    target's scale for a regressor), so skorch's way to get logits (``predict_nonlinearity=None``) or a
    callable of the user's was ignored, silently.

    Parameters
    ----------
    estimator : TabFormerNet
    """
    value = estimator.predict_nonlinearity
    if isinstance(value, str) and value == "auto":
        return
    raise ValueError(
        f"predict_nonlinearity={value!r} is not read: predict_proba applies the output's own link (softmax; a sigmoid per "
        "label for multi-label; the target's scale for a regressor). Leave it 'auto'; for the raw outputs (logits), "
        "use estimator.forward(estimator.tokenize(X))"
    )


def _default_positive(scoring: str):
    """The positive label a sklearn scorer named ``scoring`` needs among the labels (its metric's
    ``pos_label=1``) and its ``make_scorer`` arguments before ``pos_label`` (as code), or None where it
    needs none (averaged over the classes) or the name is no such scorer."""
    try:
        scorer = get_scorer(scoring)
        kwargs, parameters = scorer._kwargs, inspect.signature(scorer._score_func).parameters
        default = {name: parameters[name].default for name in ("pos_label", "average") if name in parameters}
        settings = {**default, **kwargs}
        method = getattr(scorer, "_response_method", None)
        predicts = method == "predict"
        # make_scorer scores predictions unless told otherwise: a scorer on probabilities needs its response_method.
        metric = scorer._score_func.__name__ + ("" if predicts else f", response_method={method!r}")
    except Exception:  # another scorer, another sklearn: sklearn itself says what is wrong, after the epoch
        return None
    # A scorer on predictions reads pos_label only with average="binary"; one on probabilities picks its column.
    if settings.get("pos_label") is None or (predicts and settings.get("average", "binary") != "binary"):
        return None
    return settings["pos_label"], metric


def check_scorer_labels(estimator) -> None:
    """Refuse a scoring callback of the user's that names a sklearn scorer whose positive label is not a label.

    ``EpochScoring("f1")`` (``"precision"``, ``"recall"``, ``"jaccard"``, ``"average_precision"``) scores
    ``pos_label=1``: on labels ``"neg"``/``"pos"`` sklearn raised "pos_label=1 is not a valid label" at the
    end of the first epoch, after it trained. The same error now comes before training.

    Parameters
    ----------
    estimator : TabFormerNet, its ``classes_`` known (classifiers of one label, two classes; others pass)

    Raises
    ------
    ValueError
        Naming the callback, the labels and the scorer to pass instead.
    """
    if getattr(estimator, "multilabel_", False):
        return
    try:
        labels = np.asarray(estimator.classes_)
    except AttributeError:  # a regressor, a pretrainer
        return
    if labels.ndim != 1 or len(labels) != 2:
        return
    for name, callback in user_callbacks(estimator):
        if not isinstance(callback, ScoringBase):
            continue
        scoring = vars(estimator).get(f"callbacks__{name}__scoring", getattr(callback, "scoring", None))
        found = _default_positive(scoring) if isinstance(scoring, str) else None
        if found is None or any(label == found[0] for label in labels.tolist()):
            continue
        positive, metric = found
        averaged = f"{scoring}_macro"
        raise ValueError(
            f"{type(callback).__name__} {name!r} in callbacks scores {scoring!r}, whose pos_label={positive!r} is not "
            f"a valid label. It should be one of {labels.tolist()}: pass make_scorer({metric}, pos_label={labels[-1].item()!r}) "
            "(from sklearn.metrics) as its scoring"
            + (f", or {averaged!r}, its average over the classes" if averaged in get_scorer_names() else "")
        )


def check_callback_names(net) -> None:
    """Refuse a ``callbacks__<name>`` or ``callbacks__<name>__<param>`` setting that names no callback of ``net``.

    skorch applies such settings only to a callback of that name and ignores the rest, so a typo
    (``callbacks__early_stoping__patience=10``) trained as if it were not there. ``lr_scheduler`` and
    ``early_stopping`` are checked at ``fit`` (``check_routed_builtins``), which says why they are absent.

    Parameters
    ----------
    net : TabFormerNet, with ``callbacks_`` initialized
    """
    names = {name for name, _ in net.callbacks_}
    for key in sorted(key for key in vars(net) if key.startswith("callbacks__")):
        name = key.split("__")[1]
        removed = key == f"callbacks__{name}" and vars(net)[key] is None
        if name in names or name in ("lr_scheduler", "early_stopping") or removed:
            continue
        raise ValueError(
            f"{key} names no callback of this {type(net).__name__}, so nothing would read it (skorch ignores it); "
            f"its callbacks are {sorted(names)}. Check the name, or add yours with callbacks=[({name!r}, <callback>)]"
        )


def named_callback_error(net, error: ValueError) -> ValueError:
    """skorch's "Invalid parameter 'warmup' for estimator <...CosineLR object at 0x7f...>", with the setting named.

    Parameters
    ----------
    net : TabFormerNet
    error : ValueError
        What skorch's ``initialize_callbacks`` raised.

    Returns
    -------
    ValueError
        Naming the ``callbacks__<name>__<param>`` key, the callback's class and what it takes; ``error``
        itself where it is not about a routed parameter.
    """
    found = re.match(r"Invalid parameter '(\w+)' for estimator <([\w.]+) object.*Valid parameters are: (\[.*\])", str(error))
    keys = [key for key in vars(net) if found and key.startswith("callbacks__") and key.endswith(f"__{found[1]}")]
    if not keys:
        return error
    name, kind = keys[0].split("__")[1], found[2].rsplit(".", 1)[-1]
    hint = "; lr_schedule chooses the built-in schedule ('warmup_linear' takes warmup)" if name == "lr_scheduler" else ""
    return ValueError(
        f"{keys[0]}: this fit's {name} callback is a {kind}, which has no parameter {found[1]!r} (it takes {found[3]}){hint}"
    )
