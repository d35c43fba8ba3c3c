"""The parameters every tabformer estimator shares: declared once, documented once, and
checked once at ``fit`` (scikit-learn's ``_parameter_constraints`` style), so a bad value
is refused with a message naming the parameter, the value and what is allowed.

The estimators' ``__init__`` only store; sklearn's ``set_params`` and ``clone`` must
never validate (``check_set_params``), which is why every check lives here.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions, validate_parameter_constraints
from skorch import NeuralNet

from ..nn.encoder import TransformerEncoder
from ..nn.models import PretrainedEncoder
from ..tokenizers import BaseTokenizer
from ._inference import tokens_per_row
from ._precision import PRECISIONS
from ._util import encoder_settings

__all__ = [
    "SHARED_CONSTRAINTS",
    "FINE_TUNING_CONSTRAINTS",
    "ENCODER_CONSTRAINTS",
    "CLASS_WEIGHT_CONSTRAINT",
    "SHARED_PARAMS_DOC",
    "CLASS_WEIGHT_DOC",
    "RECIPES_NOTES_DOC",
    "check_params",
    "check_memory",
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
    params = {name: getattr(estimator, name) for name in estimator._parameter_constraints}
    validate_parameter_constraints(estimator._parameter_constraints, params, caller_name=type(estimator).__name__)
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
    what = (
        f"training an encoder of d_model={settings['d_model']}, n_layers={settings['n_layers']}, "
        f"n_heads={settings['n_heads']}, d_ff={settings.get('d_ff') or 4 * settings['d_model']} on "
        f"{n_tokens} tokens per row, {batch_size} rows per batch"
    )
    check_memory(estimator, training_bytes(settings, int(n_tokens), int(batch_size)), what)


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


SHARED_PARAMS_DOC = """
    Parameters
    ----------
    tokenizer : str or tokenizer instance, default="auto"
        How ``X`` becomes tokens. ``"auto"`` picks by input: images (arrays, PIL images
        or image paths) -> :class:`~tabformer.tokenizers.PatchTokenizer`; a list or
        Series of str -> :class:`~tabformer.tokenizers.WordPieceTokenizer`; a DataFrame
        with text or image columns -> :class:`~tabformer.tokenizers.MixedTokenizer`
        (kinds detected per column, see its ``column_kinds_``); any other table ->
        :class:`~tabformer.tokenizers.TabularTokenizer`. Or a name (``"tabular"``,
        ``"wordpiece"``, ``"patch"``, ``"mixed"``) or an unfitted tokenizer instance
        (cloned at every ``fit``). Set its parameters with ``tokenizer__<name>``.
        Images (alone, or the image columns of a DataFrame) go through a frozen
        ImageNet EfficientNet-Lite0 stem when its weights package is installed
        (upscaled to 64 px, about 2x2 deep tokens per image), unless you set
        ``tokenizer__patch_size``, a backbone or a conv stem, or they are grey, under
        16 px and given alone, not as a DataFrame column (a conv stem trained from
        scratch, then patches); the resolved settings are in
        ``resolved_params_`` (docs/defaults.md).
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh :class:`~tabformer.nn.TransformerEncoder` from the
        ``encoder__*`` parameters (``encoder__d_model``, ``encoder__n_layers``,
        ``encoder__n_heads``, ``encoder__dropout``...). A module, or a file written by
        its ``save``, warm-starts from its weights (copied, never modified). A
        :class:`~tabformer.nn.PretrainedEncoder` also brings its fitted tokenizer
        and embedder, which ``fit`` then reuses instead of fitting new ones.
    lr : float or "auto", default="auto"
        AdamW learning rate (``optimizer__weight_decay`` etc. route to AdamW).
    max_epochs : int or "auto", default="auto"
        Upper bound; early stopping may end training sooner.
    lr_schedule : {"cosine", "warmup_linear", "auto"} or None, default="auto"
        ``"cosine"``: per-epoch cosine decay of the learning rate from ``lr`` to 0 over
        ``max_epochs``. ``"warmup_linear"``: BERT's fine-tuning schedule, per batch: a
        linear climb over the first 10% of the steps (``callbacks__lr_scheduler__warmup``),
        then a linear fall to 0 (:class:`~tabformer.callbacks.WarmupLinearLR`).
        ``None``: constant ``lr``.
    batch_size : int or "auto", default="auto"
        Rows per training step (``-1``: all rows). Text:
        ``iterator_train__group_by_length=True`` batches rows of similar length
        together (shuffled within windows of 50 batches, or of the int given), so less
        of each training batch is padding; fits of short, varied texts run faster.
        ``predict``, ``transform`` and the validation pass read larger batches where rows
        are short and narrow (rows x tokens x ``d_model`` up to 2**19, at most 512 rows,
        never fewer than ``batch_size``: ``resolved_params_["iterator_valid__batch_size"]``;
        ``iterator_valid__batch_size`` sets it), and sort text by length.
    validation_fraction : float, "auto" or None, default="auto"
        Share of the training rows held out (stratified for classifiers) to monitor
        ``valid_loss`` for early stopping. Ignored when ``train_split`` is given.
        ``None`` or ``0`` trains on every row for ``max_epochs``. ``"auto"`` resolves
        (``resolved_params_["validation_fraction"]``) to 0.1 when early stopping is on
        (``patience`` not None) and to ``None`` when it is off (text from scratch, an
        image fused late): a holdout that decides nothing is data the model does not
        learn from. Set a fraction to see validation scores in ``history_`` anyway.
    patience : int, "auto" or None, default="auto"
        Stop after this many epochs without a better validation score, and restore the
        best weights. ``None`` disables early stopping. What is watched is the recipe's
        (``resolved_params_["monitor"]``: ``valid_loss``, or ``valid_acc`` for text
        classifiers) unless ``callbacks__early_stopping__monitor`` says otherwise (whether
        lower is better is read from its name; ``callbacks__early_stopping__lower_is_better``
        sets it).
    random_state : int, RandomState instance or None, default=None
        Seeds weight init, shuffling and the validation split (a ``RandomState`` draws a
        new seed at every ``fit``, as in scikit-learn). With an int, CPU fits repeat exactly,
        except that a WordPiece vocabulary trained in ``fit`` can differ in a few tokens
        between fits (an upstream ``tokenizers`` issue; ``tokenizer__vocab_file`` with a
        vocabulary saved by ``save_vocabulary`` is exact).
    train_split : "auto", callable or None, default="auto"
        skorch's ``train_split``; ``"auto"`` uses ``validation_fraction``.
    device : str or torch.device, default="auto"
        Where to train and predict: ``"auto"`` is ``"cuda"`` when a GPU is visible, else
        ``"cpu"``; ``get_params`` keeps ``"auto"`` and a pickled model loads on either.
    precision : {"auto", "fp32", "bf16", "fp16"}, default="auto"
        Mixed precision: the forward pass and loss run under ``torch.autocast`` in that
        dtype (training, validation and prediction alike); weights, gradients and the
        optimizer stay float32, and fp16 scales the loss with a ``GradScaler``.
        ``"auto"``: bf16 on a GPU that supports it, fp32 otherwise (CPU autocast is
        slower than fp32 without AMX). ``resolved_params_["precision"]`` says which ran.
    distributed : "auto", bool, dict, accelerate.Accelerator or None, default="auto"
        Multi-process training through Hugging Face Accelerate (docs/scale.md).
        ``"auto"``: on when the script was launched by ``torchrun``/``accelerate launch``
        (``WORLD_SIZE`` > 1), off otherwise; ``True`` always on; a dict: keyword
        arguments of ``accelerate.Accelerator`` (``gradient_accumulation_steps``...);
        an ``Accelerator``: used as is. ``batch_size`` is per process.
    memory_limit : float, "auto" or None, default="auto"
        GiB ``fit`` may plan to use: before allocating, it estimates the bytes of the
        resized images and of training (weights, gradients, optimizer state, one batch's
        activations) and refuses (``MemoryError``) a fit past the limit. ``"auto"``: the
        device's memory (RAM, or the GPU's); ``None``: no check.
    verbose : int, default=1
        1 prints skorch's per-epoch table; 0 is silent.
    **kwargs
        Routed parameters: ``tokenizer__*``, ``encoder__*``, ``head__*`` and skorch's
        (``optimizer__*``, ``callbacks__*``, ``iterator_train__*``...).
