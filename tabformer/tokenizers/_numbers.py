"""Numbers before they become tokens: the scaler fitted on a table's numeric block."""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import QuantileTransformer, StandardScaler

__all__ = ["fit_scaler"]


def fit_scaler(numbers: np.ndarray, transform):
    """The scaler ``numeric_transform`` names, fitted on ``numbers`` (NaN ignored), or None.

    Parameters
    ----------
    numbers : ndarray of shape (n_samples, n_numeric)
    transform : {"quantile", "standard", None}

    Returns
    -------
    QuantileTransformer, StandardScaler or None
        Arrays in and out, whatever ``set_config(transform_output=...)`` says.
    """
    if not numbers.shape[1] or transform is None:
        return None
    if transform == "quantile":
        n_quantiles = int(max(2, min(1000, numbers.shape[0])))
        scaler = QuantileTransformer(n_quantiles=n_quantiles, output_distribution="normal", subsample=10**9)
    else:
        scaler = StandardScaler()
    return scaler.set_output(transform="default").fit(numbers)
