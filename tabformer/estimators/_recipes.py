"""Default recipes: what ``"auto"`` settings resolve to at ``fit``.

A recipe is picked by the kind of input (the tokenizer's ``kind``), by whether the
encoder starts from pretrained weights, by the estimator (classifier, regressor, tagger,
pretrainer) and by the number of training rows. It fills only what the user left open:

- a top-level setting (``lr``, ``max_epochs``, ``batch_size``, ``lr_schedule``,
  ``patience``) whose value is ``"auto"``;
- a routed setting (``tokenizer__*``, ``encoder__*``, ``head__*``, ``optimizer__*``,
  ``iterator_train__*``) the user did not pass at all, and only where it applies: tokenizer
  settings to a tokenizer given by name or ``"auto"`` (an instance is the user's own),
  encoder settings to a fresh encoder, head settings to the head that takes them.

The result is stored in ``resolved_params_``; the parameters themselves are never
changed, so ``get_params`` returns what the user passed and ``clone`` gives an unfitted
twin that resolves afresh on its own data.

Where the numbers come from (docs/defaults.md has the tables):

- tables from scratch: the FT-Transformer-style recipe of ``make demo`` (Adult 0.860);
  smaller batches on small tables so that an epoch has enough steps to learn from;
- text from pretrained BERT-family weights: BERT's fine-tuning recipe (Devlin et al.,
  2019): lr 5e-5, linear warm-up and decay, 3 epochs (more on small data, for at least 300
  steps: ``_text_finetune.pretrained_text_epochs``), keep the most accurate epoch,
  length-grouped batches, mean pooling (all-MiniLM-L6-v2 on Rotten Tomatoes: 0.842;
  tagging CoNLL-2003 at lr 1e-4: entity F1 0.855); a classifier of tabformer's own
  pretrained text encoder (a ``TabFormerPretrainer``'s) at lr 5e-4, 15 epochs (``_text_finetune``);
- text from scratch: the recipe a 74-trial random search chose on validation accuracy
  (docs/text.md): 30k WordPiece, d_model 256, 2 layers, dropout 0.3, lr 3e-4; trained 15
  epochs to the end of the decay instead of early stopping on a small holdout (regressors
  still stop early, patience 4: a text regression overfits within a few epochs);
- images from scratch: a small pre-LN ViT with about 16 patches, warm-up, and +-2-pixel
  random shifts (Fashion-MNIST, 3,750 images: 0.872 without them, 0.959 with them); the
  frozen ImageNet stem where installed, except on grey images under 16 px: they, and the
  patches of any image under 16 px, go through a conv stem trained with the model (8x8
  digits, validation: 0.94 with the ImageNet stem, 0.98 with the conv stem); classifiers
  smooth their labels by 0.1, as DeiT (``IMAGE_SCRATCH``);
- a classifier over a frozen pretrained encoder (a probe): ``_probe.py``.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import torch
from skorch.callbacks import LRScheduler

from ..nn.embedders.feature_cache import caching_frozen_features
from ..nn.encoder import TransformerEncoder
from ..tokenizers.detect import infer_column_kind
from ._image_recipes import (
    IMAGE_PRETRAINED,
    IMAGE_SCRATCH,
    frame_image_side,
    image_recipe,
    stem_settings,
    user_image_side,
    wants_stem,
)
from ._precision import fuses_optimizer_step
from ._probe import probe_recipe
from ._routing import routed_kinds
from ._split import DEFAULT_VALIDATION_FRACTION, auto_validation_fraction
from ._text_finetune import text_finetune_recipe
from ._user_callbacks import (
    check_holdout_readers,
    check_routed_builtins,
    defer_to_user_callbacks,
    holdout_readers,
    report_replaced_builtins,
)

__all__ = [
    "AUTO",
    "DEFAULT_VALIDATION_FRACTION",
    "TOP_LEVEL",
    "RecipeMixin",
    "resolve_recipe",
    "auto_batch_size",
    "late_fusion_suits",
]

AUTO = "auto"
#: the estimator parameters that take "auto"
TOP_LEVEL = ("lr", "max_epochs", "batch_size", "lr_schedule", "patience")

_TABLE = dict(lr=1e-3, lr_schedule="cosine", max_epochs=40, patience=8, monitor="valid_loss")
# A table alone (issue 18, docs/defaults.md): no attention dropout (unfused attention was 1.36x slower), 4 heads and
# ReLU (fits 1.2-1.3x faster; Adult 0.002 lower on validation, three tables level), numbers piecewise-linear.
_TABLE_ALONE = dict(
    _TABLE,
    encoder__attention_dropout=0.0,
    encoder__n_heads=4,
    encoder__activation="relu",
    tokenizer__numeric_embedding="piecewise",
)
# A table classifier at batches of 32 rows or fewer (auto_batch_size: under 2,048 rows) steps at half the rate: its
# log-loss was lower in 19 of 21 cells on 6 tables at 100-2,000 rows (validation, 5 seeds; docs/defaults.md "Tables
# of 100 to 2,000 rows: half the learning rate"). Regressors were level or behind (CPS1988 100 rows: -0.015 R2).
SMALL_BATCH_TABLE_LR, SMALL_BATCH = 5e-4, 32
_TEXT_PRETRAINED = dict(
    lr=5e-5,
    lr_schedule="warmup_linear",
    max_epochs=3,
    patience=2,
    batch_size=32,
    monitor="valid_acc",
    iterator_train__group_by_length=True,
    head__pooling="mean",
    optimizer__weight_decay=0.01,
)
# The from-scratch text encoder of the random search (docs/text.md), for classifiers and taggers.
_TEXT_ARCHITECTURE = dict(
    tokenizer__vocab_size=30000,
    encoder__d_model=256,
    encoder__n_layers=2,
    encoder__n_heads=4,
    encoder__dropout=0.3,
    encoder__attention_dropout=0.0,
)
# 15 epochs decayed to 0 and kept, no early stopping: with ~2,000 texts the 10% holdout is
# ~200 rows, whose accuracy jumps by 0.03 between epochs, and stopping on it (40 epochs,
# patience 4) stopped right after the warm-up at the peak rate. Validation, 2 seeds:
# RT 0.659 -> 0.697, emoji names 0.811 -> 0.834 (docs/defaults.md).
_TEXT_SCRATCH = dict(
    _TEXT_ARCHITECTURE,
    lr=3e-4,
    lr_schedule="warmup_linear",
    max_epochs=15,
    patience=None,
    batch_size=64,
    monitor="valid_acc",
    iterator_train__group_by_length=True,
    tokenizer__token_dropout=0.1,
    head__dropout=0.3,
    head__pooling="mean",
    optimizer__weight_decay=0.05,
)
# Regressors keep early stopping (patience 4 on the 10% holdout): the no-stop choice above
# was made on classifiers, and a regression on short texts overfits after about 4 epochs.
# Lending Club job title -> log income (validation R2, 3 seeds): 0.169 without stopping,
# 0.221 with it (docs/defaults.md). And no dropout: dropout before a regression output adds
# noise the loss reads as error. Three text regressions (validation R2, 2 seeds): Lending Club
# titles +0.015 / +0.024, tweets +0.008 / +0.021, Tate titles +0.057 / +0.029.
_TEXT_SCRATCH_REGRESSOR = dict(_TEXT_SCRATCH, patience=4, encoder__dropout=0.0, head__dropout=0.0, tokenizer__token_dropout=0.0)
# Late fusion (an image beside a name: one encoder per modality) from scratch: wider and
# shorter than the table recipe, decayed to 0 and kept. Validation, 3 seeds (docs/mixed.md):
# emoji 0.868 -> 0.882, desktop icons 0.849 -> 0.865. The same on text + table (tweets,
# early fusion) cost 3 points, so it stays with what it was chosen on: an image fused late.
_MIXED_LATE = dict(
    lr=3e-4,
    lr_schedule="warmup_linear",
    max_epochs=15,
    patience=None,
    monitor="valid_loss",
    optimizer__weight_decay=0.05,
    encoder__d_model=256,
    encoder__n_layers=2,
    encoder__n_heads=4,
    encoder__attention_dropout=0.0,
)
# Tagging: BIO tags are read per sub-word; case is the strongest cue for names.
_TAG_PRETRAINED = dict(
    lr=1e-4, lr_schedule="cosine", max_epochs=3, patience=2, batch_size=32, monitor="valid_loss", optimizer__weight_decay=0.01
)
_TAG_SCRATCH = dict(
    _TEXT_ARCHITECTURE,
    lr=1e-3,
    lr_schedule="cosine",
    max_epochs=40,
    patience=3,
    batch_size=32,
    monitor="valid_loss",
    tokenizer__lowercase=False,
)
_PRETRAINER = dict(lr=1e-3, lr_schedule="cosine", max_epochs=20, patience=5, batch_size=128, monitor="valid_loss")


def auto_batch_size(n_rows: int, largest: int = 256) -> int:
    """A power of two giving an epoch about 32 steps or more, between 16 and ``largest``.

    Small tables otherwise finish an epoch in a handful of steps: 1,500 rows at batch
    256 are 6 steps, too few for 5 epochs to leave the majority class.
    """
    if n_rows <= 0:
        return largest
    return int(min(largest, max(16, 2 ** math.floor(math.log2(max(n_rows / 32, 1))))))


def _resolved(estimator, recipe: dict, name: str):
    value = getattr(estimator, name)
    return recipe[name] if isinstance(value, str) and value == AUTO else value


def _all_text_frame(X, max_categories) -> bool:
    """Whether ``X`` is a DataFrame whose every column is text."""
    columns = getattr(X, "columns", None)
    if columns is None or len(columns) == 0:
        return False
    try:
        return all(infer_column_kind(X.iloc[:, i], max_categories) == "text" for i in range(len(columns)))
    except ValueError:  # the tokenizer's own fit names the column it cannot read
        return False


def _text_slot(key: str) -> str:
    return f"tokenizer__text__{key[len('tokenizer__') :]}" if key.startswith("tokenizer__") else key


def late_fusion_suits(kinds) -> bool:
    """``fusion="auto"``'s rule on the segment kinds (``"text"``, ``"image"``, ``"table"``):
    late fusion for an image beside another modality (docs/mixed.md has the measurements)."""
    return "image" in kinds and len(kinds) > 1


def _fuses_image_late(estimator, tokenizer, X, pretrained: bool, kinds=None) -> bool:
    """Whether ``fit`` will fuse an image with another modality late, the case ``_MIXED_LATE``
    was chosen on: ``fusion="late"``, or ``"auto"`` with fresh, trainable encoders
    (``kinds``: :func:`routed_kinds` where the caller has them, else read here)."""
    fusion = getattr(estimator, "fusion", None)
    if pretrained or not isinstance(fusion, str) or fusion not in ("auto", "late"):
        return False
    if fusion == "auto" and (estimator.freeze_encoder or estimator.freeze_embedder):
        return False
    kinds = routed_kinds(tokenizer, X) if kinds is None else kinds
    return kinds is not None and late_fusion_suits(kinds)


def _base_recipe(estimator, kind: str, pretrained: bool) -> dict:
    role = estimator._recipe_role
    if role == "pretrainer":  # a table's batch follows its rows (auto_batch_size) as a classifier's: 128 left 200 rows 2 steps
        return {key: value for key, value in _PRETRAINER.items() if kind != "table" or key != "batch_size"}
    if role == "tagger":
        return dict(_TAG_PRETRAINED if pretrained else _TAG_SCRATCH)
    if kind == "text":
        scratch = _TEXT_SCRATCH_REGRESSOR if role == "regressor" else _TEXT_SCRATCH
        recipe = dict(_TEXT_PRETRAINED if pretrained else scratch)
    elif kind == "image":
        recipe = dict(IMAGE_PRETRAINED if pretrained else IMAGE_SCRATCH)
    elif kind == "table":
        recipe = dict(_TABLE_ALONE)
    else:  # other mixed inputs: the table recipe (the late-fusion one cost 3 points on tweets)
        recipe = dict(_TABLE)
    return recipe


def resolve_recipe(estimator, tokenizer, X, n_rows: int, pretrained: bool) -> dict:
    """The settings ``fit`` uses: the user's where given, the recipe's elsewhere.

    Parameters
    ----------
    estimator : TabFormerNet
    tokenizer : unfitted tokenizer (or a pretrained encoder's fitted one)
    X : the training input (only its shape is read, for images)
    n_rows : int
        Training rows.
    pretrained : bool
        Whether the encoder starts from pretrained weights.

    Returns
    -------
    dict
        Top-level settings (``lr``, ``max_epochs``, ``batch_size``, ``lr_schedule``,
        ``patience``, ``monitor``) and the routed settings the recipe adds
        (``tokenizer__*``...); the routed settings the user passed are not repeated.
    """
    kind = getattr(tokenizer, "kind", "table")
    kinds = routed_kinds(tokenizer, X) if kind == "mixed" else None  # a column the user routed to a table is no text
    all_text = kinds is not None and set(kinds) == {"text"}
    if all_text:
        # A frame of text columns only (a review as df[["review"]], or title + body) is text:
        # the text recipe, its tokenizer settings routed to the mixed tokenizer's text template.
        recipe = {_text_slot(key): value for key, value in _base_recipe(estimator, "text", pretrained).items()}
    elif kind == "mixed" and _fuses_image_late(estimator, tokenizer, X, pretrained, kinds):
        recipe = dict(_MIXED_LATE)
    else:
        recipe = _base_recipe(estimator, kind, pretrained)
    if "batch_size" not in recipe:
        recipe["batch_size"] = auto_batch_size(n_rows)
    if kind == "table" and not pretrained and estimator._recipe_role == "classifier":
        small = 0 < _resolved(estimator, recipe, "batch_size") <= SMALL_BATCH  # -1 (skorch: one batch of all rows) is large
        recipe["lr"] = SMALL_BATCH_TABLE_LR if small else recipe["lr"]
    if pretrained and kind == "text" and estimator._recipe_role in ("classifier", "regressor"):  # BERT's, or tabformer's own
        recipe.update(text_finetune_recipe(tokenizer, estimator._recipe_role, n_rows, _resolved(estimator, recipe, "batch_size")))
    recipe.update(probe_recipe(estimator, "text" if all_text else kind, pretrained))  # a frozen encoder's head
    user = set(estimator.get_params(deep=False))
    supervised = not pretrained and estimator._recipe_role in ("classifier", "regressor")
    if kind == "image" and not pretrained:
        recipe.update(image_recipe(estimator, X, user, supervised))
    if kind == "mixed" and supervised and wants_stem(user, "tokenizer__image__") and "tokenizer__image" not in user:
        resized_to = user_image_side(estimator, "tokenizer__image__image_size")
        side = resized_to or frame_image_side(X)
        if side is not None:
            settings = stem_settings(side, upscale=resized_to is None)
            recipe.update({f"tokenizer__image__{k}": v for k, v in settings.items()})
    resolved = {name: _resolved(estimator, recipe, name) for name in TOP_LEVEL}
    multilabel = getattr(estimator, "multilabel_", False)  # subset accuracy moves by whole rows: it kept epoch 1 of 10
    resolved["monitor"] = "valid_loss" if estimator._recipe_role != "classifier" or multilabel else recipe["monitor"]
    for name in ("patience", "monitor"):  # routed to the callback, they win over the recipe there too
        if f"callbacks__early_stopping__{name}" in user:
            resolved[name] = getattr(estimator, f"callbacks__early_stopping__{name}")
    defer_to_user_callbacks(estimator, resolved)  # "auto" leaves the schedule, early stopping to the user's own callbacks
    fraction = estimator.validation_fraction
    if isinstance(fraction, str) and fraction == AUTO:
        # Without early stopping (or a callback of the user's reading a valid_* score) nothing is decided on the holdout.
        held = resolved["patience"] is not None or holdout_readers(estimator)
        fraction = auto_validation_fraction(estimator, kind, n_rows) if held else None
    check_holdout_readers(estimator, fraction)
    resolved["validation_fraction"] = fraction
    check_routed_builtins(estimator, resolved)  # skorch ignores a setting routed to a callback the fit has not
    report_replaced_builtins(estimator, resolved)  # callbacks__lr_scheduler=<yours> runs, not the recipe's
    resolved["precision"] = estimator._resolve_precision_setting()
    if fuses_optimizer_step(estimator, user):
        recipe["optimizer__fused"] = True
    for key, value in recipe.items():
        if "__" not in key or key in user or not _applies(estimator, tokenizer, key, pretrained, user):
            continue
        resolved[key] = value
    return resolved


def _applies(estimator, tokenizer, key: str, pretrained: bool, user: set) -> bool:
    prefix, _, name = key.partition("__")
    if prefix == "tokenizer":
        # A pretrained tokenizer is fitted already, and an instance is the user's own.
        if pretrained or not isinstance(estimator.tokenizer, str):
            return False
        slot, _, sub = name.partition("__")
        if sub and hasattr(tokenizer, "segment_kind"):  # a mixed tokenizer's text/image/table template
            return slot in ("text", "image", "table") and f"tokenizer__{slot}" not in user
        return name in tokenizer.get_params(deep=False)
    if prefix == "encoder":
        return estimator.encoder is None and name in inspect.signature(TransformerEncoder).parameters
    if prefix == "head":
        head = getattr(estimator, "_head_class", None)
        return head is not None and name in inspect.signature(head).parameters
    if prefix == "criterion":  # CrossEntropyLoss's settings: a criterion of the user's own may not take them
        return estimator.criterion is torch.nn.CrossEntropyLoss and not getattr(estimator, "multilabel_", False)
    return prefix in ("optimizer", "iterator_train")


class RecipeMixin:
    """What a skorch net needs to train with ``resolved_params_`` instead of ``"auto"``:
    the resolved lr, epochs and routed settings reach skorch's optimizer, fit loop and
    ``get_params_for``, while the parameters themselves stay as the user set them."""

    def set_params(self, **params):
        """skorch's ``set_params``; on a fitted net a top-level setting given here also replaces the
        resolved one, so the next ``partial_fit`` (or warm ``fit``) trains with it.

        ``resolved_params_`` is read ahead of the parameters, so ``set_params(max_epochs=3)``
        after a fit ran the old epoch count, batch size and learning rate (a review's find).
        A new ``lr`` becomes each parameter group's rate to restart from; a new schedule,
        patience, holdout or ``max_epochs`` rebuilds the callbacks. ``"auto"`` keeps what the last fit resolved.
        """
        resolved = self.__dict__.get("resolved_params_")
        given = {name: params[name] for name in (*TOP_LEVEL, "validation_fraction") if name in params}
        if resolved is not None:
            resolved.update({name: value for name, value in given.items() if not (isinstance(value, str) and value == AUTO)})
            if given.get("validation_fraction") == AUTO:  # as resolve_recipe decides it
                auto = getattr(self, "_auto_validation_fraction", DEFAULT_VALIDATION_FRACTION)
                held = resolved["patience"] is not None or holdout_readers(self)
                resolved["validation_fraction"] = auto if held else None
        super().set_params(**params)
        if resolved is not None and "precision" in params:  # what the next partial_fit (and predict) runs in
            with contextlib.suppress(ValueError):  # a precision an Accelerator contradicts: predict and fit name it
                resolved["precision"] = self._resolve_precision_setting()
        if resolved is None or not getattr(self, "initialized_", False):
            return self
        if "lr" in given and getattr(self, "optimizer_", None) is not None:
            for group in self.optimizer_.param_groups:
                group["lr"] = group["initial_lr"] = self._setting("lr")
        if {"lr_schedule", "patience", "validation_fraction", "max_epochs"} & set(given):  # the cosine's T_max is max_epochs
            self.initialize_callbacks()
        return self

    @contextlib.contextmanager
    def _schedule_from_the_peak(self):
        """Within: epoch-wise learning-rate schedules start over instead of resuming.

        skorch's ``LRScheduler`` resumes at ``last_epoch = len(history) - 1``; after a fit
        that left a cosine at 0, a ``partial_fit`` from the peak then climbed past it
        (0.001, 0.0005 in the fit; 0.001, 0.0015 in the next call).
        """
        restarted = []
        for _, callback in getattr(self, "callbacks_", ()):
            # skorch passes the callback's own attributes (its ``kwargs`` property) to the scheduler.
            # ReduceLROnPlateau takes no ``last_epoch`` (its constructor raised TypeError at every partial_fit).
            policy = getattr(callback, "policy_", None)
            takes = policy is not None and "last_epoch" in inspect.signature(policy).parameters
            if isinstance(callback, LRScheduler) and takes and "last_epoch" not in vars(callback):
                callback.last_epoch = -1
                restarted.append(callback)
        try:
            yield
        finally:
            for callback in restarted:
                del callback.last_epoch

    def _setting(self, name: str):
        """The value ``fit`` uses for ``name``: the user's, or the recipe's for ``"auto"``."""
        resolved = getattr(self, "resolved_params_", None)
        if resolved is not None and name in resolved:
            return resolved[name]
        return getattr(self, name)

    def _validation_fraction(self):
        """The holdout ``fit`` uses: the user's ``validation_fraction``, or what ``"auto"`` resolved to.

        ``"auto"`` holds out 10% when the recipe stops early and no row otherwise: a holdout
        that decides nothing is data the model does not learn from (scikit-learn's gradient
        boosting holds none out without early stopping either). Before ``fit``: 10%.
        """
        value = self._setting("validation_fraction")
        return DEFAULT_VALIDATION_FRACTION if isinstance(value, str) else value

    def _validation_rows(self, n_rows: int) -> int:
        """Rows the holdout takes out of ``n_rows`` (rounded up; 0 without a holdout)."""
        fraction = self._validation_fraction()
        return int(math.ceil(fraction * n_rows)) if fraction and fraction < 1 else 0

    def get_params_for(self, prefix):
        """Routed ``prefix__*`` settings: the user's, over the recipe's for what the user left open."""
        params = super().get_params_for(prefix)
        resolved = getattr(self, "resolved_params_", None)
        if not resolved:
            return params
        start = prefix + "__"
        recipe = {key[len(start) :]: value for key, value in resolved.items() if key.startswith(start)}
        return {**recipe, **params}

    def _get_params_for_optimizer(self, prefix, named_parameters):
        args, kwargs = super()._get_params_for_optimizer(prefix, named_parameters)
        if "lr" not in super().get_params_for(prefix):
            kwargs["lr"] = self._setting("lr")
        return args, kwargs

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        """skorch's fit loop, for the resolved ``max_epochs`` unless ``epochs`` is given.

        A classifier's or regressor's frozen image stem runs once per image meanwhile (its
        inputs repeat every epoch; a pretrainer's augmented views do not, so it is left out).
        """
        epochs = self._setting("max_epochs") if epochs is None else epochs
        if self._recipe_role not in ("classifier", "regressor"):
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        with caching_frozen_features(self.module_):
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