"""

#: the Notes section on default recipes; goes after the Attributes, before the Examples
RECIPES_NOTES_DOC = """
    Notes
    -----
    **Defaults are recipes.** ``"auto"`` settings, and routed settings left unset, are
    resolved at ``fit`` by the kind of input, by whether ``encoder`` is pretrained and by
    the number of rows; ``resolved_params_`` shows what was used, while ``get_params``
    keeps returning what you passed (so ``clone`` and grid searches see your values).
    Anything you set wins. Recipe tokenizer settings apply to a tokenizer given by name
    or ``"auto"`` (an instance is yours); encoder settings to a fresh encoder.

    ======================  =====================  ============  =============  =================
    input (estimator)       lr, schedule           max_epochs    batch_size     also
    ======================  =====================  ============  =============  =================
    table, mixed            1e-3, cosine           40 (pat. 8)   32 steps/ep    d_model 64 etc.
    image + other, late     3e-4, warmup_linear    15 (no stop)  32 steps/ep    d_model 256, 2
                                                                                layers, weight
                                                                                decay 0.05
    text, pretrained        5e-5, warmup_linear    3 (pat. 2)    32             mean pooling,
                                                                                length grouping,
                                                                                watch valid_acc
    text, from scratch      3e-4, warmup_linear    15 (no stop)  64             30k WordPiece,
                                                                                d_model 256, 2
                                                                                layers, dropout
                                                                                0.3, word dropout
                                                                                0.1 (regressors:
                                                                                no dropout),
                                                                                mean pooling
    image, from scratch     1e-3, warmup_linear    40 (pat. 8)   64             ~16 patches, +-2
                                                                                pixel shifts,
                                                                                pre-LN, 4 layers;
                                                                                under 16 px a
                                                                                conv stem, +-1
    image, pretrained       3e-4, warmup_linear    40 (pat. 8)   64
    tagger, pretrained      1e-4, cosine           3 (pat. 2)    32
    tagger, from scratch    1e-3, cosine           40 (pat. 3)   32             cased 30k
                                                                                WordPiece, d 256
    pretrainer              1e-3, cosine           20 (pat. 5)   128
    ======================  =====================  ============  =============  =================

    "no stop": no early stopping, the last epoch is kept, and ``validation_fraction="auto"``
    holds out no row (elsewhere 10%, for early stopping). The regressor on text from
    scratch is the exception: it stops early (patience 4) on a 10% holdout, and trains
    without dropout (``encoder__dropout``, ``head__dropout`` and
    ``tokenizer__token_dropout`` 0).

    A DataFrame whose columns are all text is text: it gets the text recipes, their
    tokenizer settings routed to the mixed tokenizer's text template
    (``tokenizer__text__vocab_size``...). Images, and the image columns of a mixed
    DataFrame, go through a frozen ImageNet EfficientNet-Lite0 stem when its weights are
    installed (docs/defaults.md), unless you set ``tokenizer__patch_size`` or a backbone.
    Grey images under 16 px given alone go through a small conv stem trained with the model instead,
    then patches (``tokenizer__conv_stem=(32, 64)``, +-1-pixel shifts; 8x8 digits: 0.98
    test, 0.93 with the ImageNet stem, 0.91 with plain patches); so do the patches of any
    image under 16 px.

    "32 steps/ep": the largest power of two in [16, 256] that leaves an epoch at least
    32 steps. See :mod:`tabformer.estimators._recipes` and docs/defaults.md.
