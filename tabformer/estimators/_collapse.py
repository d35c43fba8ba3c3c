"""The collapse check: a fit that ends answering the same for every row is never silent.

After a fit, a classifier that predicts one class for every row (or a regressor one value)
warns (``ConvergenceWarning``). The check reads the answers of the validation pass that the
fit already ran, for the epoch whose weights the estimator keeps (early stopping's best
epoch, else the last), so a fit with a validation split pays nothing for it. Only when
there is no such pass, or its answers were all the same (a small validation split can be
one class by chance), does the estimator run its kept weights over training rows and warn
from those, in two looks (:func:`check_samples`): a first look at a few rows (8 of every
class, or 32 spread rows), which settles it for any model that answers two ways there;
only when those rows all agree, the full sample: up to 64 rows of every class for a
classifier (a rare class is never left out), 512 rows spread over the data for a regressor
or a multi-label classifier. The warning comes only from the full sample.

The answers are what the estimator returns, in a form whose spread is measurable: a
one-hot row of the predicted class, the 0/1 row of predicted labels (multi-label), or the
standardised predicted value. They count as constant when every column's standard
deviation is under :data:`CONSTANT_STD` (the regressor's targets are standardised to 1).
"""

from __future__ import annotations

import numpy as np
import torch
from skorch.callbacks import Callback

from ..callbacks import NonFiniteGuard, _restoring_early_stopping

__all__ = [
    "CONSTANT_STD",
    "CHECK_ROWS",
    "PER_CLASS",
    "ValidationAnswerSpread",
    "FIRST_LOOK",
    "check_samples",
    "early_stopping_advice",
    "rare_class_note",
    "PROBABILITY_SPREAD",
    "RARE_SHARE",
    "class_rows",
    "constant_columns",
    "is_constant",
    "kept_epoch_answers_vary",
    "kept_epoch_constant_columns",
    "spread_indices",
    "spread_rows",
]

#: answers whose every column has a smaller standard deviation are "constant"
CONSTANT_STD = 1e-4
#: training rows read when the validation pass cannot settle it
CHECK_ROWS = 512
#: training rows of each class a classifier is checked on (fewer with many classes)
PER_CLASS = 64
#: training rows of each class read first (a regressor: four times as many, spread)
FIRST_LOOK = 8
#: a classifier whose predicted probabilities spread more than this (std) over the checked rows has learned something
PROBABILITY_SPREAD = 0.01
#: ...and a class under this share of an even one (1 / n_classes) is the rare class it may never predict
RARE_SHARE = 0.5


def is_constant(count: int, total: np.ndarray, squares: np.ndarray) -> bool:
    """Whether answers summed to ``total`` and ``squares`` over ``count`` rows have every column's std under :data:`CONSTANT_STD`.

    Parameters
    ----------
    count : int
    total, squares : ndarray of shape (k,)
        Per-column sums of the answers and of their squares (float64).

    Returns
    -------
    bool
    """
    return bool(np.all(constant_columns(count, total, squares)))


def constant_columns(count: int, total: np.ndarray, squares: np.ndarray) -> np.ndarray:
    """Which columns of answers summed to ``total`` and ``squares`` over ``count`` rows have a std under :data:`CONSTANT_STD`.

    Returns
    -------
    ndarray of bool, shape (k,)
    """
    mean = np.asarray(total, dtype=np.float64) / count
    variance = np.maximum(np.asarray(squares, dtype=np.float64) / count - mean**2, 0.0)
    return np.atleast_1d(np.sqrt(variance) < CONSTANT_STD)


