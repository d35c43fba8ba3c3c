"""Which classes a classifier knows: those of ``y``, or those the user declared (``classes=`` at
construction, or on the first ``partial_fit`` as scikit-learn's incremental learners take it).

Declared classes let a first batch lack some classes (or hold only one) and later batches bring
them; each was accepted and ignored before (a review's find).
"""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import LabelEncoder

__all__ = ["fit_label_encoder", "check_weighted_classes", "check_same_classes"]


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
        raise ValueError(f"y has only 1 class ({encoder.classes_[0]!r}); a classifier needs at least 2 classes")
    return encoder


def check_same_classes(declared, classes_) -> None:
    """A later ``partial_fit(classes=...)`` must list the fitted classes."""
    if declared is not None and set(np.asarray(declared).tolist()) != set(np.asarray(classes_).tolist()):
        raise ValueError(
            f"classes={np.asarray(declared).tolist()} differs from the classes the model was fitted with, "
            f"{np.asarray(classes_).tolist()}; "
            "a continued fit keeps its classes (fit again with warm_start=False for others)"
        )


def check_weighted_classes(y_encoded: np.ndarray, sample_weight, classes_) -> None:
    """Refuse weights that leave fewer than 2 classes any weight: the model could learn one class only."""
    if sample_weight is None:
        return
    weighted = np.unique(y_encoded[np.asarray(sample_weight) > 0])
    if len(weighted) < 2:
        kept = f"only class {np.asarray(classes_)[weighted].tolist()[0]!r}" if len(weighted) else "no class"
        raise ValueError(
            f"sample_weight leaves {kept} with any weight (every row of the others weighs 0); a classifier needs "
            "at least 2 classes with weight"
        )
