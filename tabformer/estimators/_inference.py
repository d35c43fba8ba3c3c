"""The one inference loop of every tabformer estimator, and what reads encoder features.

``iter_batches`` runs a function over ``X`` batch by batch in eval mode without
gradients; probabilities, regression outputs, tags, embeddings, attention maps and the
pretrainer's score are all computed through it. ``collect`` gathers per-row outputs into
arrays allocated once, so predicting on a million Parquet rows keeps a flat peak memory.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from torch.utils.data import DataLoader, Dataset

from .. import inspection
from .._data import TensorDictDataset, trim_padding
from .._stream import RowSource, arrow_frame, fitted_dates
from ..nn.heads import mean_pool
from ..tokenizers._columns import ColumnWarnings
from ._input_kind import check_tokens
from ._util import encoder_settings, num_samples
from ._weights import without_weights

__all__ = ["InferenceMixin", "POOLINGS"]

POOLINGS = ("cls", "mean", "cls+mean")


def tokens_per_row(estimator, data) -> int | None:
    """The fitted tokenizer's sequence length (CLS aside): its ``n_tokens_``, else the widest
    2-D token array of ``data``; None when neither says (a stream of text)."""
    n_tokens = getattr(estimator.tokenizer_, "n_tokens_", None)
    if n_tokens:
        return int(n_tokens)
    arrays = [value for value in data.values() if getattr(value, "ndim", 0) == 2] if isinstance(data, dict) else []
    return max((a.shape[1] for a in arrays), default=None)


#: Activation floats (rows x tokens x d_model) per batch of predict, transform and the
#: validation pass, and the most rows. Without gradients nothing is kept for backward, so
#: short rows can go in larger batches than training's, but a batch whose activations
#: outgrow the CPU caches gets slower per row. Measured, 1 thread: a 15-column table
#: (d_model 32) predicted 3x faster at 512 rows a batch than at 32; MiniLM (d_model 384,
#: texts sorted by length) was fastest at 32 (1.9 s for 256 texts, 2.2 s at 64, 2.9 s at 163,
#: 4.8 s at 256). 2**19 floats (2 MiB) gives 512 rows for a 15-column table at d_model 64
#: and the training batch for MiniLM. Capped so an image stem's activations stay small.
INFERENCE_FLOATS_PER_BATCH = 2**19
INFERENCE_MAX_ROWS = 512


def inference_batch_size(estimator, data) -> int:
    """Rows per inference batch (``resolved_params_["iterator_valid__batch_size"]``): the training
    ``batch_size``, raised while a batch's activations (rows x tokens x ``d_model``) stay within
    ``INFERENCE_FLOATS_PER_BATCH``, at most ``INFERENCE_MAX_ROWS`` rows (never below the training batch).

    Parameters
    ----------
    estimator : TabFormerNet, with a fitted ``tokenizer_`` and ``resolved_params_``
    data : dict of ndarray (the training tokens) or a dataset

    Returns
    -------
    int
        ``-1`` (every row in one batch) when ``batch_size=-1``.
    """
    batch_size = estimator._setting("batch_size")
    n_tokens = tokens_per_row(estimator, data)
    if batch_size == -1 or n_tokens is None:
        return batch_size
    rows = INFERENCE_FLOATS_PER_BATCH // ((n_tokens + 1) * int(encoder_settings(estimator)["d_model"]))
    return max(int(batch_size), min(INFERENCE_MAX_ROWS, rows))


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
            for ``forward`` functions whose output has no per-token axis and is an
            ndarray with one row per input row. Text is then also batched by length:
            each chunk's rows are sorted by their token count, so a batch pads to
            texts of about its own length, and the chunk's outputs are put back in
            row order before they are yielded (one array per chunk).

        Yields
        ------
        what ``forward`` returns, batch by batch (per chunk when text is sorted), in row
        order, computed without gradients under the estimator's ``precision`` (``forward``
        converts to float32 itself).

        Raises
        ------
        FloatingPointError
            If a float array (or float) ``forward`` returns holds NaN or infinity: a
            prediction is never returned silently non-finite.
        """
        check_is_fitted(self, "module_")
        self.module_.eval()
        start = 0
        gathered = ColumnWarnings()  # warned once after the last chunk, with the input's totals
        for chunk in _row_chunks(X, self.inference_chunk_rows, fitted_dates(self)):
            with gathered.gathering(first_row=start), _rows_of_the_input(start):
                tokens = check_tokens(chunk, type(self).__name__) if isinstance(chunk, (dict, Dataset)) else self.tokenize(chunk)
            order = _length_order(tokens) if trim else None
            if order is not None:
                # Sorted by length, a batch of long texts no longer pads its short ones: with the
                # larger inference batches, unsorted MiniLM batches spent most of their time on padding.
                sorted_tokens = {key: value[order] for key, value in tokens.items()}
                results = [result for result, _ in self._forward_batches(sorted_tokens, forward, trim)]
                result = np.empty_like(results[0], shape=(len(order), *results[0].shape[1:]))
                result[order] = np.concatenate(results)
                _check_finite(result, self, start)
                start += len(result)
                yield result
                continue
            for result, rows in self._forward_batches(tokens, forward, trim):
                _check_finite(result, self, start)
                start += rows
                yield result
        gathered.warn()

    def _forward_batches(self, tokens, forward, trim: bool):
        """``(forward(batch), rows in the batch)`` for each batch of one chunk's ``tokens`` (a dict of
        arrays or a Dataset), in order."""
        dataset = tokens if isinstance(tokens, Dataset) else TensorDictDataset(tokens)
        loader = self.get_iterator(dataset, training=False)
        if isinstance(loader, DataLoader):
            # Iterating a DataLoader draws a seed from torch's global RNG: a predict moved it, under a
            # seeded fit running in another thread of the process (a threaded search) too.
            loader.generator = torch.Generator()
        with torch.no_grad():
            for inputs, _ in loader:
                # Entered per batch: the caller's code between batches runs outside autocast.
                inputs = without_weights(inputs)
                if trim:
                    inputs = trim_padding(inputs)
                with self.autocast():
                    result = forward({key: value.to(self.device) for key, value in inputs.items()})
                yield result, len(next(iter(inputs.values())))

    def collect(self, X, forward, trim: bool = False):
        """``forward`` over every batch of ``X`` (as :meth:`iter_batches`), its per-row
        outputs written into arrays allocated once for all rows.

        Each batch's output is copied out and dropped at once: holding thousands of small
        per-batch arrays until a final ``np.concatenate`` fragmented the native heap, and
        predicting on 1M Parquet rows peaked at 2.2x the RSS of 100k rows (docs/scale.md).

        Parameters
        ----------
        X : as :meth:`iter_batches`
        forward : callable
            ``forward(inputs)`` returns an ndarray of shape (batch, ...), or a tuple or list
            whose items are such arrays, None, or (nested) tuples and lists of them.
        trim : bool, default=False
            As :meth:`iter_batches`: cut each text batch's padding to its longest row
            (only for outputs that do not depend on the sequence length).

        Returns
        -------
        the same structure as one ``forward`` result, each array of shape (n_samples, ...)

        Examples
        --------
        >>> proba = clf.collect(X, lambda inputs: clf.module_(**inputs).softmax(-1).cpu().numpy())  # doctest: +SKIP
        """
        n_rows = _count_rows(X)
        out, filled, parts = None, 0, []
        for result in self.iter_batches(X, forward, trim=trim):
            size = len(_first_leaf(result))
            if n_rows is None or filled + size > n_rows:
                parts.append(result)  # rows unknown up front: concatenated at the end
            else:
                out = _allocate(result, n_rows) if out is None else out
                _write(out, result, filled)
            filled += size
        if parts or out is None:
            if out is not None:
                parts.insert(0, _trim(out, filled - sum(len(_first_leaf(p)) for p in parts)))
            return _concatenate(parts)
        return _trim(out, filled)

    def _resolve_inference_batch_size(self, data) -> None:
        """Record at ``fit`` the rows per inference batch (:func:`inference_batch_size`) in
        ``resolved_params_["iterator_valid__batch_size"]``; a user's ``iterator_valid__batch_size`` wins.

        Parameters
        ----------
        data : dict of ndarray (the training tokens) or a dataset
        """
        self.resolved_params_["iterator_valid__batch_size"] = inference_batch_size(self, data)

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
        ndarray of shape (n_samples, d_model), or (n_samples, 2 * d_model) for ``"cls+mean"``;
        an ensemble's (``ensemble_size`` > 1) members side by side, ``ensemble_size`` times as wide,
        and its attention maps the members' mean
        """
        check_is_fitted(self, "tokenizer_")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        model = getattr(self.module_, "members", [self.module_])[0]  # an ensemble's members share one architecture
        if pooling != "cls" and not hasattr(model, "encode"):
            raise ValueError(f"pooling={pooling!r} needs a single token sequence; {type(model).__name__} has none")

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

        embeddings, maps = self.collect(X, features)
        return (embeddings, list(maps)) if return_attention else embeddings

    def explain(self, X, layer="all", level="token", y=None, query="auto"):
        """The attention the head reads over the input tokens, averaged over heads, as a tidy DataFrame.

        Parameters
        ----------
        X, layer, level, y, query : as :func:`tabformer.inspection.explain`, which this calls
        """
        return inspection.explain(self, X, layer=layer, level=level, y=y, query=query)

    def modality_ablation(self, X, y):
        """The score lost when each modality of a mixed input is masked, one row per modality.

        Parameters
        ----------
        X, y : as :func:`tabformer.inspection.modality_ablation`, which this calls
        """
        return inspection.modality_ablation(self, X, y)


def _length_order(tokens):
    """Rows sorted by their text token count (stable), or None: no text, one row, or equal lengths."""
    if not isinstance(tokens, dict):
        return None
    masks = [value for key, value in tokens.items() if key.endswith("attention_mask") and getattr(value, "ndim", 0) == 2]
    if not masks or len(masks[0]) < 2:
        return None
    lengths = sum(np.count_nonzero(np.asarray(mask), axis=1) for mask in masks)
    if lengths.min() == lengths.max():
        return None
    return np.argsort(lengths, kind="stable")


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


def _count_rows(X):
    """Rows ``iter_batches`` will yield for ``X``, or None where that is unknown up front."""
    try:
        if _is_arrow_dataset(X):
            return int(X.count_rows())  # Parquet footers: no data is read
        if isinstance(X, dict):
            return len(next(iter(X.values())))
        return len(X) if isinstance(X, Dataset) else num_samples(X)
    except (TypeError, ValueError, StopIteration):
        return None  # iter_batches itself then reports what is wrong with X


def _first_leaf(result):
    if isinstance(result, (tuple, list)):
        return next(leaf for leaf in map(_first_leaf, result) if leaf is not None)
    return result


def _allocate(result, n_rows: int):
    if isinstance(result, (tuple, list)):
        return type(result)(_allocate(part, n_rows) for part in result)
    return None if result is None else np.empty((n_rows,) + result.shape[1:], dtype=result.dtype)


def _write(out, result, first: int) -> None:
    if isinstance(result, (tuple, list)):
        for target, part in zip(out, result):
            _write(target, part, first)
    elif result is not None:
        out[first : first + len(result)] = result


def _trim(out, rows: int):
    if isinstance(out, (tuple, list)):
        return type(out)(_trim(part, rows) for part in out)
    return out if out is None or len(out) == rows else out[:rows]


def _concatenate(parts: list):
    if isinstance(parts[0], (tuple, list)):
        return type(parts[0])(_concatenate(list(group)) for group in zip(*parts))
    return None if parts[0] is None else np.concatenate(parts)


@contextlib.contextmanager
def _rows_of_the_input(first_row: int):
    """A tokenizer's error about "row i" (or "image i") of a chunk names the row of the whole input.

    Predicting on a large frame or a Parquet file tokenizes it a chunk at a time: an infinite value
    at row 8,500 was reported at "row 308", and one at row 387 of a file of 50-row groups at "row 37".
    """
    try:
        yield
    except (ValueError, TypeError) as error:
        if not first_row or type(error) not in (ValueError, TypeError):
            raise
        shifted = re.sub(r"\b(row|image) (\d+)\b", lambda m: f"{m.group(1)} {int(m.group(2)) + first_row}", str(error))
        raise type(error)(shifted) from error


def _row_chunks(X, rows: int, dates=()):
    """``X`` in consecutive slices of ``rows`` rows (tokens and datasets whole); a pyarrow
    dataset (Parquet files, ``pyarrow.dataset.dataset(path)``) one row group at a time, so it
    is never read whole, its ``dates`` columns as ``datetime64`` (as fit read them). (The
    dataset's own ``to_batches`` reads ahead of a slow consumer: predicting on 1M rows held
    2-3 more 100k-row groups than on 100k rows.)"""
    if isinstance(X, (dict, Dataset)):
        yield X
        return
    if _is_arrow_dataset(X):
        for piece in RowSource.from_arrow(X).pieces:
            for batch in piece.part.to_table(schema=X.schema, columns=X.schema.names).to_batches(max_chunksize=rows):
                if batch.num_rows:
                    yield arrow_frame(batch, dates)
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