def spread_indices(n: int, k: int) -> np.ndarray:
    """``min(n, k)`` sorted indices spread evenly over ``range(n)``, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(np.int64)) if n else np.zeros(0, np.int64)


def spread_rows(tokens: dict, n_rows: int = CHECK_ROWS) -> dict:
    """Up to ``n_rows`` rows spread evenly over ``tokens`` (data sorted by class has one class first)."""
    rows = spread_indices(len(next(iter(tokens.values()))), n_rows)
    return {key: value[rows] for key, value in tokens.items()}


def class_rows(labels: np.ndarray, per_class: int = PER_CLASS, n_rows: int = CHECK_ROWS) -> np.ndarray:
    """Sorted row indices: up to ``per_class`` rows of every class, spread over that class's rows.

    A classifier is checked on its classes' rows rather than on rows spread over the data:
    with a rare class, spread rows may hold few of it, and a model that does predict it
    would read as collapsed. For two classes this is also a quarter of the 512 rows.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Encoded class ids.
    per_class : int, default=PER_CLASS
        Fewer where ``n_rows`` would be exceeded (at least 1 a class).
    n_rows : int, default=CHECK_ROWS

    Returns
    -------
    ndarray of int
    """
    order = np.argsort(labels, kind="stable")
    _, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    if len(counts) > n_rows:
        return spread_indices(len(labels), n_rows)
    take = max(1, min(per_class, n_rows // len(counts)))
    parts = [order[start : start + count][spread_indices(count, take)] for start, count in zip(starts, counts)]
    return np.sort(np.concatenate(parts))


def check_samples(tokens: dict, labels: np.ndarray | None = None):
    """Yield the training rows the check reads, smallest first: a first look, then the full sample.

    The caller stops asking once a sample's answers vary, so a model that learned pays for
    a forward pass over a few rows (16 for two classes instead of 128: for 128 MiniLM texts
    the check was a third of the fit), and only a constant first look reads the full sample
    before it warns.

    Parameters
    ----------
    tokens : dict of str to ndarray
        The training rows' tokens, each of length n_samples.
    labels : ndarray of shape (n_samples,), optional
        Encoded class ids of a single-label classifier: the rows are taken per class
        (:func:`class_rows`); without them, rows spread over the data (:func:`spread_rows`).

    Yields
    ------
    dict of str to ndarray
        The sampled rows of ``tokens``.
    """
    if labels is None:
        for n_rows in (4 * FIRST_LOOK, CHECK_ROWS):
            yield spread_rows(tokens, n_rows)
        return
    for per_class, n_rows in ((FIRST_LOOK, 8 * FIRST_LOOK), (PER_CLASS, CHECK_ROWS)):
        rows = class_rows(labels, per_class, n_rows)
        yield {key: value[rows] for key, value in tokens.items()}


class ValidationAnswerSpread(Callback):
    """Sum the validation pass's answers per epoch (callback ``"collapse"``, on by default).

    Keeps, for every epoch, the number of validation rows and the per-column sums of the
    estimator's answers and of their squares (``net._collapse_answers(y_pred)``, where the estimator defines it), enough to
    tell afterwards whether the kept epoch answered the same for every row without a second
    forward pass. Costs one small reduction per validation batch.

    Attributes
    ----------
    sums_ : dict of int to [int, Tensor, Tensor]
        Epoch number (skorch's history) -> ``[rows, sum, sum of squares]``, the sums float64
        on the outputs' device.
    """

    def initialize(self):
        """Start empty (skorch hook); returns ``self``."""
        self.sums_ = {}
        return self

    def on_train_begin(self, net, **kwargs):
        """Forget the sums of earlier fits (skorch hook)."""
        self.sums_ = {}

    def on_batch_end(self, net, training=False, y_pred=None, **kwargs):
        """Add a validation batch's answers to its epoch's sums (skorch hook)."""
        answer = getattr(net, "_collapse_answers", None)  # classifiers and regressors define it
        if training or answer is None or not isinstance(y_pred, torch.Tensor):
            return
        answers = answer(y_pred.detach())
        if len(answers) == 0:
            return
        answers = answers.to(torch.float64).reshape(len(answers), -1)
        # Summed where the outputs live: no device-to-host copy per validation batch.
        count, total, squares = self.sums_.get(net.history[-1, "epoch"], (0, 0.0, 0.0))
        self.sums_[net.history[-1, "epoch"]] = [count + len(answers), total + answers.sum(0), squares + answers.square().sum(0)]


def _kept_epoch(net):
    """The epoch whose weights ``net`` ends with: early stopping's best when it restores them, else the last."""
    for _, callback in getattr(net, "callbacks_", ()):
        if isinstance(callback, NonFiniteGuard) and callback.failure_ is not None:
            return None  # restored to an epoch before the failure; do not guess which
    callback = _restoring_early_stopping(net)
    if callback is not None:
        return callback.best_epoch_
    return net.history[-1, "epoch"] if len(net.history) else None


def early_stopping_advice(net) -> str | None:
    """The collapse warning's advice when early stopping kept an epoch before the last one it ran, else None.

    "More epochs" does not help a fit that early stopping ended: on 100 Adult rows the 10-row
    holdout kept epoch 2 of 10 (of 40) and the model answered one class, while the same fit
    without early stopping did not (a small-table review's find).
    """
    callback = _restoring_early_stopping(net)
    if callback is None or not len(net.history) or callback.best_epoch_ >= net.history[-1, "epoch"]:
        return None
    rows = sum(batch.get("valid_batch_size", 0) for batch in net.history[-1, "batches"])
    builtin = dict(net.callbacks_).get("early_stopping") is callback and net._setting("patience") is not None
    patience = f"patience (resolved: {net._setting('patience')})" if builtin else f"EarlyStopping patience ({callback.patience})"
    without = "patience=None to train every epoch on every row" if builtin else "no EarlyStopping to train every epoch"
    judged = f"the out-of-fold predictions of {rows} rows" if getattr(net, "_out_of_fold", bool)() else f"{rows} held-out rows"
    return (
        f"early stopping kept epoch {callback.best_epoch_} of the {net.history[-1, 'epoch']} it ran, judged on "
        f"{judged}: try a larger {patience} or validation_fraction (resolved: {net._setting('validation_fraction')}), "
        f"or {without}; or check that the features carry signal"
    )


def rare_class_note(net, data: dict, labels: np.ndarray) -> str | None:
    """The warning's text for a classifier whose one answer hides probabilities that vary, else None.

    With a rare class the most probable class can be the same for every row while the
    probabilities rank the rows well: 1,000 Adult rows at 3% positives kept the majority
    class on every row at a validation AUC of 0.90 and a probability std of 0.07 (a
    small-table review's find). That model has learned; "not learned beyond a constant
    answer" misled. Reads the check's full sample of training rows once more.
    """
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=len(net.classes_))  # encoded class ids
    if counts.min() / counts.sum() >= RARE_SHARE / len(counts):
        return None  # no rare class: an untrained network's probabilities vary with its inputs too (43% / 57%, 1 epoch)
    *_, tokens = check_samples(data, labels)
    probabilities = net.collect(tokens, lambda inputs: torch.softmax(net.module_(**inputs).float(), -1).cpu().numpy(), trim=True)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    spread = float(probabilities.std(0).max())
    if spread < PROBABILITY_SPREAD or probabilities[0].argmax() == counts.argmin():  # the rare class is the one answer
        return None
    rarest = np.asarray(net.classes_).tolist()[int(counts.argmin())]
    return (
        f"its probabilities vary (std {spread:.3f}), but no other class is ever the most probable "
        f"({rarest!r} is {counts.min() / counts.sum():.1%} of the training rows). To predict it, threshold "
        "predict_proba below 0.5 (sklearn's TunedThresholdClassifierCV) or pass class_weight='balanced'"
    )


