"""``TabFormerNet``: the skorch net behind every tabformer estimator.

``fit`` checks the parameters once, fits a fresh clone of the tokenizer on ``X`` (so
nothing leaks across CV folds), tokenizes ``X`` once, builds ``module_`` for the fitted
tokenizer and lets skorch train it on the cached token arrays. Subclasses say what the
target is (``_fit_target``), which head reads the encoder (``build_head``) and how
predictions come back; everything else (encoder building and warm starts, the
validation split, schedules, early stopping, batching, the inference loop) lives here.
Parameters route by prefix, skorch style: ``tokenizer__*`` to the tokenizer,
``encoder__*`` to :class:`~tabformer.nn.TransformerEncoder`, ``head__*`` to the head.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.callbacks import ProgressBar
from torch.utils.data import Dataset

from .._checkpoint import checkpoints_last, epochs_left
from .._data import TensorDictDataset
from .._targets import check_target
from ..callbacks import log_user_interrupt
from ..export import export_onnx
from ..hub import load_for_estimator, load_pretrained
from ..nn.encoder import TransformerEncoder
from ..nn.models import PretrainedEncoder
from ..persistence import save_estimator
from ..tokenizers import make_tokenizer
from ..tokenizers.base import fit_with_target, transform_for
from ._categories import adopt_new_categories, continued_tokens, pretrained_tokens, with_grown_categories
from ._classes import check_same_classes
from ._distributed import DistributedMixin
from ._epoch import EpochMixin
from ._fit_checks import check_before_training, check_callback_names, named_callback_error
from ._inference import POOLINGS, InferenceMixin
from ._input_kind import check_input_kind, check_tokens
from ._params import (
    SHARED_CONSTRAINTS,
    DeferredCallbacksMixin,
    check_fit_params,
    check_memory,
    check_params,
    check_resolved_heads,
    pixel_bytes,
)
from ._precision import PrecisionMixin
from ._recipes import RecipeMixin, resolve_recipe
from ._split import HoldoutSplitMixin
from ._text_recipes import (
    pretrained_encoder,
    text_stem_tokenizer,
    text_weights_folder,
    wants_text_stem,
    wants_text_weights,
)
from ._user_callbacks import builtin_callbacks, scores_before_stopping
from ._util import adopt_pretrained_tokenizer, construct, num_samples, seeded_torch
from ._weighted_scores import weighted_callbacks
from ._weights import WeightedLossMixin, check_sample_weight, with_weights

__all__ = ["TabFormerNet", "construct", "num_samples", "POOLINGS"]


def _counting_bar(callback):
    """``callback``, or for a ``ProgressBar(batches_per_epoch="auto")`` a copy that counts its batches."""
    if not isinstance(callback, ProgressBar) or callback.batches_per_epoch != "auto":
        return callback
    counting = copy.copy(callback)
    counting.batches_per_epoch = "count"
    return counting


class TabFormerNet(
    InferenceMixin,
    RecipeMixin,
    WeightedLossMixin,
    DeferredCallbacksMixin,
    EpochMixin,
    DistributedMixin,
    PrecisionMixin,
    HoldoutSplitMixin,
    NeuralNet,
):
    """Base of every tabformer estimator; not meant to be used directly.

    Subclasses declare their own parameters only (``__init__`` adds them and passes the
    rest on) and their ``_parameter_constraints``.
    """

    prefixes_ = NeuralNet.prefixes_ + ["tokenizer", "encoder", "head"]
    _parameter_constraints: dict = SHARED_CONSTRAINTS
    #: which default recipe applies (``_recipes.py``): classifier, regressor, tagger, pretrainer
    _recipe_role = "classifier"
    #: the head class ``head__*`` settings go to (recipes only fill what it takes)
    _head_class = None

    def __init__(
        self,
        tokenizer="auto",
        encoder=None,
        *,
        module,
        criterion,
        optimizer=torch.optim.AdamW,
        lr="auto",
        max_epochs="auto",
        batch_size="auto",
        lr_schedule="auto",
        train_split="auto",
        validation_fraction="auto",
        patience="auto",
        random_state=None,
        dataset=TensorDictDataset,
        verbose=1,
        device="auto",
        precision="auto",
        distributed="auto",
        memory_limit="auto",
        **kwargs,
    ):
        super().__init__(
            module=module,
            criterion=criterion,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            train_split=train_split,
            dataset=dataset,
            verbose=verbose,
            device=device,
            **kwargs,
        )
        self.tokenizer = tokenizer
        self.encoder = encoder
        self.lr_schedule = lr_schedule
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.random_state = random_state
        self.precision = precision
        self.distributed = distributed
        self.memory_limit = memory_limit

    def _get_param_names(self):
        # skorch's private bookkeeping (_params_to_validate) is no parameter: never cloned or set.
        return [name for name in super()._get_param_names() if not name.startswith("_")]

    @classmethod
    def from_pretrained(cls, path, model=None, **params):
        """An unfitted estimator warm-started from a saved folder, a local Hugging Face folder
        (BERT, RoBERTa, XLM-R, DistilBERT, ELECTRA) or, with ``model`` (a timm ViT name), a
        timm checkpoint file; see docs/pretrained.md. Nothing is unpickled.

        Parameters
        ----------
        path : str or os.PathLike
        model : str or None, default=None
        **params
            The estimator's parameters; routed settings the weights allow
            (``tokenizer__max_length``, ``encoder__dropout``...) apply to the loaded encoder, one
            that contradicts them raises (:func:`~tabformer.hub.load_for_estimator`).
        """
        encoder, params = load_for_estimator(path, model, **params)
        return cls(encoder=encoder, **params)

    def save(self, path) -> None:
        """Write the fitted estimator to a folder, without pickle.

        The folder holds ``config.json``, ``model.safetensors``, ``history.json`` and the
        tokenizer's files; ``tabformer.load(path)`` reads it back, fitted, and
        ``from_pretrained(path)`` warm-starts a new one. See docs/persistence.md.

        Parameters
        ----------
        path : str or os.PathLike
            The folder to write (created if missing).
        """
        save_estimator(self, path)

    def export_onnx(self, path, **kwargs):
        """Export the fitted module to ONNX (tokenization stays in Python).

        Parameters
        ----------
        path : str or os.PathLike
            The ``.onnx`` file to write.
        **kwargs
            Options of :func:`tabformer.export.export_onnx`.

        Returns
        -------
        what :func:`tabformer.export.export_onnx` returns.
        """
        return export_onnx(self, path, **kwargs)

    # ------------------------------------------------------------ building
    def _pretrained(self) -> PretrainedEncoder | None:
        """The pretrained encoder ``fit`` starts from (``encoder``, or the default text weights), configured
        with the user's ``tokenizer__*`` / ``encoder__*`` settings; ``None`` for a fresh one."""
        return pretrained_encoder(self)

    def build_encoder(self) -> TransformerEncoder:
        """The encoder to train: fresh from ``encoder__*``, or a copy of ``encoder``."""
        pretrained = self._pretrained()
        if pretrained is not None:
            return copy.deepcopy(pretrained.encoder)
        if self.encoder is None:
            params = self.get_params_for("encoder")
            params.setdefault("positions", self.tokenizer_.default_positions)
            return construct(TransformerEncoder, params, "encoder")
        if isinstance(self.encoder, (str, os.PathLike)):
            return load_pretrained(self.encoder)  # a TransformerEncoder.save file (or saved folder)
        if self.get_params_for("encoder"):
            raise ValueError(
                "encoder__* parameters configure a new encoder; they cannot change the "
                f"pretrained encoder passed as `encoder` (got {sorted(self.get_params_for('encoder'))})"
            )
        return copy.deepcopy(self.encoder)

    def build_embedder(self, d_model: int) -> torch.nn.Module:
        """The embedder, ``d_model`` wide: a copy of a pretrained encoder's, or the tokenizer's fresh one.

        Parameters
        ----------
        d_model : int
        """
        pretrained = self._pretrained()
        if pretrained is not None:
            return with_grown_categories(copy.deepcopy(pretrained.embedder), self.tokenizer_)
        return self.tokenizer_.build_embedder(d_model)

    def get_default_callbacks(self):
        """skorch's callbacks (losses, ``valid_acc`` weighted), then tabformer's (``_user_callbacks.builtin_callbacks``):
        the non-finite guard, the collapse check, the ``lr_schedule``, early stopping."""
        return weighted_callbacks(super().get_default_callbacks()) + builtin_callbacks(self)

    def initialize_callbacks(self):
        """skorch's, the built-in early stopping after your callbacks, a ``TrainingCheckpoint`` after all but
        ``PrintLog``; a ``ProgressBar()`` counts its batches while ``batch_size`` is ``"auto"``.

        skorch's bar sizes itself from ``get_params()["batch_size"]``, which keeps the ``"auto"``
        you passed: it raised ``TypeError`` at the first epoch. A copy with
        ``batches_per_epoch="count"`` runs instead (your instance is left as it is).
        """
        try:
            super().initialize_callbacks()
        except ValueError as error:  # skorch named neither the setting nor the schedule this fit has
            raise named_callback_error(self, error) from None
        check_callback_names(self)  # skorch ignored a typo such as callbacks__early_stoping__patience
        self.callbacks_ = scores_before_stopping(self, self.callbacks_)  # early stopping may watch a score of yours
        self.callbacks_ = checkpoints_last(self.callbacks_)  # it saves (and resumes) every other callback's epoch-end state
        if isinstance(NeuralNet.get_params_for(self, "iterator_train").get("batch_size", self.batch_size), str):
            self.callbacks_ = [(name, _counting_bar(cb)) for name, cb in self.callbacks_]
        return self

    def _sink(self, message):
        # In a launched job only the main process prints, as with the epoch table (every process stops alike).
        accelerator = self._accelerator()
        if self.verbose and (accelerator is None or accelerator.is_main_process):
            print(message)

    def tokenize(self, X) -> dict:
        """Tokenize ``X`` with the fitted tokenizer.

        Parameters
        ----------
        X : raw input, or tokens (a dict of arrays or a Dataset), returned as is

        Returns
        -------
        dict of ndarray, each of shape (n_samples, ...)
        """
        check_is_fitted(self, "tokenizer_")
        if isinstance(X, (Dataset, dict)):
            # Already tokens: skorch's scoring callbacks predict on the tokenized validation set.
            return check_tokens(X, type(self).__name__)
        check_input_kind(self.tokenizer_, X, type(self).__name__)
        return transform_for(type(self).__name__, self.tokenizer_, X)  # errors name this estimator, as sklearn's do

    # -------------------------------------------------------------- fit
    def fit(self, X, y=None, sample_weight=None, **fit_params):
        """Fit the tokenizer on ``X``, tokenize once, and train the network.

        Parameters
        ----------
        X : DataFrame, array-like, list of str or images, n_samples rows
        y : array-like of shape (n_samples,) (or (n_samples, n_targets) for regression
            and multi-label classification)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: each row's loss counts ``sample_weight`` times
            (training and validation loss alike). With metadata routing on, request it
            with ``set_fit_request(sample_weight=True)``.
        **fit_params : passed to skorch's ``fit``.

        Returns
        -------
        self
        """
        check_params(self)
        check_fit_params(self, fit_params, X=X)
        if self._continues():
            return self.partial_fit(X, y, sample_weight=sample_weight, **fit_params)
        self._start_accelerator()
        # Cheap checks on y come before the (possibly slow) tokenizer fit.
        n_samples = num_samples(X)
        sample_weight = check_sample_weight(sample_weight, n_samples)
        y_encoded = self._fit_target(y, n_samples, sample_weight)  # a regressor's scaling weighs rows as its loss does
        weights = self._row_weights(y_encoded, sample_weight)
        with self._seeded(), self._holdout_plan():
            batch = self._fit_tokenizer(X, y=y_encoded, weights=weights)
            self._train_new_module(with_weights(batch, weights), y_encoded, **fit_params)
        return self

    def _fit_tokenizer(self, X, n_rows=None, y=None, weights=None, rows=None) -> dict:
        """Fit ``tokenizer_`` on ``X`` (or reuse a pretrained one); X's tokens, or None for a sample of ``n_rows``.
        ``y`` and ``weights`` (encoded, every row's; ``rows``: X's rows among them) pick a table's
        piecewise bins, the early-stopping holdout left out (``_target_for_tokenizer``)."""
        self.pretrained_weights_ = text_weights_folder() if wants_text_weights(self, X) else None
        pretrained = self._pretrained()
        user = NeuralNet.get_params_for(self, "tokenizer")
        if pretrained is not None:
            # The embedder's ids belong to the pretrained tokenizer: reuse it, fitted (X's columns read).
            tokenizer = adopt_new_categories(self, adopt_pretrained_tokenizer(pretrained.tokenizer, X), X)
        else:
            tokenizer = make_tokenizer(self.tokenizer, X, user)
        self.text_stem_weights_ = text_weights_folder() if pretrained is None and wants_text_stem(self, tokenizer, X) else None
        if self.text_stem_weights_:
            tokenizer.set_params(text=text_stem_tokenizer(self.text_stem_weights_))
        self.resolved_params_ = resolve_recipe(self, tokenizer, X, n_rows or num_samples(X), pretrained is not None)
        self._after_recipe(tokenizer, n_rows or num_samples(X), streamed=n_rows is not None)
        if pretrained is None:
            check_resolved_heads(self)
            recipe = {key: value for key, value in self.get_params_for("tokenizer").items() if key not in user}
            tokenizer = tokenizer.set_params(**recipe)
            check_memory(self, pixel_bytes(tokenizer, num_samples(X)), "resizing the images to tokenizer image_size")
            tokenizer = fit_with_target(tokenizer, X, *self._target_for_tokenizer(y, weights, rows))
        self.tokenizer_ = tokenizer
        dtypes = getattr(X, "dtypes", None)
        self.feature_dtypes_in_ = {str(c): str(t) for c, t in dtypes.items()} if hasattr(dtypes, "items") else None
        if n_rows is not None:
            return None
        return self.tokenizer_.transform(X) if pretrained is None else pretrained_tokens(self.tokenizer_, X)

    def _after_recipe(self, tokenizer, n_rows: int, streamed: bool) -> None:
        """Resolve what a subclass adds to ``resolved_params_`` (its ``"auto"`` settings) once the recipe is."""

    def _train_new_module(self, data, y, **fit_params):
        """Build a fresh module for the fitted tokenizer and train it on ``data`` (tokens or a dataset)."""
        self.n_features_in_ = getattr(self.tokenizer_, "n_features_in_", None)
        names = getattr(self.tokenizer_, "feature_names_in_", None)
        if names is not None:
            self.feature_names_in_ = names
        elif "feature_names_in_" in vars(self):
            del self.feature_names_in_
        check_before_training(self, data)
        self._resolve_inference_batch_size(data)
        self.initialize()
        NeuralNet.partial_fit(self, data, y, _routing_method="fit", **fit_params)
        if isinstance(data, dict) and hasattr(self, "_warn_if_collapsed"):  # classifiers and regressors (``_collapse``)
            self._warn_if_collapsed(data, y)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        """The training loop (the epochs left after a resumed checkpoint); Ctrl-C is logged and keeps the best weights."""
        try:
            return super().fit_loop(X, y, epochs=epochs_left(self, epochs), **fit_params)
        except KeyboardInterrupt as interrupt:
            log_user_interrupt(self, interrupt)
            raise

    def partial_fit(self, X, y=None, classes=None, sample_weight=None, **fit_params):
        """Continue training on ``X`` with the fitted tokenizer (fits everything if unfitted).

        Each call runs ``max_epochs`` epochs of the ``lr_schedule`` from the peak ``lr``
        (the cosine schedule does not stay at the 0 it ended the last fit on). The
        tokenizer stays as fitted: table categories it has not seen are refused
        (``ValueError`` naming them) rather than read as "unseen", or learned where the
        estimator has ``new_categories="grow"``; ``warm_start=False`` refits everything.
        ``classes`` (classifiers) on the first call fixes ``classes_``, as scikit-learn's
        incremental learners take it, so a batch may lack classes later ones bring.
        """
        check_fit_params(self, fit_params, "partial_fit", X=X)
        if not hasattr(self, "tokenizer_") or not self.initialized_:
            self._classes_for_fit = classes  # the first call's classes= fixes classes_ (the classifier's)
            try:
                return self.fit(X, y, sample_weight=sample_weight, **fit_params)
            finally:
                del self._classes_for_fit
        check_same_classes(classes, getattr(self, "classes_", classes))
        self._resume_accelerator()
        data, y_encoded = continued_tokens(self, X, y)
        # The cosine schedule left the rate at ~0; CosineAnnealingLR restarts from the current
        # rate, so without this the continued fit would not move. Every fit and partial_fit
        # runs its schedule from the peak lr (warmup_linear restores it at on_train_end).
        for group in self.optimizer_.param_groups:
            group["lr"] = group.get("initial_lr", group["lr"])
        weights = check_sample_weight(sample_weight, num_samples(X))
        if isinstance(data, dict):
            data = with_weights(data, self._row_weights(y_encoded, weights, continued=True))
        elif weights is not None:
            raise ValueError(f"{type(self).__name__} does not support sample_weight")
        with self._seeded(continued=True), self._schedule_from_the_peak():
            NeuralNet.partial_fit(self, data, y_encoded, **fit_params)
        return self

    def _continues(self) -> bool:
        """Whether ``fit`` continues the fitted model: ``warm_start=True`` after a first fit."""
        return bool(self.warm_start and getattr(self, "initialized_", False) and hasattr(self, "tokenizer_"))

    def _continued_data(self, X, y):
        """``(tokens or dataset, encoded target)`` of ``X, y`` for a continued fit."""
        batch = self.tokenize(X)
        n_rows = len(next(iter(batch.values())))
        return batch, self._encode_target(check_target(y, n_rows, numeric=self._numeric_target))

    def _seeded(self, continued: bool = False):
        """Fork the global torch RNG and seed it: a reproducible fit that leaves the caller's RNG alone
        (``random_state=None``: no fork; the fit draws from the global RNG and moves it on).
        ``continued``: a continued fit, seeded by ``_continued_seed`` so that it does not replay the first."""
        if isinstance(self.random_state, np.random.RandomState):
            # As in scikit-learn: a RandomState instance gives every fit a new draw.
            self._drawn_seed = int(self.random_state.randint(0, 2**31 - 1))
        elif self.random_state is None:
            self._drawn_seed = self._shared_seed()  # None outside a launched job: the global RNGs decide, as ever
        return seeded_torch(self._continued_seed() if continued else self._fit_seed(), self._resolved_device())

    __repr__ = BaseEstimator.__repr__  # scikit-learn's: the settings (see _repr), not skorch's module tree

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tokenizer_") and bool(getattr(self, "initialized_", False)) and hasattr(self, "module_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = self.random_state is None or isinstance(self.random_state, np.random.RandomState)
        return tags

    def check_data(self, X, y):
        """Nothing: ``fit`` checks and encodes y (``_fit_target``); skorch's class inference would shadow it."""
