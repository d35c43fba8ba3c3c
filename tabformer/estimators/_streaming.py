"""Fitting on data larger than memory: Parquet files and image folders, read in pieces.

``StreamingMixin.fit`` recognises streamed input (:func:`tabformer._stream.open_source`),
fits the tokenizer on a sample of ``fit_sample_size`` rows, and trains on a
:class:`~tabformer._stream.StreamedRows` that DataLoader workers read, shuffle and
tokenize batch by batch. Every other input goes to the in-memory ``fit`` unchanged.
"""

from __future__ import annotations

import numpy as np
import torch
from skorch import NeuralNet
from torch.utils.data import DataLoader

from .._data import collate_batched
from .._stream import (
    RowSource,
    StreamedRows,
    _is_arrow_dataset,
    concat,
    fitted_dates,
    is_image_paths,
    open_source,
    parquet_dataset,
)
from .._targets import check_target
from ..tokenizers.tabular import MISSING_ID
from ._categories import missing_token_widths, note_trained_missing
from ._classes import check_indicator_values, check_same_classes
from ._params import check_fit_params, check_params
from ._weights import SAMPLE_WEIGHT, as_float32_weights, check_sample_weight, check_split_weights

__all__ = ["MissingNote", "StreamingMixin", "STREAMING_PARAM_DOC", "SAMPLE_SIZES"]

#: rows the tokenizer is fitted on under ``fit_sample_size="auto"``: LightGBM bins its
#: features on 200,000 rows (``bin_construct_sample_cnt``); images cost far more each
SAMPLE_SIZES = {"table": 200_000, "images": 1_000}

STREAMING_PARAM_DOC = """    fit_sample_size : int or "auto", default="auto"
        Streamed input only (a ``pyarrow.dataset.Dataset``, a path to a Parquet file or
        folder, an image folder, or a list of image paths longer than this): the rows the
        tokenizer is fitted on, drawn at random (seeded by ``random_state``) and read in
        one pass over the pieces. ``"auto"``: 200,000 table rows, 1,000 images. Training
        then reads, shuffles and tokenizes the data batch by batch inside DataLoader
        workers (``iterator_train__num_workers``); see docs/scale.md.
"""


class MissingNote:
    """Which table columns' missing tokens a training stream trained, gathered across DataLoader workers.

    A streamed fit's tokenizer saw only a sample: the training rows train the missing tokens
    of more columns, and predict need not warn that they never trained. Each DataLoader worker
    process tokenizes its own rows, and a note it kept on its copy of the tokenizer was lost
    with it. The flags (one per token column) are moved to shared memory when workers read the
    stream (:meth:`share`): every worker sets them, and the fitting process reads them into its
    tokenizer (:meth:`apply`). Without workers they stay in ordinary memory, where there is no
    ``/dev/shm`` (AWS Lambda, some sandboxes) a streamed fit with ``num_workers=0`` failed.

    Parameters
    ----------
    tokenizer : fitted tokenizer
    """

    def __init__(self, tokenizer):
        widths = missing_token_widths(tokenizer)
        self.flags = {key: torch.zeros(width, dtype=torch.bool) for key, width in widths.items()}

    def share(self) -> None:
        """Move the flags to shared memory (in place, flags kept), for DataLoader workers to set."""
        for flags in self.flags.values():
            flags.share_memory_()

    def __call__(self, tokens: dict) -> None:
        """Flag the columns whose missing token ``tokens`` (a buffer's) holds."""
        for key, flags in self.flags.items():
            if key not in tokens:
                continue
            values = np.asarray(tokens[key])
            seen = np.flatnonzero(((values == MISSING_ID) if key.endswith("cat_ids") else values.astype(bool)).any(axis=0))
            if len(seen):  # True alone is written: workers flagging at once lose no flag
                flags[torch.as_tensor(seen)] = True

    def apply(self, tokenizer) -> None:
        """Mark the flagged columns in ``tokenizer`` (:func:`note_trained_missing`)."""
        tokens = {
            key: (np.where(flags.numpy(), MISSING_ID, MISSING_ID + 1) if key.endswith("cat_ids") else flags.numpy())[None]
            for key, flags in self.flags.items()
        }
        note_trained_missing(tokenizer, tokens)