def kept_epoch_answers_vary(net) -> bool:
    """True when the validation pass of the kept epoch gave at least two different answers.

    False when it did not, or when there is nothing to read (no validation split, no
    ``"collapse"`` callback, a fit stopped by the non-finite guard): the caller then checks
    training rows itself.

    Parameters
    ----------
    net : a fitted tabformer estimator

    Returns
    -------
    bool
    """
    constant = kept_epoch_constant_columns(net)
    return constant is not None and not constant.all()


def kept_epoch_constant_columns(net) -> np.ndarray | None:
    """Which answer columns (a multi-label classifier's labels) the kept epoch's validation pass answered the same for every row.

    None where there is nothing to read (as :func:`kept_epoch_answers_vary`'s False).

    Parameters
    ----------
    net : a fitted tabformer estimator

    Returns
    -------
    ndarray of bool, shape (k,), or None
    """
    if getattr(net, "_out_of_fold", bool)():  # each row answered by its fold's member: members differ, a mean may not
        return None
    spread = dict(getattr(net, "callbacks_", ())).get("collapse")
    epoch = _kept_epoch(net)
    if not isinstance(spread, ValidationAnswerSpread) or epoch is None or epoch not in spread.sums_:
        return None
    count, total, squares = (torch.as_tensor(value).cpu().numpy() for value in spread.sums_[epoch])
    return constant_columns(int(count), total, squares) if count >= 2 else None
