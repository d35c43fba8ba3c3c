"""The early-stopping holdout: which rows ``fit`` trains on and which it validates on."""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import skorch.helper
from sklearn.model_selection import train_test_split
from skorch.dataset import Dataset
from torch.utils.data import Subset

from ._weights import check_split_weights, with_weights

__all__ = ["DEFAULT_VALIDATION_FRACTION", "SMALL_TABLE_HOLDOUT_ROWS", "HoldoutSplitMixin", "auto_validation_fraction"]

#: the holdout ``validation_fraction="auto"`` resolves to when the recipe stops early
DEFAULT_VALIDATION_FRACTION = 0.1
#: a table's early stopping reads at least this many held-out rows (at most 30% of them): stopping on
#: 10% of 100-1,000 rows (10-100 rows) kept noisy epochs, log-loss 0.430 +- 0.116 on 300 Adult rows
#: against 0.376 +- 0.015 on 30% (validation, 4 tables, docs/defaults.md "Tables of 100 to 2,000 rows")
SMALL_TABLE_HOLDOUT_ROWS = 300


def auto_validation_fraction(estimator, kind: str, n_rows: int) -> float:
    """The holdout ``validation_fraction="auto"`` gives a recipe that stops early: 10%, or for a
    table classifier or regressor of under 3,000 rows ``SMALL_TABLE_HOLDOUT_ROWS`` rows, at most 30%.

    Not on ``partial_fit``'s first call: its rows are a chunk of a stream, not the table, and every later chunk
    would hold out 30% too (500-row chunks of 5,000 rows trained on 350 rows a chunk instead of 450)."""
    fraction = DEFAULT_VALIDATION_FRACTION
    chunk = "_classes_for_fit" in vars(estimator)  # set by partial_fit's first call only
    if kind == "table" and estimator._recipe_role in ("classifier", "regressor") and n_rows > 0 and not chunk:
        fraction = min(0.3, max(fraction, SMALL_TABLE_HOLDOUT_ROWS / n_rows))
    estimator._auto_validation_fraction = fraction  # for set_params(validation_fraction="auto") after the fit
    return fraction


