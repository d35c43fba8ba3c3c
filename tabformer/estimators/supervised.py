"""The classifier and the regressor: a head on the CLS token (or on pooled tokens).

Both are :class:`~tabformer.estimators._finetuning.FineTuningNet` subclasses; all they
add is the target (labels or standardised numbers), the head, the ``fusion`` choice for
mixed inputs, and how predictions come back.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNetClassifier, NeuralNetRegressor

from .._targets import check_target, float32_target
from .._warnings import user_stacklevel
from ..nn.heads import ClassificationHead, RegressionHead
from ._base import construct
from ._categories import NEW_CATEGORIES_PARAM_DOC
from ._classes import (
    check_indicator_values,
    check_weighted_classes,
    fit_label_encoder,
    fitted_label_vector,
    label_vector,
    refuse_label_lists,
)
from ._cls_head import CLSHeadNet
from ._collapse import kept_epoch_answers_vary, rare_class_note
from ._docs import (
    CLASS_WEIGHT_DOC,
    CRITERION_DOC,
    FINE_TUNING_PARAMS_DOC,
    FUSION_PARAM_DOC,
    RECIPES_NOTES_DOC,
    RESOLVED_ATTRIBUTES_DOC,
    SHARED_PARAMS_DOC,
)
from ._ensemble import ENSEMBLE_PARAM_DOC
from ._multilabel import (
    check_criterion_for_y,
    collapsed_labels,
    init_label_prior,
    label_names,
    label_prior,
    multilabel_criterion,
    user_criterion_params,
    warn_constant_labels,
)
from ._params import (
    CLASS_WEIGHT_CONSTRAINT,
)
from ._regression import original_scale, standardized, target_scaling, warn_constant_targets
from ._scored_rows import class_labels, replayed_outputs, unstandardized
from ._streaming import STREAMING_PARAM_DOC

__all__ = ["TabFormerClassifier", "TabFormerRegressor"]

_PARAMS_DOC = (
    SHARED_PARAMS_DOC
    + FINE_TUNING_PARAMS_DOC
    + FUSION_PARAM_DOC
    + STREAMING_PARAM_DOC
    + NEW_CATEGORIES_PARAM_DOC
    + ENSEMBLE_PARAM_DOC
    + CRITERION_DOC
)


class TabFormerClassifier(CLSHeadNet, NeuralNetClassifier):
    __doc__ = (
        """Transformer classifier over tokenized inputs, with a CLS-token head.

    Labels may be of any type (strings included); binary and multiclass. A 2-D 0/1
    indicator ``y`` of shape (n_samples, n_labels) (e.g. from
    :class:`~sklearn.preprocessing.MultiLabelBinarizer` on lists of labels) makes it
    multi-label: one sigmoid per label trained with binary cross-entropy, ``predict``
    returning the indicator matrix and ``predict_proba`` each label's probability.
    """
        + _PARAMS_DOC
        + CLASS_WEIGHT_DOC
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels; multi-label: the label columns ``0 .. n_labels - 1``.
    multilabel_ : bool
        Whether ``y`` was a multi-label indicator matrix.
    class_weight_ : ndarray of shape (n_classes,)
        The class weights of the loss, in ``classes_`` order; only with ``class_weight``.
    tokenizer_ : fitted tokenizer
    module_ : TabFormerModel (LateFusionModel with ``fusion="late"``)
    history_ : skorch History (per-epoch losses, timings)
"""
        + RESOLVED_ATTRIBUTES_DOC
        + """    n_features_in_ : int
    feature_names_in_ : ndarray of str (DataFrame input only)
"""
        + RECIPES_NOTES_DOC
        + """
    Examples
    --------
    >>> from tabformer import TabFormerClassifier
    >>> from tabformer.datasets import load_adult
    >>> X, y = load_adult()                                     # doctest: +SKIP
    >>> clf = TabFormerClassifier(random_state=0).fit(X, y)     # doctest: +SKIP
    >>> clf.predict_proba(X[:3]).shape                          # doctest: +SKIP
    (3, 2)
    """
    )

    _numeric_target = False

    _recipe_role = "classifier"
    _head_class = ClassificationHead

    _parameter_constraints = {**CLSHeadNet._parameter_constraints, "class_weight": CLASS_WEIGHT_CONSTRAINT}

    def __init__(self, tokenizer="auto", encoder=None, *, criterion=torch.nn.CrossEntropyLoss, class_weight=None, **kwargs):
        super().__init__(tokenizer, encoder, criterion=criterion, **kwargs)
        self.class_weight = class_weight

    @property
    def _multilabel(self) -> bool:
        # Models saved before multi-label existed have no multilabel_.
        return getattr(self, "multilabel_", False)

    def initialize_criterion(self):
        """The criterion; a multi-label fit swaps the default cross-entropy for per-label binary cross-entropy.

        Returns
        -------
        self
        """
        if self._multilabel and self.criterion is torch.nn.CrossEntropyLoss:
            check_criterion_for_y(self, len(self.classes_))  # set_params after fit lands here: torch's TypeError before
            # The user's criterion__* only: a recipe's (label smoothing) is cross-entropy's, which this loss lacks.
            self.criterion_ = multilabel_criterion(user_criterion_params(self)).to(self.device)
            return self
        return super().initialize_criterion()

    def _settings_checked_with_y(self, prefix: str) -> set:
        """``criterion__pos_weight``: a setting of the multi-label loss, checked once y is seen (``_fit_target``)."""
        return {"pos_weight"} if prefix == "criterion" and self.criterion is torch.nn.CrossEntropyLoss else set()

    def _row_weights(self, y_encoded, sample_weight, continued=False):
        weights, source = sample_weight, "sample_weight"
        if self.class_weight is not None:
            if self._multilabel:
                raise ValueError(
                    "class_weight is not supported with a multi-label y (its classes are label columns, each 0 or 1): "
                    "weigh each label's positives with criterion__pos_weight (one weight per label column, e.g. its "
                    "negatives / positives), or rows with sample_weight"
                )
            weights = self._class_weights(self.class_weight, y_encoded, continued)[y_encoded]
            weights, source = (
                (weights, "class_weight")
                if sample_weight is None
                else (weights * sample_weight, "sample_weight with class_weight")
            )
        if not self._multilabel:  # class_weight={0: 0} weighed a class out unchecked, as sample_weight may not
            check_weighted_classes(y_encoded, weights, self.classes_, source)
        return weights

    def _collapse_answers(self, outputs: torch.Tensor) -> torch.Tensor:
        """What the collapse check compares across rows: one-hot predicted classes, or 0/1 labels (multi-label)."""
        if self._multilabel:
            return (outputs >= 0).float()  # a sigmoid of at least 0.5
        return torch.nn.functional.one_hot(outputs.argmax(-1), outputs.shape[-1]).float()

    def _warn_if_collapsed(self, data: dict, y) -> None:
        if self._multilabel:  # each label on its own: one never predicted hid behind the others
            message = collapsed_labels(self, data, np.asarray(y))
        elif kept_epoch_answers_vary(self):  # the validation pass already showed two answers: no forward needed
            return
        else:
            answers = self._constant_answers(data, np.asarray(y))
            if answers is None:
                return
            # tolist: 2, not np.int64(2)
            what = f"one class ({np.asarray(self.classes_).tolist()[int(answers[0].argmax())]!r})"
            why = rare_class_note(self, data, np.asarray(y))  # probabilities that vary: no collapse, a rare class
            why = why or f"it has not learned beyond a constant answer; {self._collapse_advice()}"
            message = f"{what} for every training row it was checked on: {why}"
        if message:
            warnings.warn(f"{type(self).__name__} predicts {message}", ConvergenceWarning, stacklevel=user_stacklevel())

    @property
    def classes_(self):
        try:
            return self.label_encoder_.classes_
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} is not fitted yet: it has no classes_") from None

    def _fit_target(self, y, n_samples, sample_weight=None):
        if sp.issparse(y):  # MultiLabelBinarizer(sparse_output=True)
            y = y.toarray()
        refuse_label_lists(y)
        self._label_names_ = label_names(y)  # for the collapse warning's labels
        self._label_prior_ = None  # a multi-label y's prevalences, for the output's initial bias (_fit_tokenizer)
        dtypes = sorted({str(dtype) for dtype in y.dtypes}) if isinstance(getattr(y, "dtypes", None), pd.Series) else None
        y = check_target(y, n_samples, numeric=False)
        self.multilabel_ = type_of_target(y) == "multilabel-indicator"
        check_criterion_for_y(self, y.shape[1] if self._multilabel else None)  # before the tokenizer's fit
        declared = self.__dict__.get("_classes_for_fit")  # partial_fit's classes=, over the constructor's
        declared = self.classes if declared is None else declared
        if self._multilabel:
            if declared is not None:  # ignored before: classes_ stayed the column numbers whatever it listed
                raise ValueError(
                    f"classes={np.asarray(declared).tolist()} lists the labels of a single-label y; a multi-label y's "
                    f"classes are its {y.shape[1]} indicator columns (classes_ is 0 to {y.shape[1] - 1}): drop classes="
                )
            self.label_encoder_ = LabelEncoder().fit(np.arange(y.shape[1]))
            y = self._encode_target(y)
            warn_constant_labels(y, self._label_names_)
            return y
        y = fitted_label_vector(y, dtypes)
        self.label_encoder_ = fit_label_encoder(y, declared)
        return self._encode_target(y)

    def _fit_tokenizer(self, X, n_rows=None, y=None, weights=None, rows=None):
        tokens = super()._fit_tokenizer(X, n_rows, y, weights, rows)
        if self._multilabel:  # the holdout is known once the recipe is: its rows weigh 0, as for the piecewise bins
            self._label_prior_ = label_prior(*self._target_for_tokenizer(y, weights))
        return tokens

    def _encode_target(self, y):
        if self._multilabel:
            y = np.asarray(y.toarray() if sp.issparse(y) else y)
            if y.ndim != 2 or y.shape[1] != len(self.classes_):
                raise ValueError(
                    f"y must be a 0/1 indicator matrix with {len(self.classes_)} label columns, as in fit; got shape {y.shape}"
                )
            check_indicator_values(y)
            return y.astype(np.float32)
        y = label_vector(y)
        unknown = set(np.unique(y)) - set(self.label_encoder_.classes_)
        if unknown:
            unknown = sorted(np.asarray(list(unknown), dtype=object).tolist(), key=str)
            raise ValueError(f"y holds label(s) {unknown} not seen in fit; classes are {self.classes_.tolist()}")
        return self.label_encoder_.transform(y).astype(np.int64)

    def _stratify_labels(self, y):
        if self._multilabel:
            return None
        counts = np.bincount(np.asarray(y))
        n_valid = self._validation_rows(len(y))
        # Stratifying needs two rows of every class and room for every class in the holdout and in the training rows.
        return y if counts.min() >= 2 and min(n_valid, len(y) - n_valid) >= len(counts) else None

    def build_head(self, d_model):
        """A :class:`~tabformer.nn.heads.ClassificationHead` configured by ``head__*``.

        Parameters
        ----------
        d_model : int
            Width of the encoder output ``(B, 1+T, D)`` it reads.

        Returns
        -------
        ClassificationHead
            Logits of shape (B, n_classes); multi-label: each label's output starts at its
            training prevalence (``init_label_prior``).
        """
        head = construct(ClassificationHead, self.get_params_for("head"), "head", d_model, len(self.classes_))
        prior = getattr(self, "_label_prior_", None)  # a loaded model has none: its weights are loaded over the head
        if self._multilabel and prior is not None:
            init_label_prior(head, prior)
        return head

    def predict_proba(self, X):
        """Class probabilities, float64, shape (n_samples, n_classes), columns in ``classes_`` order.

        Multi-label: each label's own probability (a sigmoid), shape (n_samples, n_labels);
        rows need not sum to 1.
        """
        return self._linked(X, torch.sigmoid if self._multilabel else partial(torch.softmax, dim=-1))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, from the logits (finite where a probability underflows).

        Parameters
        ----------
        X : the inputs ``predict_proba`` takes

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._linked(X, torch.nn.functional.logsigmoid if self._multilabel else partial(torch.log_softmax, dim=-1))

    def _linked(self, X, link):
        check_is_fitted(self)
        replayed = replayed_outputs(self, X)  # skorch's cached scoring (valid_acc): the epoch's own logits
        if replayed is not None:
            return link(replayed.double()).numpy()
        # float64, as sklearn's: float32 reads a margin past ~17 as exactly 1.0, tying confident
        # rows for roc_auc. On the CPU, since MPS has no float64.
        return self.collect(X, lambda inputs: link(self.module_(**inputs).float().cpu().double()).numpy(), trim=True)

    def predict(self, X):
        """Most probable class label per row, shape (n_samples,).

        Multi-label: the indicator matrix of the labels whose probability is at least 0.5,
        shape (n_samples, n_labels), int.
        """
        if self._multilabel:
            return (self.predict_proba(X) >= 0.5).astype(np.int64)
        indices = self.predict_proba(X).argmax(axis=1)  # first: an unfitted model raises NotFittedError, not on classes_
        # labels on a Dataset too (a scoring callback's rows), which sklearn's scorers compare with the targets as labels
        return self.classes_[indices]

    def _scored_targets(self, y):
        """A scoring callback's targets (an epoch's, a batch's) as ``predict`` answers: labels, not their encoded classes."""
        return class_labels(self, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags


class TabFormerRegressor(CLSHeadNet, NeuralNetRegressor):
    __doc__ = (
        """Transformer regressor over tokenized inputs, with a CLS-token head.

    Targets may be 1-D or 2-D (several outputs); they are standardised internally
    (``standardize_target``) and predictions are returned on the original scale.
    """
        + _PARAMS_DOC
        + """    standardize_target : bool, default=True
        Train on ``(y - mean) / std`` per target, which keeps the default learning rate
        sensible whatever the target's units (a constant target is predicted exactly).
        Losses that need counts, probabilities or classes (``PoissonNLLLoss``, ``BCELoss``...)
        need ``standardize_target=False``; with ``PoissonNLLLoss`` ``predict`` returns counts.

    Attributes
    ----------
    target_mean_, target_scale_ : ndarray of shape (n_targets,)
        ``predict`` returns ``output * target_scale_ + target_mean_`` (its exp under ``PoissonNLLLoss``); a constant target has
        scale 0 (predicted exactly) until a continued fit brings other values.
"""
        + RESOLVED_ATTRIBUTES_DOC
        + """    tokenizer_, module_, history_, n_features_in_, feature_names_in_ : as the classifier
"""
        + RECIPES_NOTES_DOC
        + """
    Examples
    --------
    >>> from tabformer import TabFormerRegressor
    >>> from tabformer.datasets import load_diamonds
    >>> X, y = load_diamonds()                                  # doctest: +SKIP
    >>> TabFormerRegressor(random_state=0).fit(X, y).predict(X[:2]).shape  # doctest: +SKIP
    (2,)
    """
    )

    _numeric_target = True

    _parameter_constraints = {**CLSHeadNet._parameter_constraints, "standardize_target": ["boolean"]}
    _recipe_role = "regressor"
    _head_class = RegressionHead

    def __init__(self, tokenizer="auto", encoder=None, *, standardize_target=True, criterion=torch.nn.MSELoss, **kwargs):
        super().__init__(tokenizer, encoder, criterion=criterion, **kwargs)
        self.standardize_target = standardize_target

    def _fit_target(self, y, n_samples, sample_weight=None):
        names = getattr(y, "columns", None)  # a DataFrame's, for the constant-target warning
        y = check_target(y, n_samples, numeric=True)
        if y.ndim > 2:
            raise ValueError(f"y must be 1-D or 2-D, got shape {y.shape}")
        self.target_ndim_, self.n_targets_ = y.ndim, y.reshape(len(y), -1).shape[1]
        # Checks the criterion suits the targets (``_regression``) before the tokenizer's fit.
        self.target_mean_, self.target_scale_ = target_scaling(self, y.reshape(len(y), -1), sample_weight)
        warn_constant_targets(self, y.reshape(len(y), -1), names)
        return self._encode_target(y)

    def _encode_target(self, y):
        y2d = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        if y2d.shape[1] != self.n_targets_:
            raise ValueError(f"y has {y2d.shape[1]} target(s), the regressor was fitted with {self.n_targets_}")
        return float32_target(standardized(self, y2d), y2d)

    def build_head(self, d_model):
        """A :class:`~tabformer.nn.heads.RegressionHead` configured by ``head__*``.

        Parameters
        ----------
        d_model : int
            Width of the encoder output ``(B, 1+T, D)`` it reads.

        Returns
        -------
        RegressionHead
            Standardised predictions of shape (B, n_targets).
        """
        return construct(RegressionHead, self.get_params_for("head"), "head", d_model, self.n_targets_)

    def predict(self, X):
        """Predicted targets: shape (n_samples,) if fitted on 1-D y, else (n_samples, n_targets)."""
        check_is_fitted(self)
        scaled = replayed_outputs(self, X)  # skorch's cached scoring: the epoch's own outputs, not a new pass
        if scaled is None:
            scaled = self.collect(X, lambda inputs: self.module_(**inputs).float().cpu().numpy(), trim=True)
        y = original_scale(self, np.asarray(scaled).reshape(-1, self.n_targets_))
        return y.ravel() if self.target_ndim_ == 1 else y

    def _scored_targets(self, y):
        """The epoch's targets on the scale ``predict`` answers (the dataset holds them standardised; a tensor stays one)."""
        return unstandardized(self, y)

    def _collapse_answers(self, outputs: torch.Tensor) -> torch.Tensor:
        """What the collapse check compares across rows: the standardised predicted values."""
        return outputs.float().reshape(len(outputs), -1)

    def _warn_if_collapsed(self, data: dict, y) -> None:
        if not kept_epoch_answers_vary(self) and self._constant_answers(data) is not None:
            warnings.warn(
                f"{type(self).__name__} predicts the same value for every training row it was checked on: "
                f"it has not learned beyond a constant; {self._collapse_advice()}",
                ConvergenceWarning,
                stacklevel=user_stacklevel(),
            )

    @property
    def predict_proba(self):
        """Not available: reading it raises ``AttributeError`` on purpose, so ``hasattr`` is False.

        skorch gives every net a ``predict_proba``; a regressor must not advertise one, or
        sklearn tools (and users) would treat it as a probabilistic classifier.
        """
        raise AttributeError("TabFormerRegressor has no predict_proba; use predict")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
