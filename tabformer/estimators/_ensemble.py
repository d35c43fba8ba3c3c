"""``ensemble_size``: several models trained side by side in one fit, their predictions averaged.

A small table is where one network's variance shows: on 300 Adult rows (validation, 5
seeds) one model's log-loss was 0.373 and logistic regression's 0.349; five members on
folds reach 0.350 (docs/defaults.md, "Tables of 100 to 2,000 rows: five members on folds").
"""

from __future__ import annotations

import fnmatch
import re
import warnings
from numbers import Integral

import numpy as np
import torch
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils._param_validation import Interval, StrOptions
from skorch.callbacks import GradientNormClipping, ParamMapper, PassthroughScoring
from skorch.callbacks.scoring import ScoringBase
from skorch.utils import to_tensor

from .._warnings import user_stacklevel
from ..nn.ensemble import FOLD, EnsembleModel
from ._regression import poisson_log_link
from ._weights import SAMPLE_WEIGHT, weighted_loss

__all__ = ["ENSEMBLE_CONSTRAINT", "ENSEMBLE_PARAM_DOC", "EnsembleMixin", "auto_ensemble_size"]

ENSEMBLE_CONSTRAINT = [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")]
#: members of a from-scratch table model under ``SMALL_TABLE_ROWS`` rows
SMALL_TABLE_MEMBERS, SMALL_TABLE_ROWS = 5, 2048

ENSEMBLE_PARAM_DOC = f"""    ensemble_size : "auto" or int >= 1, default="auto"
        Members trained side by side in one fit, each from its own random initialisation;
        predictions average the members' probabilities (a regressor's values). Where the fit
        stops early on a holdout (``train_split="auto"``, rows in memory), the rows are split
        in ``ensemble_size`` folds instead: member ``m`` trains on every fold but ``m``, and
        early stopping watches each row's prediction by the member that did not train on it,
        so every row is trained on and none is only held out (AutoGluon's bagging). Without
        early stopping every member trains on every row. ``"auto"`` resolves at ``fit``
        (``resolved_params_["ensemble_size"]``) to {SMALL_TABLE_MEMBERS} for a table from scratch of
        {2 * SMALL_TABLE_MEMBERS} to {SMALL_TABLE_ROWS - 1:,} rows (a fit takes about {SMALL_TABLE_MEMBERS} times as long;
        docs/defaults.md) and to 1 otherwise, also on ``partial_fit``'s first call (a chunk of a
        stream) and where parameters are named by pattern (``optimizer__param_groups``, or a
        ``Freezer``, ``Unfreezer``, ``Initializer`` or ``ParamMapper`` callback): those patterns read
        one model's names (``encoder.*``), where members' are ``members.<k>.encoder...``. A pattern
        that names no parameter warns. ``resolved_params_["out_of_fold"]`` says whether the members trained on folds.
        With several members ``forward_features`` returns their embeddings side by side and
        ``explain`` their mean attention. A callback scoring the training batches
        (``EpochScoring(on_train=True)``) needs one model (``ensemble_size=1``).
"""


def auto_ensemble_size(estimator, tokenizer, n_rows: int, streamed: bool) -> int:
    """What ``ensemble_size="auto"`` resolves to for ``tokenizer`` and ``n_rows`` training rows."""
    from_scratch = estimator.encoder is None and estimator._pretrained() is None
    # partial_fit's first call reads a chunk of a stream, not the table (as auto_validation_fraction does): 500-row
    # chunks of a large table would each train five members, and a short last chunk could not be split in folds
    if "_classes_for_fit" in vars(estimator) or parameter_patterns(estimator, estimator.callbacks):
        return 1
    # Under two rows a fold, members could not train and stop on folds: one model, as before.
    small_table = getattr(tokenizer, "kind", None) == "table" and 2 * SMALL_TABLE_MEMBERS <= n_rows < SMALL_TABLE_ROWS
    return SMALL_TABLE_MEMBERS if from_scratch and small_table and not streamed else 1


def parameter_patterns(estimator, callbacks) -> list:
    """``(where, pattern)`` of each string pattern naming parameters: ``optimizer__param_groups``'s and
    those of skorch's ``ParamMapper`` callbacks (``Freezer``, ``Unfreezer``, ``Initializer``) in ``callbacks``."""
    from skorch import NeuralNet  # the user's routed settings, not the recipe's

    found = [
        ("optimizer__param_groups", group[0])
        for group in NeuralNet.get_params_for(estimator, "optimizer").get("param_groups") or ()
    ]
    for entry in callbacks or ():
        name, callback = entry if isinstance(entry, tuple) else (type(entry).__name__, entry)
        if isinstance(callback, ParamMapper):
            patterns = callback.patterns if isinstance(callback.patterns, (list, tuple)) else [callback.patterns]
            found += [(f"callback {name!r} ({type(callback).__name__})", pattern) for pattern in patterns]
    return [(where, pattern) for where, pattern in found if isinstance(pattern, str)]


def warn_unmatched_patterns(estimator) -> None:
    """Warn, naming it and some parameter names, of a pattern that names no parameter: skorch ignores it silently."""
    names = [name for name, _ in estimator.get_all_learnable_params()]
    for where, pattern in parameter_patterns(estimator, estimator.callbacks_):
        if names and not any(fnmatch.fnmatch(name, pattern) for name in names):  # as skorch matches
            members = estimator._ensemble_members()
            why = (
                f" (it holds {members} ensemble members, members.0 to members.{members - 1}: pass ensemble_size=1, "
                f"or prefix the pattern with 'members.*.')"
                if members > 1
                else ""
            )
            warnings.warn(
                f"{where}: the pattern {pattern!r} matches none of the {len(names)} parameters of {type(estimator).__name__}"
                f"{why}; they are named like {names[:2] + names[-1:]}",
                UserWarning,
                stacklevel=user_stacklevel(),
            )


class EnsembleMixin:
    """For the classifier and regressor: ``ensemble_size`` resolved at ``fit``, the module built as an
    :class:`~tabformer.nn.ensemble.EnsembleModel`, members trained and stopped on folds of the rows.

    Where the fit would stop early on a holdout (``train_split="auto"``, in-memory rows), the
    rows are split in ``k`` folds instead, as AutoGluon's bagging does: member ``m`` trains on
    every fold but ``m``, and early stopping watches the out-of-fold prediction (each row's from
    the member that did not train on it). Every row trains ``k - 1`` members and scores one,
    where one model trains on 70% of a small table and stops on the other 30%.

    The tokenizer is shared, so a table's piecewise bins (chosen on the targets) read every
    row's target, the folds' too; a single model's holdout is left out of them. The
    out-of-fold loss then only picks the epoch, and the members' own losses never see their folds.
    """

    def _ensemble_combine(self) -> str:
        """How the members' outputs combine (``EnsembleModel``'s ``combine``): mean probability, or mean value."""
        if self._recipe_role == "regressor":
            return "logmeanexp" if poisson_log_link(self) else "mean"
        return "sigmoid" if getattr(self, "multilabel_", False) else "softmax"

    def _ensemble_members(self) -> int:
        """Members of the module ``fit`` builds (and a fitted model holds): the resolved ``ensemble_size``."""
        resolved = self.__dict__.get("resolved_params_") or {}
        return int(resolved.get("ensemble_size", 1))

    def _after_recipe(self, tokenizer, n_rows: int, streamed: bool) -> None:
        super()._after_recipe(tokenizer, n_rows, streamed)
        size = self.ensemble_size
        if isinstance(size, str):
            size = auto_ensemble_size(self, tokenizer, n_rows, streamed)
        self.resolved_params_["ensemble_size"] = int(size)
        # Decided once: members trained on every row (no early stopping) would score rows they saw, were a later
        # partial_fit to switch to folds; it validates on a shared holdout instead.
        self.resolved_params_["out_of_fold"] = int(size) > 1 and not streamed and self._out_of_fold(assume=True)
        if self.resolved_params_["out_of_fold"]:
            # Drawn once a fit: a continued fit (partial_fit, warm_start) on the same rows keeps each member's fold
            # unseen. Redrawn (random_state=None, or a RandomState's new draw), most rows were then scored by a member
            # that had trained on them, and early stopping read an optimistic loss.
            seed = self._split_seed()
            self.resolved_params_["fold_seed"] = int(np.random.SeedSequence().generate_state(1)[0] >> 1) if seed is None else seed

    def _out_of_fold(self, assume: bool = False) -> bool:
        """Whether members train on folds and stop on the out-of-fold prediction (else on a shared holdout).

        ``assume``: as if the fit that built the members had trained them on folds."""
        resolved = self.__dict__.get("resolved_params_") or {}
        on_folds = assume or bool(resolved.get("out_of_fold"))
        return on_folds and self.train_split == "auto" and bool(self._validation_fraction())

    def _plan_holdout(self, n_rows: int, y):
        return None if self._out_of_fold() else super()._plan_holdout(n_rows, y)

    def get_split_datasets(self, X, y=None, **fit_params):
        """skorch's split; with out-of-fold members every row both trains and validates, each row's fold
        (``FOLD``) travelling with its tokens as weights do."""
        if not (self._out_of_fold() and isinstance(X, dict)):
            return super().get_split_datasets(X, y, **fit_params)
        if len(y) < 2 * self._ensemble_members() and len(self.history_):
            # A continued fit on a chunk too short for the folds (partial_fit's last rows): every member trains on the
            # chunk and validates on a shared holdout of it, as one model would, rather than refusing the chunk.
            return super().get_split_datasets(X, y, **fit_params)
        folds = self._folds(len(y), y)
        weights = X.get(SAMPLE_WEIGHT)
        for member in range(self._ensemble_members()):
            if weights is not None and not np.asarray(weights)[folds != member].sum() > 0:
                raise ValueError(
                    f"the training rows of ensemble member {member} (every fold but its own, {np.sum(folds != member)} "
                    "rows) have a total sample_weight of 0: it would learn nothing. Give more rows weight, pass another "
                    "random_state, ensemble_size=1, or validation_fraction=None to train every member on every row"
                )
        dataset = self.get_dataset({**X, FOLD: folds}, y)
        return dataset, dataset

    def _folds(self, n_rows: int, y) -> np.ndarray:
        """Each row's fold, 0 to k-1: stratified on a classifier's labels where every class has k rows.

        Seeded by ``resolved_params_["fold_seed"]``, so continued fits on the same rows draw the same folds."""
        k = self._ensemble_members()
        if n_rows < 2 * k:
            raise ValueError(
                f"ensemble_size={k} splits the rows in {k} folds (each member trains on all but its own, and early stopping "
                f"reads each row out of fold); {n_rows} rows are too few: pass ensemble_size=1, or validation_fraction=None "
                "to train every member on every row without early stopping"
            )
        # Not _stratify_labels: it also asks the holdout to fit every class, which folds do not need (at
        # validation_fraction=0.1, 20 classes of 5 rows went unstratified, up to 4 of a class in one fold)
        labels = np.asarray(y) if self._ensemble_combine() == "softmax" else None
        seed = (self.__dict__.get("resolved_params_") or {}).get("fold_seed", self._split_seed())
        if labels is not None and np.unique(labels, return_counts=True)[1].min() >= k:
            splitter = StratifiedKFold(k, shuffle=True, random_state=seed)
        else:
            splitter, labels = KFold(k, shuffle=True, random_state=seed), None
        folds = np.empty(n_rows, dtype=np.int64)
        for fold, (_, rows) in enumerate(splitter.split(np.zeros(n_rows), labels)):
            folds[rows] = fold
        return folds

    def initialize_callbacks(self):
        """skorch's callbacks, after refusing those that score an ensemble's training batches (see below).

        Returns
        -------
        self
        """
        super().initialize_callbacks()
        members = self._ensemble_members()
        scored = [name for name, cb in self.callbacks_ if _scores_training_batches(cb)]
        if members > 1 and scored:
            # In training each member gives its own output (k, B, ...), on folds only for the rows outside its own:
            # skorch's cached scoring failed on them ("Sizes of tensors must match"). On folds, an eval pass over
            # dataset_train would read each row's out-of-fold prediction, the validation figure, not a training one.
            size = self.ensemble_size
            how = f"ensemble_size={size!r}" + (" (resolved for this table's rows)" if isinstance(size, str) else "")
            folds = ", each on every fold but its own," if self.resolved_params_.get("out_of_fold") else ""
            raise ValueError(
                f"callback(s) {scored} score the training batches (on_train=True), but this {type(self).__name__} trains "
                f"{members} ensemble members{folds} with {how}: there is no single model's training prediction to score. "
                "Pass ensemble_size=1 to score the training rows; validation scores (on_train=False) work with any size"
            )
        return self

    def initialize_optimizer(self, triggered_directly=None):
        """skorch's optimizer, after warning of a parameter pattern that names no parameter (see below).

        Parameters
        ----------
        triggered_directly : bool or None, default=None
            skorch's deprecated argument, passed on only when given.

        Returns
        -------
        self
        """
        # skorch skips an optimizer__param_groups or Freezer pattern that matches nothing: with ensemble_size=5
        # Freezer("encoder.*") froze 0 of 135 parameters (members.0.encoder...), silently.
        warn_unmatched_patterns(self)
        if triggered_directly is None:
            return super().initialize_optimizer()
        return super().initialize_optimizer(triggered_directly=triggered_directly)

    def initialize_module(self):
        """Build ``module_``: one model, or ``ensemble_size`` models of one architecture, each
        initialised afresh, in an :class:`~tabformer.nn.ensemble.EnsembleModel`.

        Returns
        -------
        self
        """
        size = self._ensemble_members()
        if size == 1:
            return super().initialize_module()
        members = []
        for _ in range(size):
            super().initialize_module()
            members.append(self.module_)
        self.module_ = EnsembleModel(members, self._ensemble_combine())
        return self

    def infer(self, x, **fit_params):
        """skorch's forward pass; a row's fold reaches an ensemble (out-of-fold validation) and no other module."""
        if isinstance(x, dict) and FOLD in x and self._ensemble_members() == 1:
            x = {key: value for key, value in x.items() if key != FOLD}
        return super().infer(x, **fit_params)

    def notify(self, method_name, **cb_kwargs):
        """skorch's; with several members a ``GradientNormClipping`` of yours clips each member's gradient on its own.

        skorch's clipped the norm of all members' gradients together, and each member's gradient is
        ``1 / ensemble_size`` of its own loss's (the loss is the members' mean): a member whose own gradient
        a single model would clip to 1 often was not clipped at all. Each member's own-loss gradient
        (``ensemble_size`` times its share) is now clipped at ``gradient_clip_value``, as the same model
        alone would be. A subclass with an ``on_grad_computed`` of its own runs as it is.

        Parameters
        ----------
        method_name : str
        **cb_kwargs : the callbacks' arguments
        """
        if method_name != "on_grad_computed":  # every other hook, several times a batch: nothing to look up
            return super().notify(method_name, **cb_kwargs)
        members = self._ensemble_members()
        if members == 1 or not any(_clips_jointly(cb) for _, cb in self.callbacks_):
            return super().notify(method_name, **cb_kwargs)
        self.on_grad_computed(self, **cb_kwargs)
        for _, callback in self.callbacks_:
            if _clips_jointly(callback):
                _clip_each_member(callback, cb_kwargs["named_parameters"], members)
            else:
                callback.on_grad_computed(self, **cb_kwargs)
        return None

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The loss of skorch's step; in training, with several members, the mean of the members' losses,
        each over the rows outside its fold. An ensemble in training returns (k, B, ...)."""
        if not (training and self._ensemble_members() > 1):
            return super().get_loss(y_pred, y_true, X=X, training=training)
        fold = X.get(FOLD) if isinstance(X, dict) else None
        base = X.get(SAMPLE_WEIGHT) if isinstance(X, dict) else None
        if fold is None:
            parent = super()  # taken here: a comprehension has its own scope, where super() fails
            return torch.stack([parent.get_loss(output, y_true, X=X, training=training) for output in y_pred]).mean()
        target = to_tensor(y_true, y_pred.device)
        base = torch.ones_like(fold, dtype=torch.float32) if base is None else base.to(torch.float32)
        losses = [
            weighted_loss(self.criterion_, output, target, ((fold != member) * base).to(output.device))
            for member, output in enumerate(y_pred)
        ]
        return torch.stack(losses).mean()


def _scores_training_batches(callback) -> bool:
    """Whether a callback scores the training batches' predictions (skorch's EpochScoring/BatchScoring with
    ``on_train=True``); ``train_loss`` (a passthrough of the batch losses) does not."""
    return isinstance(callback, ScoringBase) and not isinstance(callback, PassthroughScoring) and bool(callback.on_train)


def _clips_jointly(callback) -> bool:
    """Whether a callback is skorch's ``GradientNormClipping`` (or a subclass that keeps its ``on_grad_computed``)."""
    return isinstance(callback, GradientNormClipping) and type(callback).on_grad_computed is GradientNormClipping.on_grad_computed


_MEMBER = re.compile(r"(?:^|\.)members\.(\d+)\.")


def _clip_each_member(callback, named_parameters, members: int) -> None:
    """``callback``'s clipping, member by member: each member's own-loss gradient (``members`` times its
    share of the mean loss's) at ``gradient_clip_value``; parameters of no member (none in an ensemble) together."""
    if callback.gradient_clip_value is None:
        return
    groups = {}
    for name, parameter in named_parameters:
        found = _MEMBER.search(name)
        groups.setdefault(found and int(found.group(1)), []).append(parameter)
    for member, parameters in groups.items():
        bound = callback.gradient_clip_value / (1 if member is None else members)
        torch.nn.utils.clip_grad_norm_(parameters, max_norm=bound, norm_type=callback.gradient_clip_norm_type)