class HoldoutSplitMixin:
    """skorch's ``get_split_datasets`` for ``train_split="auto"``: a seeded ``validation_fraction``
    holdout, stratified where the estimator says so (``_stratify_labels``)."""

    def _uses_validation(self) -> bool:
        if self.train_split == "auto":
            return bool(self._validation_fraction())
        return self.train_split is not None

    def get_split_datasets(self, X, y=None, **fit_params):
        """skorch's split, or for ``train_split="auto"`` a ``validation_fraction`` holdout (stratified if asked)."""
        if self.train_split != "auto":
            train, valid = super().get_split_datasets(X, y, **fit_params)
            return train, self._readable_validation_set(valid)
        dataset = self.get_dataset(X, y)
        fraction = self._validation_fraction()
        if not fraction:
            return dataset, None
        n_valid = self._validation_rows(len(dataset))
        if not 0 < n_valid < len(dataset):
            raise ValueError(
                f"validation_fraction={fraction} of n_samples={len(dataset)} leaves no row to "
                f"{'train on' if n_valid else 'validate on'}; pass more rows, or validation_fraction=None to train "
                "on every row without early stopping"
            )
        train_idx, valid_idx = self._holdout_split(len(dataset), y)
        check_split_weights(X, train_idx, valid_idx, fraction)
        return Subset(dataset, train_idx), Subset(dataset, valid_idx)

    def _readable_validation_set(self, valid):
        """A callable ``train_split``'s validation set as the network reads it: raw rows and targets
        (``predefined_split(Dataset(X_valid, y_valid))``) tokenized and encoded as ``fit``'s are.

        The tokenizer, the label encoder and a regressor's target scaling are fitted inside ``fit``, so a
        user cannot prepare that set for a first fit; read as is, raw rows crashed in the collate, string labels
        in torch, and a regressor's raw targets were scored against standardised outputs (valid_loss ~10,000).
        A continued fit (``partial_fit``, ``warm_start``) keeps the fitted tokenizer, so tokens it made
        (``predefined_split(Dataset(est.tokenize(X_valid), y_valid_encoded))``) are read as they were before.
        """
        predefined = isinstance(self.train_split, functools.partial) and self.train_split.func is skorch.helper._make_split
        if type(valid) is not Dataset or (isinstance(valid.X, dict) and not predefined):
            return valid  # the split's own rows (ValidSplit's Subsets), or a dataset built from them
        if not isinstance(valid.X, dict):
            return self._validation_from_rows(valid)
        # a first fit resets the history before it splits; a continued fit's history holds its earlier epochs
        if len(self.history_):
            return self._validation_from_tokens(valid)
        targets = ", nor their targets its encoding" if hasattr(self, "_encode_target") else ""
        raise ValueError(
            f"train_split's validation set holds tokens: {type(self).__name__} fits its tokenizer in fit, so tokens made "
            f"elsewhere may not match it{targets}; {self._validation_advice()} (tokens of "
            "this estimator's own tokenize are read on a continued fit: partial_fit, or warm_start=True)"
        )

    def _validation_advice(self) -> str:
        return (
            "pass its raw rows and targets, as to fit: predefined_split(Dataset(X_valid, y_valid)) with X_valid "
            "a DataFrame (or what fit takes) and y_valid the labels or targets in their own units; or hold out "
            "training rows with validation_fraction=... or train_split=skorch.dataset.ValidSplit(...)"
        )

    def _validation_from_tokens(self, valid):
        """A continued fit's predefined tokens: the network's input already, their targets read as given."""
        return valid

    def _validation_from_rows(self, valid):
        """A predefined set of raw rows and targets, tokenized and encoded as ``fit``'s are."""
        if valid.y is None or not hasattr(self, "_encode_target"):
            what = "has no targets" if valid.y is None else f"holds raw rows, which {type(self).__name__} cannot encode"
            raise ValueError(f"train_split's validation set {what}; {self._validation_advice()}")
        try:
            tokens = self.tokenize(valid.X)
            y = self._encode_target(valid.y)
        except ValueError as error:
            raise ValueError(f"train_split's validation set: {error}") from error
        if len(y) != len(next(iter(tokens.values()))):
            raise ValueError(f"train_split's validation set has {len(y)} targets for {len(valid)} rows")
        # class weights weigh its loss as they weigh an automatic holdout's (no sample_weight: it has none)
        return Dataset(with_weights(tokens, self._row_weights(y, None, continued=True)), y)

    def _stratify_labels(self, y):
        return None

    def _split_seed(self):
        seed = self._fit_seed()
        return None if seed is None else seed + 1

    def _fit_seed(self):
        """``random_state`` as an int seed, or None; a ``RandomState`` gives the seed ``_seeded`` drew for this fit,
        and so does ``None`` in a launched job (one seed for every process, ``_shared_seed``)."""
        if self.random_state is None or isinstance(self.random_state, np.random.RandomState):
            return getattr(self, "_drawn_seed", None)
        return None if self.random_state is None else int(self.random_state)

    def _continued_seed(self):
        """The seed of a continued fit (``partial_fit``, ``warm_start``): the fit's seed moved on by the epochs trained.

        Built from the fit's seed alone, every continued call replayed the first call's
        shuffle, dropout masks and (pretrainer) masks or views; moved on, each call draws
        afresh and the same calls still draw the same.
        """
        seed = self._fit_seed()
        return None if seed is None else int(np.random.SeedSequence([seed, len(self.history_)]).generate_state(1)[0])

    def _holdout_split(self, n_rows: int, y):
        """``(train_idx, valid_idx)`` of the ``validation_fraction`` holdout over ``n_rows`` rows:
        the one ``_plan_holdout`` fixed before the tokenizer's fit, else a fresh seeded split."""
        planned = self.__dict__.pop("_planned_holdout", None)
        if planned is not None and planned[0] == n_rows:
            return planned[1], planned[2]
        indices = np.arange(n_rows)
        split = train_test_split(
            indices, test_size=self._validation_fraction(), random_state=self._split_seed(), stratify=self._stratify_labels(y)
        )
        accelerator = getattr(self, "accelerator_", None)
        if accelerator is not None and accelerator.num_processes > 1:
            # With random_state=None each process draws its own split: every process validates on
            # (and chooses its bins without) the main process's, so all end with the same model.
            from accelerate.utils import broadcast_object_list

            split = broadcast_object_list(list(split), from_process=0)
        return split[0], split[1]

    @contextlib.contextmanager
    def _holdout_plan(self):
        """A fit's span: the holdout ``_plan_holdout`` fixed ends with it, also when it fails before
        ``get_split_datasets`` took it (a later ``partial_fit`` on as many rows validated on it)."""
        try:
            yield
        finally:
            self.__dict__.pop("_planned_holdout", None)

    def _plan_holdout(self, n_rows: int, y):
        """Fix the holdout ``fit`` will validate on before anything reads ``y``; its rows, or None.

        With ``random_state=None`` the split is a fresh draw, so it is drawn once here and
        ``get_split_datasets`` takes this one.
        """
        if self.train_split != "auto" or not self._validation_fraction():
            return None
        if not 0 < self._validation_rows(n_rows) < n_rows:
            return None  # get_split_datasets names the problem
        train_idx, valid_idx = self._holdout_split(n_rows, y)
        self._planned_holdout = (n_rows, train_idx, valid_idx)
        return valid_idx

    def _target_for_tokenizer(self, y, weights, rows=None):
        """The targets and row weights a tokenizer's fit may read (the piecewise bins' trees).

        The early-stopping holdout's rows weigh 0: targets that choose the tokens would
        otherwise also score the epochs that early stopping compares. ``sample_weight`` and
        class weights (``weights``) weigh the other rows, as they weigh the loss.

        Parameters
        ----------
        y : array-like of shape (n_rows,) or (n_rows, n_outputs), or None
            Encoded targets of every training row.
        weights : ndarray of shape (n_rows,) or None
        rows : ndarray of int or None
            The rows the tokenizer reads (a streamed fit's sample); None: all of them.

        Returns
        -------
        y, weights : for ``rows``; ``weights`` None where no row weighs differently
        """
        if y is None:
            return None, None
        y = np.asarray(y)
        holdout = self._plan_holdout(len(y), y)
        if holdout is not None:
            weights = np.ones(len(y)) if weights is None else np.array(weights, dtype=np.float64)
            weights[holdout] = 0.0
        if rows is not None:
            y, weights = y[rows], None if weights is None else np.asarray(weights)[rows]
        return y, weights