class StreamingMixin:
    """``fit`` and ``partial_fit`` on input read piece by piece (docs/scale.md, "Larger than memory")."""

    #: rows gathered, shuffled and tokenized at once while streaming
    stream_buffer_rows = 8192

    def _open_stream(self, X, y):
        """``(source, y)`` if ``X`` is streamed, else ``(None, y)``; a list of paths streams past the sample size."""
        if is_image_paths(X) and len(X) <= self._sample_size("images"):
            return None, y
        source, y = open_source(X, y, self.stream_buffer_rows)
        if source is not None and isinstance(y, str):
            return source.without(y), source.column(y)
        if source is not None and y is not None and len(y) != source.n_rows:
            raise ValueError(f"X has {source.n_rows} rows (counted from its Parquet footers or paths) but y has {len(y)}")
        if source is not None and y is None and source.kind == "table":
            raise ValueError("y is None; for Parquet input pass the target column's name (y='label') or an array of targets")
        return source, y

    def score(self, X, y, sample_weight=None):
        """scikit-learn's ``score`` (accuracy, or R2 for a regressor); for Parquet input ``y`` may name the
        target column, as in ``fit`` (it failed inside the metric).

        Parameters
        ----------
        X : as ``predict``
        y : array-like of shape (n_samples,), or the name of a Parquet source's target column
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        if isinstance(y, str):
            source, values = self._open_stream(X, y)
            y = values if source is not None else y
        if getattr(self, "multilabel_", False):  # a -1/1 y was scored as it came, against 0/1 predictions
            check_indicator_values(y.toarray() if hasattr(y, "toarray") else np.asarray(y))
        return super().score(X, y, sample_weight=sample_weight)

    def _sample_size(self, kind: str) -> int:
        return SAMPLE_SIZES[kind] if self.fit_sample_size == "auto" else int(self.fit_sample_size)

    def fit(self, X, y=None, sample_weight=None, **fit_params):
        """Fit on ``X`` in memory, or stream it when it is larger than memory.

        Parameters
        ----------
        X : as the in-memory ``fit``; or a ``pyarrow.dataset.Dataset``, a path to a Parquet
            file or folder, an image folder, or a list of more than ``fit_sample_size``
            image paths: read in pieces (docs/scale.md)
        y : array-like of shape (n_samples,); for Parquet input also the name of the
            target column; for an image folder None reads labels from the subfolder names
        sample_weight : array-like of shape (n_samples,), default=None
        **fit_params : passed to skorch's ``fit``

        Returns
        -------
        self
        """
        source, y = self._open_stream(X, y)
        if source is None:
            return super().fit(X, y, sample_weight=sample_weight, **fit_params)
        check_params(self)
        check_fit_params(self, fit_params)
        # The source is open and y resolved (a target column's name is a column no more): go on from
        # here, not through fit/partial_fit again, which would read the target column as a feature.
        if self._continues():
            return self._continue_stream(source, y, None, sample_weight, **fit_params)
        return self._fit_stream(source, y, sample_weight, **fit_params)

    def _fit_stream(self, source, y, sample_weight, **fit_params):
        self._start_accelerator()
        sample_weight = check_sample_weight(sample_weight, source.n_rows)
        y_encoded = self._fit_target(y, source.n_rows, sample_weight)
        weights = self._row_weights(y_encoded, sample_weight)
        with self._seeded(), self._holdout_plan():
            # The sample is not kept past the tokenizer's fit: up to fit_sample_size rows held through training.
            rows, chosen = source.sample(self._sample_size(source.kind), self._fit_seed())
            self._fit_tokenizer(rows, n_rows=source.n_rows, y=y_encoded, weights=weights, rows=chosen)
            stream = self._stream(source, y_encoded, weights)
            self._train_new_module(stream, y_encoded, **fit_params)
        stream.on_tokens.apply(self.tokenizer_)
        return self

    def partial_fit(self, X, y=None, classes=None, sample_weight=None, **fit_params):
        """Continue training on ``X`` (streamed as in :meth:`fit`) with the fitted tokenizer.

        Parameters
        ----------
        X, y, sample_weight, **fit_params : as :meth:`fit`
        classes : array-like or None
            On the first call, the classes the classifier knows (later batches may bring
            ones this one lacks); later, it must list the fitted classes.

        Returns
        -------
        self
        """
        source, y = self._open_stream(X, y)
        if source is None:
            return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight, **fit_params)
        check_fit_params(self, fit_params, "partial_fit")
        if not hasattr(self, "tokenizer_") or not self.initialized_:
            check_params(self)
            self._classes_for_fit = classes  # the first call's classes= fixes classes_ (the classifier's)
            try:
                return self._fit_stream(source, y, sample_weight, **fit_params)
            finally:
                del self._classes_for_fit
        return self._continue_stream(source, y, classes, sample_weight, **fit_params)

    def _continue_stream(self, source, y, classes, sample_weight, **fit_params):
        """As the in-memory continued fit: the target checked, the schedule restarted at its peak rate."""
        check_same_classes(classes, getattr(self, "classes_", classes))
        self._resume_accelerator()
        y_encoded = self._encode_target(check_target(y, source.n_rows, numeric=self._numeric_target))
        weights = self._row_weights(y_encoded, check_sample_weight(sample_weight, source.n_rows), continued=True)
        for group in self.optimizer_.param_groups:
            group["lr"] = group.get("initial_lr", group["lr"])
        stream = self._stream(source, y_encoded, weights)
        with self._seeded(continued=True), self._schedule_from_the_peak():
            NeuralNet.partial_fit(self, stream, y_encoded, **fit_params)
        stream.on_tokens.apply(self.tokenizer_)
        return self

    def _stream(self, source, y_encoded, weights):
        if self._setting("batch_size") == -1:
            raise ValueError("batch_size=-1 (one batch of every row) cannot stream; pass a batch size")
        if weights is not None and np.all(weights == weights[0]):
            weights = None  # equal weights leave the loss unchanged: the unweighted path, as in memory
        elif weights is not None:
            weights = as_float32_weights(weights)
        note = MissingNote(self.tokenizer_)  # training rows' missing values, noted in the DataLoader's workers too
        buffer_rows = self.stream_buffer_rows
        return StreamedRows(source, self.tokenizer_, y_encoded, weights=weights, buffer_rows=buffer_rows, on_tokens=note)

    def get_split_datasets(self, X, y=None, **fit_params):
        """For a stream: the ``validation_fraction`` holdout as two streams over a row mask.

        The held-out rows are those the in-memory fit would hold out (the same seeded,
        stratified ``train_test_split`` over row numbers); only their indices are kept in
        memory, and the validation stream reads the pieces again each epoch.
        """
        if not isinstance(X, StreamedRows):
            return super().get_split_datasets(X, y, **fit_params)
        if self.train_split != "auto":
            if self.train_split is None:
                return X, None
            raise ValueError("streamed input splits its validation rows itself: use train_split='auto' or None")
        fraction = self._validation_fraction()
        if not fraction:
            return X, None
        n_rows = X.source.n_rows
        n_valid = self._validation_rows(n_rows)
        if not 0 < n_valid < n_rows:
            raise ValueError(f"validation_fraction={fraction} of {n_rows} rows leaves no row to train or validate on")
        _, valid_idx = self._holdout_split(n_rows, y)
        valid = np.zeros(n_rows, dtype=bool)
        valid[valid_idx] = True
        if X.weights is not None:  # as in memory: a holdout weighing 0 would read a loss of 0 every epoch
            check_split_weights({SAMPLE_WEIGHT: X.weights}, np.flatnonzero(~valid), valid_idx, fraction)
        return X.with_options(rows=~valid), X.with_options(rows=valid)

    def get_iterator(self, dataset, training=False):
        """A DataLoader over a stream (``iterator_train__*`` / ``iterator_valid__*`` settings), else skorch's."""
        if not isinstance(dataset, StreamedRows):
            return super().get_iterator(dataset, training=training)
        prefix = "iterator_train" if training else "iterator_valid"
        kwargs = self.get_params_for(prefix)
        batch_size = kwargs.pop("batch_size", self._setting("batch_size"))
        shuffle = kwargs.pop("shuffle", training)
        drop_last = kwargs.pop("drop_last", training and self._drop_last_in_training() and dataset.n_rows > batch_size)
        # Length grouping sorts in-memory tokens; streamed rows come in file order. The text
        # recipes' grouping is dropped here (a streamed text fit failed on it); the user's is refused.
        if kwargs.pop("group_by_length", False) and "group_by_length" in NeuralNet.get_params_for(self, prefix):
            raise ValueError(f"{prefix}__group_by_length needs in-memory tokens; it does not apply to streamed input")
        workers = kwargs.get("num_workers", 0)
        if isinstance(dataset.on_tokens, MissingNote):  # the epochs so far: read by callbacks that predict mid-fit
            dataset.on_tokens.apply(self.tokenizer_)
        noted = dataset.on_tokens if training else None  # validation rows train nothing
        if workers and isinstance(noted, MissingNote):  # before the loader forks or pickles it to its workers
            noted.share()
        stream = dataset.with_options(
            batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, workers=workers, on_tokens=noted
        )
        kwargs.setdefault("collate_fn", collate_batched)
        return self._shard(DataLoader(stream, batch_size=None, **kwargs), training)

    def collect(self, X, forward, trim: bool = False):
        """As :meth:`InferenceMixin.collect`; a Parquet path or an image folder is read in pieces too.

        Parquet columns ``fit`` did not see as features (the target column) are not read.

        Parameters
        ----------
        X : as :meth:`InferenceMixin.iter_batches`, or a path to a Parquet file or folder, or an
            image folder
        forward : callable
        trim : bool, default=False

        Returns
        -------
        as :meth:`InferenceMixin.collect`
        """
        return super().collect(self._inference_input(X), forward, trim=trim)

    def tokenize(self, X) -> dict:
        """As the in-memory ``tokenize``; also what ``predict`` reads, whole: a Parquet path or dataset, an image folder.

        ``explain`` and ``modality_ablation`` tokenize their input at once, through this.

        Parameters
        ----------
        X : as :meth:`collect`, or tokens (a dict of arrays or a Dataset), returned as is

        Returns
        -------
        dict of ndarray, each of shape (n_samples, ...)
        """
        X = self._inference_input(X)
        if _is_arrow_dataset(X):
            source = RowSource.from_arrow(X, dates=fitted_dates(self))
            X = concat([source.read(piece) for piece in source.pieces])
        return super().tokenize(X)

    def _inference_input(self, X):
        """``X`` as inference reads it: a Parquet path or dataset as a dataset of the fitted feature columns,
        an image folder as its image paths; other input unchanged."""
        source, _ = open_source(X, y=0) if not isinstance(X, (list, tuple)) else (None, None)
        if source is not None and source.kind == "table":
            fitted = getattr(self, "feature_names_in_", None)
            # A model fitted on a single file's path before its partition columns were dropped expects them.
            X = X if hasattr(X, "count_rows") else parquet_dataset(X, expected=() if fitted is None else fitted)
            if fitted is not None and set(map(str, fitted)) < set(X.schema.names):  # e.g. the target column
                X = X.replace_schema(_project(X.schema, fitted))
        elif source is not None:
            X = [path for piece in source.pieces for path in piece.part]
        return X


def _project(schema, names):
    import pyarrow as pa

    return pa.schema([schema.field(str(name)) for name in names])
