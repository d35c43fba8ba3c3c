"""Training input read piece by piece, never whole: Parquet row groups or image paths.

A :class:`RowSource` cuts a Parquet dataset into its row groups, or a list of image
paths into slices, and knows each piece's first row; nothing is read until a piece is
asked for. :class:`StreamedRows` is the ``IterableDataset`` a streamed ``fit`` trains
on: inside each DataLoader worker it reads its share of the pieces, keeps a buffer of
raw rows, shuffles the buffer, tokenizes it and yields whole batches. What is held at
once is one piece plus the buffer (``buffer_rows`` rows), whatever the input's size;
targets and weights are per-row arrays in memory (a few bytes a row).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.utils.data import IterableDataset, get_worker_info

from .tokenizers import UnseenCategoryWarning, UntrainedMissingWarning
from .tokenizers.detect import IMAGE_EXTENSIONS, is_path

__all__ = ["RowSource", "StreamedRows", "arrow_frame", "fitted_dates", "open_source", "is_image_paths", "parquet_dataset"]


@dataclass(frozen=True)
class Piece:
    """Rows ``offset .. offset + rows`` of a source: a Parquet row group, or a slice of paths."""

    offset: int
    rows: int
    part: object  # a pyarrow fragment of one row group, or a slice of the path list


def is_image_paths(X) -> bool:
    """Whether ``X`` is a non-empty list, tuple, array or Series of image file paths.

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
    """
    if isinstance(X, pd.Series):
        X = X.to_numpy()
    if not isinstance(X, (list, tuple, np.ndarray)) or len(X) == 0 or getattr(X, "ndim", 1) != 1:
        return False
    return all(is_path(item) for item in X[:16])


def _is_arrow_dataset(X) -> bool:
    return type(X).__module__.startswith("pyarrow") and hasattr(X, "get_fragments") and hasattr(X, "count_rows")


def _image_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())


def parquet_dataset(path, expected=()):
    """A Parquet file or folder as a ``pyarrow.dataset.Dataset``, with a folder's hive partition columns.

    A folder written as ``data/year=2020/part-0.parquet`` holds the column ``year`` in its
    folder names, not in its files. It is read as ``pandas.read_parquet`` reads it
    (``pyarrow.parquet``'s ``partitioning="hive"``): as a column of categories. A single
    file is read with its own columns only, as ``pandas.read_parquet`` reads it, wherever it
    lies (pyarrow found ``year`` in the path ``data/year=2020/part-0.parquet`` too), but for
    those in ``expected``: a model fitted so before (or on the folder) predicts on the file still.

    Parameters
    ----------
    path : str or os.PathLike
    expected : iterable of str, default=()
        A fitted model's ``feature_names_in_``: a file's hive keys it names are read from the path.

    Returns
    -------
    pyarrow.dataset.Dataset
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    hive = ds.HivePartitioning.discover(infer_dictionary=True)
    if not Path(path).is_file():
        return ds.dataset(str(path), format="parquet", partitioning=hive)
    dataset = ds.dataset(str(path), format="parquet")
    keys = {folder.name.partition("=")[0] for folder in Path(path).absolute().parents if "=" in folder.name}
    wanted = [str(name) for name in expected if str(name) in keys and str(name) not in dataset.schema.names]
    if not wanted:
        return dataset
    found = ds.dataset(str(path), format="parquet", partitioning=hive)
    names = dataset.schema.names + [name for name in wanted if name in found.schema.names]
    return found.replace_schema(pa.schema([found.schema.field(name) for name in names]))


def open_source(X, y=None, chunk_rows: int = 8192):
    """``(source, y)`` for streamed input, or ``(None, y)`` when ``X`` is read in memory.

    Streamed: a ``pyarrow.dataset.Dataset``, a path to a Parquet file or to a folder of
    Parquet files (read by :func:`parquet_dataset`, hive partition columns included), a
    folder of images (every image file below it, sorted), or a list of image paths.
    For an image folder and ``y=None``, each image's label is the name of the folder it
    sits in (torchvision's ``ImageFolder`` layout).

    Parameters
    ----------
    X : object
    y : array-like, str (a column of a Parquet source) or None
    chunk_rows : int, default=8192
        Paths per piece of a path list (Parquet pieces are its row groups).

    Returns
    -------
    source : RowSource or None
    y : y, or the folder labels (ndarray of str)

    Raises
    ------
    ValueError
        If a path does not exist, a folder holds neither Parquet files nor images, or a Parquet source no row.
    """
    if isinstance(X, (str, os.PathLike)):
        path = Path(X)
        if not path.exists():
            hint = "; to predict on one text, pass a list: [text]" if isinstance(X, str) and " " in X.strip() else ""
            raise ValueError(f"X is the path {str(path)!r}, which does not exist{hint}")
        if path.is_file() and path.suffix.lower() in IMAGE_EXTENSIONS:
            raise ValueError(f"X is one image's path, {str(path)!r}; a path alone is read as Parquet or a folder: pass [path]")
        if path.is_file() or any(path.rglob("*.parquet")):
            X = parquet_dataset(path)
        else:
            images = _image_files(path)
            if not images:
                raise ValueError(f"the folder {str(path)!r} holds neither Parquet files nor images ({IMAGE_EXTENSIONS[:4]}...)")
            if y is None:
                labels = [Path(p).parent for p in images]
                if any(parent == path for parent in labels):
                    raise ValueError(
                        f"y=None reads each image's label from its folder (root/<label>/image.png), but {str(path)!r} "
                        "holds images directly; pass y, or sort the images into one folder per label"
                    )
                y = np.array([parent.name for parent in labels], dtype=object)
            X = images
    if _is_arrow_dataset(X):
        source = RowSource.from_arrow(X)
        if not source.n_rows:  # else numpy's "need at least one array to concatenate" at fit, an IndexError at predict
            raise ValueError("X (a Parquet source) has 0 rows; at least 1 is required")
        return source, y
    if is_image_paths(X):
        return RowSource.from_paths(list(X), chunk_rows), y
    return None, y


def arrow_frame(table, dates=None) -> pd.DataFrame:
    """A pyarrow table or record batch as a DataFrame, its ``dates`` columns of a date type as ``datetime64``.

    pandas reads a Parquet ``date32`` / ``date64`` column as ``datetime.date`` objects, which a
    tokenizer reads as categories; the file declares them dates, and a ``datetime64`` column
    (a timestamp column, or the same dates in memory) is read as dates: calendar parts.
    Everything else is read as ``pandas.read_parquet`` reads it.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
    dates : collection of str or None, default=None
        The date columns to read as ``datetime64[ms]``; None: every one.

    Returns
    -------
    DataFrame
    """
    import pyarrow as pa

    frame = table.to_pandas()
    for field in table.schema:
        if pa.types.is_date(field.type) and (dates is None or field.name in dates) and field.name in frame.columns:
            frame[field.name] = table.column(field.name).to_pandas(date_as_object=False).to_numpy()
    return frame


def fitted_dates(estimator) -> set:
    """The feature columns ``estimator`` was fitted on as dates (``datetime64`` or pyarrow dates), read so at predict.

    A column fitted as ``datetime.date`` objects (categories: a frame from ``pandas.read_parquet``,
    or a model streamed before Parquet dates were read as dates) keeps reading as objects.
    """
    dtypes = getattr(estimator, "feature_dtypes_in_", None) or {}
    return {column for column, dtype in dtypes.items() if dtype.startswith(("datetime64", "date32", "date64"))}


class RowSource:
    """Rows in pieces: a Parquet dataset's row groups, or slices of a list of image paths.

    Parameters
    ----------
    pieces : list of Piece
        In row order; ``pieces[i].offset`` is the first global row of piece ``i``.
    columns : list of str or None
        Parquet: the feature columns read; None for image paths.
    schema : pyarrow.Schema or None
        Parquet: the dataset's schema (files are read in it).
    dates : collection of str or None, default=None
        Parquet: the date columns read as ``datetime64`` (see :func:`arrow_frame`); None: every one.

    Attributes
    ----------
    n_rows : int
    kind : {"table", "images"}
    """

    def __init__(self, pieces: list, columns: list | None = None, schema=None, dates=None):
        self.pieces, self.columns, self.schema, self.dates = pieces, columns, schema, dates
        self.kind = "images" if columns is None else "table"
        self.n_rows = sum(piece.rows for piece in pieces)

    @classmethod
    def from_arrow(cls, dataset, dates=None) -> RowSource:
        """One piece per Parquet row group (per fragment for other formats); only footers are read."""
        pieces, offset = [], 0
        for fragment in dataset.get_fragments():
            parts = fragment.split_by_row_group() if hasattr(fragment, "split_by_row_group") else [fragment]
            for part in parts:
                rows = part.row_groups[0].num_rows if hasattr(part, "row_groups") else part.count_rows()
                if rows:
                    pieces.append(Piece(offset, rows, part))
                    offset += rows
        return cls(pieces, list(dataset.schema.names), dataset.schema, dates)

    @classmethod
    def from_paths(cls, paths: list, chunk_rows: int) -> RowSource:
        """Slices of ``chunk_rows`` paths."""
        return cls(
            [
                Piece(first, len(paths[first : first + chunk_rows]), paths[first : first + chunk_rows])
                for first in range(0, len(paths), chunk_rows)
            ]
        )

    def without(self, column: str) -> RowSource:
        """The same rows without ``column`` among the features (the target column)."""
        if self.columns is None or column not in self.columns:
            where = "image paths" if self.columns is None else f"the Parquet columns {self.columns}"
            raise ValueError(f"y={column!r} names a target column, but it is not one of {where}")
        if len(self.columns) == 1:
            raise ValueError(f"the Parquet data holds only the target column {column!r}: no feature is left")
        return RowSource(self.pieces, [name for name in self.columns if name != column], self.schema, self.dates)

    def column(self, name: str) -> np.ndarray:
        """One column over every row, read piece by piece (the target: a few bytes a row)."""
        return np.concatenate([read_piece(piece, [name], self.schema, self.dates)[name].to_numpy() for piece in self.pieces])

    def read(self, piece: Piece, rows=None):
        """Piece ``piece``'s raw rows (a DataFrame, or a list of paths), ``rows`` (local indices) only if given."""
        if self.kind == "images":
            paths = piece.part
            return paths if rows is None else [paths[i] for i in rows]
        frame = read_piece(piece, self.columns, self.schema, self.dates)
        return frame if rows is None else frame.iloc[rows].reset_index(drop=True)

    def sample(self, size: int, seed) -> tuple:
        """``(rows, global indices)``: ``size`` rows drawn without replacement, in row order; all rows when fewer."""
        if size >= self.n_rows:
            chosen = np.arange(self.n_rows)
        else:
            chosen = np.sort(np.random.default_rng(seed).choice(self.n_rows, size, replace=False))
        parts = []
        for piece in self.pieces:
            local = chosen[(chosen >= piece.offset) & (chosen < piece.offset + piece.rows)] - piece.offset
            if len(local):
                parts.append(self.read(piece, None if len(local) == piece.rows else local))
        return concat(parts), chosen


def read_piece(piece: Piece, columns: list, schema=None, dates=None) -> pd.DataFrame:
    """Read one Parquet piece (a row group), ``columns`` only, in the dataset's ``schema`` when given,
    its ``dates`` as ``datetime64`` (see :func:`arrow_frame`).

    A later file of a folder whose values do not fit the schema (the first file's) raises a
    ValueError naming the file: pyarrow's own error names neither file nor column.
    """
    import pyarrow as pa

    try:
        return arrow_frame(piece.part.to_table(schema=schema, columns=columns), dates)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        where = getattr(piece.part, "path", "a piece of X")
        raise ValueError(
            f"{where} cannot be read in the column types of the folder's first file: {error}. "
            "Write every file with the same column types"
        ) from None


def concat(parts: list):
    """Raw rows joined: DataFrames (index reset) or lists of paths."""
    if not parts:
        return []
    if isinstance(parts[0], pd.DataFrame):
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return [item for part in parts for item in part]


def _named_in_x(error: ValueError, raw, index: np.ndarray) -> ValueError:
    """``error`` with the buffer positions it names ("image 101") read as rows of X (and their paths).

    A stream tokenizes a shuffled buffer of rows, so the tokenizer's positions are not the user's.
    """

    def in_x(match):
        position = int(match.group(2))
        if position >= len(index):
            return match.group(0)
        path = f" ({raw[position]})" if isinstance(raw, list) and isinstance(raw[position], str) else ""
        return f"{match.group(1)} {int(index[position])} of X{path}"

    return ValueError(re.sub(r"\b(image|row) (\d+)\b", in_x, str(error)))


class StreamedRows(IterableDataset):
    """Tokenized training batches from a :class:`RowSource`, read and tokenized lazily.

    Each iteration (an epoch) visits the pieces, in a fresh random order when
    ``shuffle``, split among DataLoader workers (worker ``k`` of ``n`` takes every
    ``n``-th piece). Rows gather in a buffer; once it holds ``buffer_rows`` rows it is
    shuffled (when ``shuffle``), its whole batches are tokenized and yielded, and the
    remainder waits for the next piece. Without shuffling and with one worker, the
    batches are exactly those of an in-memory fit with ``shuffle=False``.

    Iterating yields ``(X_batch, y_batch)``: a dict of tensors of shape
    ``(batch_size, ...)`` and the batch's targets.

    Parameters
    ----------
    source : RowSource
    tokenizer : fitted tokenizer
    y : ndarray of shape (n_rows, ...)
        Encoded targets of every row of ``source``.
    rows : bool ndarray of shape (n_rows,) or None, default=None
        The rows to use (a training or validation split); None: all.
    weights : ndarray of shape (n_rows,) or None, default=None
        Row weights, added to each batch under ``sample_weight``.
    batch_size : int, default=32
    shuffle : bool, default=False
    drop_last : bool, default=False
        Drop each worker's last, smaller batch.
    buffer_rows : int, default=8192
        Rows gathered before shuffling and tokenizing.
    workers : int, default=0
        The DataLoader's ``num_workers``, for ``len`` only.
    on_tokens : callable or None, default=None
        Called with each buffer's tokens as they are made (in the DataLoader's worker process,
        if it has workers: what it records must be shared with the fitting process, as
        :class:`~tabformer.estimators._streaming.MissingNote` is).
    """

    def __init__(
        self,
        source,
        tokenizer,
        y,
        rows=None,
        weights=None,
        batch_size=32,
        shuffle=False,
        drop_last=False,
        buffer_rows=8192,
        workers=0,
        on_tokens=None,
    ):
        self.source, self.tokenizer, self.y, self.rows, self.weights = source, tokenizer, y, rows, weights
        self.batch_size, self.shuffle, self.drop_last = int(batch_size), bool(shuffle), bool(drop_last)
        self.buffer_rows, self.workers = max(int(buffer_rows), self.batch_size), int(workers)
        self.on_tokens = on_tokens

    @property
    def n_rows(self) -> int:
        """Rows this stream yields per epoch."""
        return self.source.n_rows if self.rows is None else int(np.count_nonzero(self.rows))

    def __len__(self) -> int:
        """Batches per epoch: exact in one process; with ``workers`` > 1 an upper bound (each worker
        ends with its own smaller batch)."""
        whole, rest = divmod(self.n_rows, self.batch_size)
        if self.drop_last or not rest:
            return whole
        return whole + (min(self.workers, len(self.source.pieces)) if self.workers > 1 else 1)

    def with_options(self, **options) -> StreamedRows:
        """A copy with some of the constructor's arguments changed."""
        settings = dict(vars(self), **options)
        return StreamedRows(**settings)

    def __iter__(self):
        worker = get_worker_info()
        if worker is None:
            seed = int(torch.randint(0, 2**62, ()).item()) if self.shuffle else 0
        else:  # DataLoader seeds worker k with base_seed + k: every worker shares one piece order
            seed = worker.seed - worker.id
        order = np.random.default_rng(seed).permutation(len(self.source.pieces)) if self.shuffle else None
        pieces = self.source.pieces if order is None else [self.source.pieces[i] for i in order]
        mine = pieces if worker is None else pieces[worker.id :: worker.num_workers]
        rng = np.random.default_rng(seed + 1 + (worker.id if worker else 0))
        raw, index = [], []
        for piece in mine:
            local = None if self.rows is None else np.flatnonzero(self.rows[piece.offset : piece.offset + piece.rows])
            if local is not None and not len(local):
                continue
            raw.append(self.source.read(piece, local))
            index.append(piece.offset + (np.arange(piece.rows) if local is None else local))
            if sum(map(len, index)) >= self.buffer_rows:
                raw, index = yield from self._emit(concat(raw), np.concatenate(index), rng, final=False)
        if index:
            yield from self._emit(concat(raw), np.concatenate(index), rng, final=True)

    def _emit(self, raw, index, rng, final: bool):
        """Yield the buffer's batches; return the rows left over (as one-item lists)."""
        if self.shuffle:
            order = rng.permutation(len(index))
            raw, index = _take(raw, order), index[order]
        whole = len(index) if final and not self.drop_last else len(index) // self.batch_size * self.batch_size
        if whole:
            with warnings.catch_warnings():  # training on these rows trains the missing and unseen tokens warned about
                warnings.simplefilter("ignore", UntrainedMissingWarning)
                warnings.simplefilter("ignore", UnseenCategoryWarning)
                try:
                    tokens = self.tokenizer.transform(_take(raw, np.arange(whole)))
                except ValueError as error:
                    raise _named_in_x(error, raw, index) from None
            if self.on_tokens is not None:
                self.on_tokens(tokens)
            tensors = {key: torch.as_tensor(np.ascontiguousarray(value)) for key, value in tokens.items()}
            for first in range(0, whole, self.batch_size):
                rows = index[first : first + self.batch_size]
                batch = {key: value[first : first + self.batch_size] for key, value in tensors.items()}
                if self.weights is not None:
                    batch["sample_weight"] = torch.as_tensor(self.weights[rows], dtype=torch.float32)
                yield batch, torch.as_tensor(self.y[rows])
        rest = np.arange(whole, len(index))
        return ([_take(raw, rest)], [index[rest]]) if len(rest) else ([], [])


def _take(raw, positions):
    if isinstance(raw, pd.DataFrame):
        return raw.iloc[positions].reset_index(drop=True)
    return [raw[i] for i in positions]
