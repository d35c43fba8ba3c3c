"""The one inference loop of every tabformer estimator, and what reads encoder features.

``iter_batches`` runs a function over ``X`` batch by batch in eval mode without
gradients; probabilities, regression outputs, tags, embeddings, attention maps and the
pretrainer's score are all computed through it.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from torch.utils.data import Dataset

from .. import inspection
from .._data import TensorDictDataset, trim_padding
from ..nn.heads import mean_pool
from ._util import num_samples
from ._weights import without_weights

__all__ = ["InferenceMixin", "POOLINGS"]

POOLINGS = ("cls", "mean", "cls+mean")


class InferenceMixin:
    """Inference for a fitted skorch net with ``module_``, ``tokenize``, ``get_iterator`` and ``autocast``."""

    #: raw input is tokenized this many rows at a time, so predicting on a million rows
    #: holds one chunk's tokens in memory, not all of them (outputs are per row anyway)
    inference_chunk_rows = 8192

    def iter_batches(self, X, forward, trim: bool = False):
        """The one inference loop: ``forward(inputs)`` on each batch of ``X``, in eval mode.

        Parameters
        ----------
        X : dict of arrays (tokens), a torch Dataset, raw input for ``tokenize``, or a
            ``pyarrow.dataset.Dataset`` (Parquet files) of raw rows. Raw input is tokenized
            ``inference_chunk_rows`` rows at a time (bounded memory); a pyarrow dataset is
            read one record batch at a time.
        forward : callable
            ``forward(inputs)`` with ``inputs`` a dict of tensors on ``device``, each of
            shape (batch, ...); its return value is yielded as is.
        trim : bool, default=False
            Cut text arrays to the longest text of each batch (``_data.trim_padding``),
            for ``forward`` functions whose output has no per-token axis.

        Yields
        ------
        what ``forward`` returns, batch by batch, in row order, computed without gradients
        under the estimator's ``precision`` (``forward`` converts to float32 itself).

        Raises
        ------
        FloatingPointError
            If a float array (or float) ``forward`` returns holds NaN or infinity: a
            prediction is never returned silently non-finite.
        """
        check_is_fitted(self, "module_")
        self.module_.eval()
        start = 0
        for chunk in _row_chunks(X, self.inference_chunk_rows):
            tokens = chunk if isinstance(chunk, (dict, Dataset)) else self.tokenize(chunk)
            dataset = tokens if isinstance(tokens, Dataset) else TensorDictDataset(tokens)
            with torch.no_grad():
                for inputs, _ in self.get_iterator(dataset, training=False):
                    # Entered per batch: the caller's code between batches runs outside autocast.
                    inputs = without_weights(inputs)
                    if trim:
                        inputs = trim_padding(inputs)
                    with self.autocast():
                        result = forward({key: value.to(self.device) for key, value in inputs.items()})
                    _check_finite(result, self, start)
                    start += len(next(iter(inputs.values())))
                    yield result

    def forward_features(self, X, return_attention: bool = False, pooling: str = "cls"):
        """Encoder output for ``X``: one embedding per row.

        Parameters
        ----------
        X : input accepted by ``predict``, or its tokens (dict of arrays)
        return_attention : bool, default=False
            Also return a list (one per layer) of arrays of shape
            (n_samples, n_heads, 1+T, 1+T).
        pooling : {"cls", "mean", "cls+mean"}, default="cls"
            The CLS output, the mean of the CLS and real-token outputs, or both side by side.

        Returns
        -------
        ndarray of shape (n_samples, d_model), or (n_samples, 2 * d_model) for ``"cls+mean"``
        """
        check_is_fitted(self, "tokenizer_")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if pooling != "cls" and not hasattr(self.module_, "encode"):
            raise ValueError(f"pooling={pooling!r} needs a single token sequence; {type(self.module_).__name__} has none")

        def features(inputs):
            if pooling == "cls":
                out, mask = self.module_.forward_features(return_attention=return_attention, **inputs), None
            else:
                out, mask = self.module_.encode(return_attention, **inputs)
            hidden, attention = out if return_attention else (out, None)
            parts = [hidden[:, 0]] if pooling != "mean" else []
            if pooling != "cls":
                parts.append(mean_pool(hidden, mask))
            maps = [a.float().cpu().numpy() for a in attention] if return_attention else None
            return torch.cat(parts, dim=1).float().cpu().numpy(), maps

        outputs = list(self.iter_batches(X, features))
        embeddings = np.concatenate([embedding for embedding, _ in outputs])
        if not return_attention:
            return embeddings
        return embeddings, [np.concatenate([maps[layer] for _, maps in outputs]) for layer in range(len(outputs[0][1]))]

    def explain(self, X, layer="all", level="token", y=None):
        """CLS attention over the input tokens, averaged over heads, as a tidy DataFrame.

        Parameters
        ----------
        X, layer, level, y : as :func:`tabformer.inspection.explain`, which this calls
        """
        return inspection.explain(self, X, layer=layer, level=level, y=y)

    def modality_ablation(self, X, y):
        """The score lost when each modality of a mixed input is masked, one row per modality.

        Parameters
        ----------
        X, y : as :func:`tabformer.inspection.modality_ablation`, which this calls
        """
        return inspection.modality_ablation(self, X, y)


def _check_finite(result, estimator, start: int) -> None:
    """Raise if ``result`` (arrays, floats, or tuples and lists of them) holds NaN or inf."""
    if isinstance(result, (tuple, list)):
        for part in result:
            _check_finite(part, estimator, start)
        return
    values = np.asarray(result) if isinstance(result, (np.ndarray, float)) else None
    if values is None or values.dtype.kind != "f" or np.isfinite(values).all():
        return
    bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1) if values.ndim else np.array([True])
    rows = (np.flatnonzero(bad)[:5] + start).tolist() if values.ndim else "this batch"
    raise FloatingPointError(
        f"{type(estimator).__name__} computed non-finite outputs (NaN or inf) for rows {rows}; the model's weights "
        "or these inputs hold extreme values. Check the inputs, or refit with a lower lr."
    )


def _row_chunks(X, rows: int):
    """``X`` in consecutive slices of ``rows`` rows (tokens and datasets whole); a pyarrow
    dataset (Parquet files, ``pyarrow.dataset.dataset(path)``) record batch by record batch,
    so it is never read whole."""
    if isinstance(X, (dict, Dataset)):
        yield X
        return
    if _is_arrow_dataset(X):
        for batch in X.to_batches(batch_size=rows):
            if batch.num_rows:
                yield batch.to_pandas()
        return
    n_rows = num_samples(X)
    if n_rows <= rows or not (hasattr(X, "iloc") or hasattr(X, "shape") or isinstance(X, (list, tuple))):
        yield X
        return
    take = X.iloc if hasattr(X, "iloc") else X
    for first in range(0, n_rows, rows):
        yield take[first : first + rows]


def _is_arrow_dataset(X) -> bool:
    # Checked by name: pyarrow is an optional dependency and need not be imported.
    return type(X).__module__.startswith("pyarrow") and hasattr(X, "to_batches") and hasattr(X, "count_rows")
