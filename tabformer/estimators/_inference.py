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
from .._data import TensorDictDataset
from ..nn.heads import mean_pool
from ._weights import without_weights

__all__ = ["InferenceMixin", "POOLINGS"]

POOLINGS = ("cls", "mean", "cls+mean")


class InferenceMixin:
    """Inference for a fitted skorch net with ``module_``, ``tokenize`` and ``get_iterator``."""

    def iter_batches(self, X, forward):
        """The one inference loop: ``forward(inputs)`` on each batch of ``X``, in eval mode.

        Parameters
        ----------
        X : dict of arrays (tokens), a torch Dataset, or raw input for ``tokenize``
        forward : callable
            ``forward(inputs)`` with ``inputs`` a dict of tensors on ``device``, each of
            shape (batch, ...); its return value is yielded as is.

        Yields
        ------
        what ``forward`` returns, batch by batch, in row order, computed without gradients.
        """
        check_is_fitted(self, "module_")
        tokens = X if isinstance(X, (dict, Dataset)) else self.tokenize(X)
        dataset = tokens if isinstance(tokens, Dataset) else TensorDictDataset(tokens)
        self.module_.eval()
        with torch.no_grad():
            for inputs, _ in self.get_iterator(dataset, training=False):
                yield forward({key: value.to(self.device) for key, value in without_weights(inputs).items()})

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

    def explain(self, X, layer="all", level="token"):
        """CLS attention over the input tokens, averaged over heads, as a tidy DataFrame.

        Parameters
        ----------
        X, layer, level : as :func:`tabformer.inspection.explain`, which this calls
        """
        return inspection.explain(self, X, layer=layer, level=level)
