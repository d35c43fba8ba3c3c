"""Self-supervised pretraining as an sklearn transformer, generic over objectives.

``TabFormerPretrainer(objective=name)`` looks ``name`` up in
:data:`tabformer.pretraining.OBJECTIVES`, builds it from the ``objective__*`` parameters,
and lets it do the modality-specific work: ``make_dataset`` (masks, augmented views),
``build_head`` (its layers over the shared embedder and encoder) and ``loss``, which is
this net's ``get_loss``. The pretrainer only fits the tokenizer, builds embedder +
encoder, and trains.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np
import torch
from sklearn.base import TransformerMixin
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted
from skorch import NeuralNet
from skorch.dataset import Dataset

from ..nn.models import PretrainedEncoder, PretrainingModel
from ..pretraining import get_objective, resolve_objective
from ._base import POOLINGS, TabFormerNet, construct
from ._params import SHARED_CONSTRAINTS, check_params
from ._util import num_samples

__all__ = ["TabFormerPretrainer"]

#: Seed of ``score``'s masks and views when ``random_state`` is None: any fixed number does, so that the same fitted
#: model scores the same X alike (GridSearchCV compared candidates on fresh random masks) and the global RNG stays put.
UNSEEDED_SCORE_SEED = 0


def _not_a_predictor(estimator) -> bool:
    return False


def _differs(old, new) -> bool:
    try:
        return bool(old != new) if not isinstance(old, tuple) else tuple(old) != tuple(new)
    except (TypeError, ValueError):  # arrays, or types that do not compare
        return True


class TabFormerPretrainer(TransformerMixin, TabFormerNet):
    """Pretrain embedder + encoder without labels; ``transform`` gives CLS embeddings.

    Parameters
    ----------
    objective : str, default="auto"
        Name in :data:`tabformer.pretraining.OBJECTIVES`, or ``"auto"``: picked by the
        fitted tokenizer's input (:data:`tabformer.pretraining.AUTO_OBJECTIVES`):
        ``"masked_cells"`` for a table, ``"mlm"`` for text and mixed rows,
        ``"simclr"`` for images. ``"masked_cells"``: hidden table cells, categories
        predicted and numbers regressed (:mod:`tabformer.pretraining.cells`).
        ``"mlm"``: masked tokens for
        text, and on mixed DataFrames also masked categorical cells. ``"simclr"``:
        contrastive views of images, and of mixed rows (image augmentations, random
        cell corruption of table columns, masking and cropping of text; see
        :mod:`tabformer.pretraining.views`). Its parameters route as
        ``objective__<name>`` (e.g. ``objective__mask_prob=0.15``).
    tokenizer : str or tokenizer instance, default="auto"
        As the classifier's; ``"auto"`` picks WordPiece for a list/Series of str.
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh encoder from ``encoder__*``; a ``PretrainedEncoder``
        (e.g. loaded MiniLM) continues pretraining from it with its own tokenizer.
    lr : float or "auto", default="auto"
        AdamW learning rate; ``"auto"`` resolves to 1e-3.
    max_epochs : int or "auto", default="auto"
        Upper bound (early stopping may end training sooner); ``"auto"`` resolves to 20.
    lr_schedule : {"cosine", "warmup_linear", "auto"} or None, default="auto"
        Cosine decay of the learning rate to 0 over ``max_epochs``, or BERT's per-batch
        linear warm-up and decay (see the classifier); ``None``: constant ``lr``.
        ``"auto"`` resolves to ``"cosine"``.
    batch_size : int or "auto", default="auto"
        Rows per training step (``-1``: all rows); ``"auto"`` resolves to 128, and on a
        table (``objective="masked_cells"``) as a classifier's: the largest power of 2 in
        [16, 256] giving an epoch at least 32 steps (200 rows: 16; 10,000 rows: 256).
    validation_fraction : float, "auto" or None, default="auto"
        Rows held out to watch the objective's loss for early stopping; ``"auto"``: 0.1
        with early stopping (the default ``patience``), none without it.
    patience : int, "auto" or None, default="auto"
        Epochs without a lower validation loss before stopping (the best weights are
        restored); ``None`` disables early stopping. ``"auto"`` resolves to 5.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, the split and the objective's randomness (a
        ``RandomState`` draws a new seed at every ``fit``).
    pooling : {"cls", "mean", "cls+mean"}, default="cls"
        What ``transform`` returns per row: the CLS output (d_model values), the mean
        of the CLS and real-token outputs, or both side by side (2 * d_model values,
        what DINO feeds its linear probes; on Fashion-MNIST it lifted a SimCLR probe
        from 0.797 to 0.819, docs/images.md).
    device : str, default="auto"
        ``"auto"``: CUDA when a GPU is visible, else the CPU (as the classifier's).
    verbose : int, default=1
    train_split, precision, distributed, memory_limit, criterion
        As the classifier's (:class:`~tabformer.TabFormerClassifier`); ``criterion`` is
        not used (the objective computes the loss).
    **kwargs
        ``tokenizer__*``, ``encoder__*``, ``objective__*`` and skorch's own parameters.

    Attributes
    ----------
    objective_ : the objective instance used in ``fit``
        Built from ``objective__*``; its name, ``"auto"`` resolved, is
        ``resolved_params_["objective"]``.
    tokenizer_ : fitted tokenizer
    module_ : :class:`~tabformer.nn.models.PretrainingModel`
    encoder_ : PretrainedEncoder
        A copy of the fitted tokenizer, embedder and encoder: pass it as ``encoder=`` to
        a classifier or tagger to warm-start it.
    history_ : skorch History
    resolved_params_ : dict
        The settings ``fit`` used: yours where given, the pretrainer's recipe for those
        left ``"auto"`` (``lr`` 1e-3, ``max_epochs`` 20, ``batch_size`` 128 or on a
        table by its rows, ``lr_schedule`` ``"cosine"``, ``patience`` 5), plus
        ``monitor`` (``"valid_loss"``) and ``objective`` (the objective's name); for
        images given alone, unless you set it, ``tokenizer__patch_size``: where the
        tokenizer's default patch of 4 does not divide the images, about 16 patches, as the
        classifier's plain patches (30x30 images: 6; 28x28 or 32x32 keep 4); see
        :mod:`tabformer.estimators._recipes`.
        ``get_params`` still returns what you passed.

    Examples
    --------
    >>> pre = TabFormerPretrainer(objective="mlm", max_epochs=2, verbose=0)      # doctest: +SKIP
    >>> emb = pre.fit(unlabeled_texts).transform(texts)                           # doctest: +SKIP
    >>> TabFormerClassifier(encoder=pre.encoder_).fit(few_texts, few_labels)      # doctest: +SKIP
    """

    prefixes_ = TabFormerNet.prefixes_ + ["objective"]
    _recipe_role = "pretrainer"
    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "objective": [str],
        "pooling": [StrOptions(set(POOLINGS))],
        "criterion": [None],
    }

    def __init__(
        self,
        objective="auto",
        tokenizer="auto",
        encoder=None,
        *,
        pooling="cls",
        module=PretrainingModel,
        criterion=None,
        **kwargs,
    ):
        super().__init__(tokenizer, encoder, module=module, criterion=criterion, **kwargs)
        self.objective = objective
        self.pooling = pooling

    # A transformer, not a predictor: skorch's predict/predict_proba would run the objective's
    # head on unmasked rows. Hidden, so hasattr (and sklearn's checks) see a plain transformer.
    predict = available_if(_not_a_predictor)(TabFormerNet.predict)
    predict_proba = available_if(_not_a_predictor)(TabFormerNet.predict_proba)

    def initialize_criterion(self):
        """No criterion module: ``criterion_`` is None, the objective scores its own predictions (``get_loss``)."""
        self.criterion_ = None
        return self

    def initialize_module(self):
        """Build ``module_``: a :class:`~tabformer.nn.models.PretrainingModel` of embedder, encoder and objective head.

        Returns
        -------
        self
        """
        encoder = self.build_encoder()
        embedder = self.build_embedder(encoder.embedding_size)  # ELECTRA-style: tokens narrower than d_model
        head = self.objective_.build_head(self.tokenizer_, embedder, encoder.d_model)
        parts = {"embedder": embedder, "encoder": encoder, "head": head}
        self.module_ = construct(self.module, {**self.get_params_for("module"), **parts}, "module")
        return self

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The objective's loss of what its head predicted (``y_true`` is a placeholder)."""
        return self.objective_.loss(y_pred)

    def _drop_last_in_training(self) -> bool:
        # An objective may ask for full batches only (SimCLR: few negatives are noise).
        return bool(getattr(getattr(self, "objective_", None), "drop_last", False))

    def fit(self, X, y=None, **fit_params):
        """Pretrain on unlabeled ``X``.

        Parameters
        ----------
        X : inputs the tokenizer accepts (a table, texts, images or a mixed DataFrame), n_samples rows
        y : ignored (accepted so the pretrainer sits in a Pipeline)

        Returns
        -------
        self
        """
        check_params(self)
        if fit_params.pop("sample_weight", None) is not None:  # skorch would hand it to the module's forward
            raise ValueError("TabFormerPretrainer does not take sample_weight: its objectives weigh every row alike")
        if self._continues():
            return self.partial_fit(X, y, **fit_params)
        if self.objective != "auto":
            get_objective(self.objective)  # an unknown name fails before the tokenizer's fit
            self._check_batch_size(self.objective, resolved=False)  # an explicit batch_size, before the tokenizer's fit
        self._start_accelerator()
        with self._seeded():
            batch = self._fit_tokenizer(X)
            name = resolve_objective(self.objective, self.tokenizer_)
            self.objective_ = construct(get_objective(name), self.get_params_for("objective"), "objective")
            self.resolved_params_["objective"] = name
            self._check_batch_size(name)
            self._check_batch_rows(num_samples(X), name)
            dataset = self.objective_.make_dataset(batch, self.tokenizer_, self._fit_seed())
            self._train_new_module(dataset, None, **fit_params)
        return self

    def _continued_data(self, X, y):
        self._check_same_objective()
        self._update_objective()
        self._check_batch_size(self.resolved_params_["objective"])
        self._check_batch_rows(num_samples(X), self.resolved_params_["objective"])  # before an epoch trains, as fit
        return self.objective_.make_dataset(self.tokenize(X), self.tokenizer_, self._continued_seed()), None

    def _validation_advice(self) -> str:
        return (
            "pass its raw rows, as to fit: predefined_split(Dataset(X_valid, None)) with X_valid what fit takes; or hold "
            "out training rows with validation_fraction=... or train_split=skorch.dataset.ValidSplit(...)"
        )

    def _validation_from_rows(self, valid):
        """A predefined set of raw rows, masked (or given views) by the objective as ``score`` masks them;
        read as is they reached the head without its labels (``TypeError`` in its forward)."""
        return self._validation_from_tokens(Dataset(self.tokenize(valid.X), None))

    def _validation_from_tokens(self, valid):
        seed = self._fit_seed()
        return self.objective_.make_dataset(valid.X, self.tokenizer_, UNSEEDED_SCORE_SEED if seed is None else seed)

    def _check_same_objective(self) -> None:
        """A continued fit (``partial_fit``, ``warm_start``) trains the fitted objective and its head: an ``objective``
        set since (``"auto"`` resolved against the fitted tokenizer, as ``fit`` resolves it) that names another is
        refused, as is an unknown name; the fitted one trained on silently while ``get_params`` said the new one."""
        fitted = self.resolved_params_["objective"]
        wanted = resolve_objective(self.objective, self.tokenizer_)
        get_objective(wanted)  # an unknown name (or not a str) is refused as fit refuses it
        if wanted != fitted:
            named = repr(self.objective) + (f" (resolved to {wanted!r})" if wanted != self.objective else "")
            raise ValueError(
                f"objective={named}, but this pretrainer was fitted with objective={fitted!r}; a continued fit "
                "(partial_fit, warm_start=True) keeps its objective and head: fit a new pretrainer for "
                f"objective={self.objective!r} (or a plain fit with warm_start=False), or set objective={fitted!r} back"
            )

    def _update_objective(self) -> None:
        """``objective__*`` set after a fit reach the continued fit (``partial_fit``, ``warm_start``), as the other
        parameters do: the fitted ``objective_`` kept its first settings, so ``set_params(objective__mask_prob=0.5)``
        was ignored silently. A setting that would change the head built at the first fit is refused."""
        wanted = self.get_params_for("objective").items()
        unknown = sorted(key for key, _ in wanted if not hasattr(self.objective_, key))
        if unknown:
            raise ValueError(f"objective {self.resolved_params_['objective']!r} has no setting(s) {unknown}")
        changed = {key: value for key, value in wanted if _differs(getattr(self.objective_, key, None), value)}
        if not changed:
            return
        updated = copy.deepcopy(self.objective_)  # a copy keeps the fitted state (center_); objectives store their params
        for key, value in changed.items():
            setattr(updated, key, value)
        with torch.random.fork_rng(devices=[]):  # the trial head's initialisation leaves the fit's RNG alone
            head = updated.build_head(self.tokenizer_, self.module_.embedder, self.module_.encoder.d_model)
        shapes = {key: tuple(value.shape) for key, value in head.state_dict().items()}
        if shapes != {key: tuple(value.shape) for key, value in self.module_.head.state_dict().items()}:
            settings = ", ".join(f"objective__{key}={value!r}" for key, value in sorted(changed.items()))
            raise ValueError(
                f"{settings} changes the objective's head, built at the first fit; a continued fit (partial_fit, "
                "warm_start=True) keeps it: fit a new pretrainer (warm_start=False) for these settings"
            )
        self.objective_ = updated

    def _check_batch_size(self, name: str, resolved: bool = True) -> None:
        """Refuse a training batch smaller than the objective's ``min_batch_rows`` (SimCLR's NT-Xent raised inside
        ``train_step``, after the tokenizer's fit, naming neither setting). ``resolved=False``: the user's explicit
        values only (before the fit resolves ``"auto"``); else the batch size ``get_iterator`` trains with."""
        needed = getattr(get_objective(name), "min_batch_rows", 1)
        routed = self.get_params_for("iterator_train") if resolved else NeuralNet.get_params_for(self, "iterator_train")
        if "batch_size" in routed:
            setting, value = "iterator_train__batch_size", routed["batch_size"]
        else:
            setting, value = "batch_size", self._setting("batch_size") if resolved else self.batch_size
        # -1 (every row in one batch) is left to _check_batch_rows, which counts the rows
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 < value < needed:
            raise ValueError(
                f"objective={name!r} needs {setting} >= {needed} (the other rows of a batch are its negatives); got "
                f"{value}: pass {setting}={needed} or more" + (", or batch_size='auto'" if setting == "batch_size" else "")
            )

    def _check_batch_rows(self, n_rows: int, name: str) -> None:
        """An objective needing ``min_batch_rows`` a batch (SimCLR's negatives) needs them on each side of the split."""
        needed = getattr(self.objective_, "min_batch_rows", 1)
        n_valid = self._validation_rows(n_rows)
        # Found after a whole training epoch before: the holdout's one image has no negatives.
        for side, rows, low in (("validation holdout", n_valid, 1), ("rows left to train on", n_rows - n_valid, 0)):
            if low <= rows < needed:
                # "of 1 rows holds 0" read as the holdout's count when it was the training side's
                raise ValueError(
                    f"objective={name!r} needs at least {needed} rows in the {side}, and validation_fraction="
                    f"{self._validation_fraction()} of {n_rows} rows leaves {rows} there; pass more rows, another "
                    "validation_fraction, or validation_fraction=None"
                )

    def transform(self, X):
        """Embeddings of the pretrained encoder, one per row of ``X`` in its order, pooled as ``pooling`` says.

        ``fit_transform(X)`` is ``fit(X).transform(X)`` (scikit-learn's ``TransformerMixin``).

        Parameters
        ----------
        X : inputs the tokenizer accepts, n_samples rows

        Returns
        -------
        ndarray of shape (n_samples, d_model), or (n_samples, 2 * d_model) with
        ``pooling="cls+mean"``; float32. After ``set_output(transform="pandas")`` (or
        ``sklearn.set_config(transform_output="pandas")``): a DataFrame with the columns of
        ``get_feature_names_out()`` and the index of ``X`` where it has one.
        """
        check_is_fitted(self)
        return self.forward_features(X, pooling=self.pooling)

    @property
    def encoder_(self) -> PretrainedEncoder:
        check_is_fitted(self)
        return copy.deepcopy(PretrainedEncoder(self.tokenizer_, self.module_.embedder, self.module_.encoder)).cpu().eval()

    def get_feature_names_out(self, input_features=None):
        """Names of ``transform``'s output columns: ``"tabformerpretrainer0"``, ``"tabformerpretrainer1"``...

        As scikit-learn names the outputs of its own decompositions (``pca0``, ...), so
        ``set_output(transform="pandas")`` gives these column names.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Not used for the names; checked as scikit-learn's transformers check it: it must
            equal ``feature_names_in_`` (and have ``n_features_in_`` names) where ``fit`` set them.

        Returns
        -------
        ndarray of str of shape (d_model,), or (2 * d_model,) with ``pooling="cls+mean"``
        """
        check_is_fitted(self)
        # As PCA does: names of other columns than fit's (a Pipeline or ColumnTransformer wired to the wrong step)
        # raise instead of being ignored. Images have no n_features_in_, so any names pass.
        _check_feature_names_in(self, input_features, generate_names=False)
        width = self.module_.encoder.d_model * (2 if self.pooling == "cls+mean" else 1)
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(width)], dtype=object)

    def score(self, X, y=None):
        """Minus the objective's loss on ``X`` (higher is better, as sklearn expects).

        The masks (or augmented views) are drawn from a fixed seed: the fit's (``random_state``), or
        ``UNSEEDED_SCORE_SEED`` without one, so a fitted model scores the same ``X`` alike every time, and
        the caller's global torch RNG is left alone. Masked cells and tokens: each row's masks come from
        (that seed, the row's index in ``X``), and the loss is the mean over all hidden cells (tokens) of
        ``X``, so the score does not depend on ``iterator_valid__batch_size``. SimCLR's loss is averaged
        over rows; its negatives are the other rows of a batch, so it does depend on the batch size.

        Parameters
        ----------
        X : inputs the tokenizer accepts, n_samples rows
        y : ignored

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        seed = self._fit_seed()
        seed = UNSEEDED_SCORE_SEED if seed is None else seed
        dataset = self.objective_.make_dataset(self.tokenize(X), self.tokenizer_, seed)
        if hasattr(dataset, "seed_rows"):
            dataset.seed_rows = True  # a row hides the same cells in any batch
        loss_sum = getattr(self.objective_, "loss_sum", None)

        def batch_loss(inputs):
            predictions = self.module_(**inputs)
            if loss_sum is None:  # an objective averaging over rows (SimCLR's anchors)
                rows = len(next(iter(inputs.values())))
                return float(self.objective_.loss(predictions)) * rows, rows
            total, count = loss_sum(predictions)
            return float(total), int(count)

        totals, counts = zip(*self.iter_batches(dataset, batch_loss))
        if sum(counts) == 0:  # scored 0 (a perfect score) before
            raise ValueError(
                f"score found nothing to predict in the {num_samples(X)} rows of X: the objective hid no cell or token "
                "(no present cell or real token, or too few rows); pass more rows or a larger objective__mask_prob"
            )
        return -float(np.sum(totals, dtype=np.float64) / sum(counts))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.transformer_tags.preserves_dtype = ["float32"]  # embeddings are float32 whatever the input
        return tags
