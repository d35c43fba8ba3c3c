"""Which classes a classifier knows: those of ``y``, or those the user declared (``classes=`` at
construction, or on the first ``partial_fit`` as scikit-learn's incremental learners take it).

Declared classes let a first batch lack some classes (or hold only one) and later batches bring
them; each was accepted and ignored before (a review's find).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder

from .._warnings import user_stacklevel

__all__ = [
    "fit_label_encoder",
    "check_indicator_values",
    "check_weighted_classes",
    "check_same_classes",
    "fitted_label_vector",
    "label_vector",
    "refuse_label_lists",
]


def fit_label_encoder(y: np.ndarray, declared) -> LabelEncoder:
    """A LabelEncoder for the declared classes (``y`` must lie within them), or for ``y``'s.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    declared : array-like or None
        ``classes=`` of the constructor or of the first ``partial_fit``.

    Returns
    -------
    LabelEncoder
    """
    if declared is None:
        kinds = sorted({type(label).__name__ for label in np.asarray(y, dtype=object).ravel().tolist()})
        if "str" in kinds and len(kinds) > 1:  # LabelEncoder's sort would fail with "'<' not supported"
            raise ValueError(f"y mixes label types {kinds}; make them one type (e.g. y.astype(str))")
        encoder = LabelEncoder().fit(y)
    else:
        encoder = LabelEncoder().fit(np.asarray(declared))
        labels = np.unique(y)
        unknown = ~np.isin(labels, encoder.classes_)
        if unknown.any():
            raise ValueError(
                f"y holds label(s) {labels[unknown].tolist()} that classes={encoder.classes_.tolist()} does not list"
            )
    if len(encoder.classes_) < 2:
        raise ValueError(f"y has only 1 class ({encoder.classes_.tolist()[0]!r}); a classifier needs at least 2 classes")
    return encoder


def check_same_classes(declared, classes_) -> None:
    """A later ``partial_fit(classes=...)`` must list the fitted classes."""
    if declared is not None and set(np.asarray(declared).tolist()) != set(np.asarray(classes_).tolist()):
        raise ValueError(
            f"classes={np.asarray(declared).tolist()} differs from the classes the model was fitted with, "
            f"{np.asarray(classes_).tolist()}; "
            "a continued fit keeps its classes (fit again with warm_start=False for others)"
        )


def check_weighted_classes(y_encoded: np.ndarray, sample_weight, classes_, source: str = "sample_weight") -> None:
    """Refuse a ``class_weight`` that leaves fewer than 2 classes any weight (the model could learn one class only),
    and warn of a ``sample_weight`` that does. ``source``: the parameter(s) the weights come from, for the message.

    ``sample_weight`` alone only warns, as scikit-learn's classifiers fit such weights: a meta-estimator may pass
    them (``BaggingClassifier``'s bootstrap counts leave out every row of a rare class in some draws, and one
    refusal failed the whole ensemble).
    """
    if sample_weight is None:
        return
    weighted = np.unique(y_encoded[np.asarray(sample_weight) > 0])
    if len(weighted) < 2:
        kept = f"only class {np.asarray(classes_)[weighted].tolist()[0]!r}" if len(weighted) else "no class"
        message = f"{source} leaves {kept} with any weight (every row of the others weighs 0)"
        if source == "sample_weight" and len(weighted):
            warnings.warn(f"{message}: the model can learn that class only", UserWarning, stacklevel=user_stacklevel())
            return
        raise ValueError(f"{message}; a classifier needs at least 2 classes with weight")


def check_indicator_values(y: np.ndarray) -> None:
    """Refuse a two-valued 2-D ``y`` other than 0/1 (-1/1, 1/2) that sklearn's ``type_of_target`` calls multi-label.

    sklearn's multi-label estimators read such a ``y`` as 0/1 and predict 0/1 (``OneVsRestClassifier``,
    ``MLPClassifier``), which then scores against the user's -1/1 as wrong; its forests read it as a
    class per column. Here fit refused it as "y must be a 0/1 indicator matrix with 3 label columns,
    as in fit; got shape (200, 3)": of the right shape, during fit.
    """
    values = np.unique(y)
    if not np.isin(values, (0, 1)).all():
        raise ValueError(
            f"y of shape {y.shape} holds the values {values.tolist()}: a multi-label y is a 0/1 indicator matrix (1 where the "
            f"row has the label); map yours to 0/1, e.g. (y == {values.tolist()[-1]!r}).astype(int)"
        )


def refuse_label_lists(y) -> None:
    """Refuse a ``y`` of each row's labels as lists or sets (ragged, or sets), pointing to ``MultiLabelBinarizer``.

    numpy failed on it with "setting an array element with a sequence ... inhomogeneous shape", or
    the label encoder with "Encoders require their input argument must be uniformly strings or numbers".
    """
    if isinstance(y, np.ndarray) and y.dtype != object:
        return
    rows = y.tolist() if hasattr(y, "tolist") and not isinstance(y, list) else y
    if not isinstance(rows, (list, tuple)):
        return
    sequences = [row for row in rows if isinstance(row, (list, tuple, set, frozenset))]
    sets = any(isinstance(row, (set, frozenset)) for row in sequences)
    if sequences and (sets or len({len(row) for row in sequences}) > 1 or len(sequences) < len(rows)):
        raise ValueError(
            "y holds each row's labels as lists or sets; a multi-label y is a 0/1 indicator matrix: make one with "
            "sklearn.preprocessing.MultiLabelBinarizer().fit_transform(y) (its classes_ name the columns)"
        )


def label_vector(y) -> np.ndarray:
    """``y`` as 1-D class labels; a column vector is raveled, a wider 2-D ``y`` refused (a single-label model).

    Raveled, a (n, 2) ``y`` gave 2n labels and skorch's "X has n samples but y has 2n".
    """
    y = np.asarray(y)
    if y.ndim > 1 and y.shape[1:] != (1,):
        raise ValueError(f"y must be 1-D class labels, as in fit (a single-label model); got shape {y.shape}")
    return y.ravel()


def fitted_label_vector(y: np.ndarray, dtypes=None) -> np.ndarray:
    """``fit``'s ``y`` (not multi-label) as 1-D labels: a column vector raveled with sklearn's warning, else refused.

    Parameters
    ----------
    y : ndarray
    dtypes : list of str, optional
        The dtypes of a DataFrame ``y``'s columns, for the message.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    if y.ndim == 1:
        return y
    if y.ndim == 2 and y.shape[1] == 1:
        message = "A column-vector y was passed when a 1d array was expected; it was raveled."
        warnings.warn(message, DataConversionWarning, stacklevel=user_stacklevel())
        return y.ravel()
    if y.ndim == 2:
        other = next((value for value in y.ravel().tolist() if value not in (0, 1)), None)
        if other is None:  # 0 and 1 only, of a dtype sklearn's type_of_target does not read as numbers
            dtype = ", ".join(dtypes) if dtypes else str(y.dtype)
            raise ValueError(
                f"y of shape {y.shape} holds only 0 and 1, but of dtype {dtype}, which is not read as a 0/1 indicator "
                "matrix (multi-label) of numbers; pass y.astype(int)"
            )
        raise ValueError(
            f"y of shape {y.shape} is neither 1-D class labels nor a 0/1 indicator matrix (multi-label): it holds {other!r}. "
            "A class per column (multi-output multiclass) is not supported: fit one classifier per column (sklearn's "
            "MultiOutputClassifier); each row's label names become an indicator matrix with sklearn's MultiLabelBinarizer"
        )
    raise ValueError(f"y must be 1-D class labels for a classifier, got shape {y.shape}")