"""

FINE_TUNING_PARAMS_DOC = """    freeze_encoder : bool, default=False
        Keep the encoder fixed (no gradient, eval mode): the embedder and the head train.
    freeze_embedder : bool, default=False
        Keep the embedder fixed (word, patch and cell embeddings, positions; no
        gradient, eval mode, so ``tokenizer__token_dropout`` is off). It needs a
        :class:`~tabformer.nn.PretrainedEncoder` as ``encoder``, whose embedder it
        keeps. Alone, the encoder and head train over fixed embeddings; with
        ``freeze_encoder=True`` only the head trains (a linear probe).
"""

FUSION_PARAM_DOC = """    fusion : {"auto", "early", "late"} or int, default="auto"
        Mixed inputs only. ``"auto"`` resolves at ``fit`` (``resolved_params_["fusion"]``):
        ``"late"`` when the frame holds an image column and another modality and the
        encoders start fresh, ``"early"`` otherwise (text + table, a pretrained
        ``encoder``, frozen parts); see docs/mixed.md. ``"early"``: every column's tokens form one sequence in one
        encoder, so words, patches and cells attend to each other. An int ``k``: mid
        fusion (Nagrani et al., 2021), the same sequence and encoder, but in its first
        ``k`` layers tokens attend within their own modality only (CLS reads all);
        ``0`` is early fusion. ``"late"``: one encoder per modality (same
        ``encoder__*`` settings), CLS vectors concatenated and projected before the
        head; the usual multimodal baseline. An image fused late with another
        modality, from scratch, gets its own recipe (the table in the Notes): wider
        encoders trained 15 epochs to the end of their decay.
"""

#: the classifier's and the tagger's ``class_weight``
CLASS_WEIGHT_CONSTRAINT = [StrOptions({"balanced"}), dict, None]

CLASS_WEIGHT_DOC = """    class_weight : "balanced", dict or None, default=None
        Weights of the classes in the loss (multiplied with ``fit``'s ``sample_weight``).
        ``"balanced"``: ``n_samples / (n_classes * np.bincount(y))`` as in scikit-learn; a
        dict ``{label: weight}`` (labels it omits weigh 1). Not for multi-label ``y``.
"""


#: routed prefixes a fitted net reads when it next needs them, so ``set_params`` only stores them
_READ_LATER = ("iterator_train", "iterator_valid", "dataset", "tokenizer", "encoder", "head", "objective")


class DeferredCallbacksMixin:
    """For a skorch net: before the first ``fit``, ``set_params`` only stores callback settings."""

    def set_params(self, **params):
        """skorch's ``set_params``; before the first ``fit``, callback settings are only stored.

        skorch rebuilds every callback whenever a ``callbacks*`` key is set, using the
        *previous* ``callbacks`` value, so ``set_params(callbacks=<bad>)`` succeeded and
        every later ``set_params`` (which ``clone`` and grid searches pass all keys to)
        raised ``TypeError``. Unfitted, nothing needs the callbacks yet: ``initialize``
        builds them at ``fit`` from the stored values, which is also where bad ones fail.
        """
        if getattr(self, "initialized_", False):
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
