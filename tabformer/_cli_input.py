"""The command line's input: CSV, Parquet, text and image files read back as ``fit`` saw them.

A CSV loses its dtypes: a category of "00123" codes parses as numbers, dates as text,
booleans with blanks as objects. A saved model's ``feature_dtypes_in_`` and its category
kinds (:func:`category_kinds`) make :func:`read_data` read them back as fit saw them.

A CSV also writes an empty text and a missing one alike, as an empty cell, which pandas
reads as missing. A model reads them differently (an empty text is a sequence of [SEP]
alone; a missing text is a masked segment, or an error for a text model), and a text
column's empty cell is most often an empty text: in the columns the model reads as text
(:func:`text_columns` at predict, :func:`fit_text_columns` at fit), an empty cell reads as
``""``, both at fit and at predict. Elsewhere (numbers, categories, dates) it stays missing.

A tagger's sentences are read as written (``as_written``): every cell is its text, so the one-word
sentences "NA", "null", "None", "nan" are words to tag, "007" keeps its zeros, and only an empty
cell is an empty sentence. A training file's target column is read as written too (:func:`_target_as_written`): a
class "NA" (North America) is a class, not a missing label; only an empty cell is missing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from ._stream import parquet_dataset
from .tokenizers import TOKENIZERS
from .tokenizers._column_hints import ISO_DATE  # one rule for what a date string is, with tokenizer="auto"
from .tokenizers.detect import IMAGE_EXTENSIONS, infer_column_kind, is_path

__all__ = ["CLIError", "TABLE_SUFFIXES", "category_kinds", "fit_text_columns", "image_columns", "read_data", "text_columns"]

TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".txt")


class CLIError(Exception):
    """Bad input: reported in one line, exit status 2."""


# ----------------------------------------------------------------------------- input
#: pandas' names (``infer_dtype``) of category values a CSV parses back by itself
_PARSED_CATEGORY_KINDS = ("integer", "floating", "mixed-integer-float", "boolean")


def _is_text_dtype(dtype: str) -> bool:
    return dtype in ("object", "str") or "string" in dtype  # string, string[pyarrow], large_string[pyarrow]


def _first_bad_date(values: pd.Series, error) -> str:
    """The row to fix, not pandas' advice to pass ``format=`` (which the command line does not take)."""
    for row, value in values.dropna().items():
        try:
            pd.to_datetime(value, format="ISO8601")
        except (ValueError, TypeError):
            return f"row {row!r} holds {value!r}; write the column's dates in ISO 8601 (e.g. 2018-03-01)"
    return str(error).split(". You might want")[0]


def _as_fitted(frame: pd.DataFrame, dtypes: dict) -> pd.DataFrame:
    """A CSV's columns cast to what fit saw: categories as categories, datetimes parsed."""
    for column, dtype in dtypes.items():
        if column not in frame.columns:
            continue  # predict names the missing column
        if dtype == "category":
            frame[column] = frame[column].astype("category")
        elif dtype.startswith("datetime64") and not pd.api.types.is_datetime64_any_dtype(frame[column]):
            zone = getattr(pd.api.types.pandas_dtype(dtype), "tz", None)
            try:
                # A zone's text holds two offsets across a daylight-saving change: read as UTC, then the fitted zone.
                parsed = pd.to_datetime(frame[column], utc=zone is not None)
                frame[column] = parsed.dt.tz_convert(zone) if zone is not None else parsed
            except (ValueError, TypeError) as error:
                why = _first_bad_date(frame[column], error)
                raise CLIError(f"column {column!r} was a datetime at fit and cannot be read as one here: {why}") from None
    return frame


def _texts_as_written(frame: pd.DataFrame, path: Path, sep: str, texts, skip_blank_lines: bool = True) -> pd.DataFrame:
    """``frame`` with its text columns (``texts``: a set, or a function of ``frame``) as written: an empty cell is ``""``.

    pandas' NA strings are texts here, as in a target and a tagger's sentences: the review or survey answer "None",
    "NA" or "null" was read as missing, which a text model refuses and a mixed one read as no text at all (while
    ``predict`` on the same strings in Python read them).
    """
    columns = [c for c in (texts(frame) if callable(texts) else texts) if c in frame.columns]
    if not columns:
        return frame
    raw = pd.read_csv(path, sep=sep, usecols=columns, dtype=str, keep_default_na=False, skip_blank_lines=skip_blank_lines)
    for column in columns:
        frame[column] = raw[column].to_numpy(dtype=object)
    return frame


#: pandas' default NA strings (``read_csv``'s ``na_values``): words in a target, missing in a column of numbers
_NA_STRINGS = frozenset(
    ["#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL"]
    + ["NaN", "None", "n/a", "nan", "null"]
)


#: a number as written: an integer as ``str(int(v))`` writes it ("007", "+7" are codes), a decimal with no leading zero
_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d*)?([eE][+-]?\d+)?|-?\.\d+([eE][+-]?\d+)?|[+-]?inf(inity)?", re.IGNORECASE)


def _target_as_written(path: Path, sep: str, target: str, skip_blank_lines: bool) -> pd.Series:
    """A CSV's target column as written: only an empty cell is missing, so a class "NA", "None" or "null" is a class.

    It is numbers where every value is a number as written (missing cells NaN), booleans where every value is True or
    False, else text: codes "007" and "010" stay classes "007" and "010" (parsed, they came back as 7 and 10). A pandas
    NA string among numbers ("NA" in a column of prices) is refused, naming its row: pandas dropped it silently.
    """
    raw = pd.read_csv(path, sep=sep, usecols=[target], dtype=str, keep_default_na=False, skip_blank_lines=skip_blank_lines)
    raw = raw[target]
    written = raw[raw != ""]
    if len(written) and written.isin(["True", "False"]).all():
        return raw.map(lambda v: None if v == "" else v == "True")
    words = written[~written.str.strip().map(lambda v: bool(_NUMBER.fullmatch(v)) and v != "-0")]
    if len(words) == len(written) or not words.isin(_NA_STRINGS).all():
        return raw.where(raw != "", None)  # text, or numbers and words: classes as written
    if len(words):
        row, value = next(iter(words.items()))
        raise CLIError(
            f"target column {target!r} of {path} holds numbers and {value!r} (row {row}), which is not a number: "
            "leave the cell empty for a row with no target (fit drops it), or write its number"
        )
    return pd.to_numeric(raw.str.strip().where(raw != "", None))


def _lines(text: str) -> list:
    """A ``.txt`` file's lines: split at newlines only (``\\n``, ``\\r\\n``). ``str.splitlines`` also splits at form
    feeds, ``\\x85`` and ``\\u2028`` inside a text (Rotten Tomatoes holds one), and the output gained a row."""
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line starts no row
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _read_file(
    path: Path,
    dtypes: dict | None,
    category_kinds: dict | None = None,
    parse_dates: bool = False,
    texts=(),
    hive=False,
    as_written=False,
    target=None,
):
    suffix = path.suffix.lower()
    if hive or suffix in (".parquet", ".pq"):  # a hive-partitioned folder (year=2020/...): its partition columns too
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise CLIError(f"reading {path} needs pyarrow: pip install pyarrow") from None
        return _parquet_dates(pd.read_parquet(path), path, dtypes, parse_dates)
    if suffix == ".txt":
        # Every line is a row, blank ones too (an empty text): the output lines up with the input's.
        return _lines(path.read_text(encoding="utf-8"))
    if suffix in (".csv", ".tsv"):
        # Columns that were text at fit are read as text, so "00123" stays a category, not a number;
        # a category of numbers is parsed as numbers, as fit saw it.
        fitted, kinds = dtypes or {}, category_kinds or {}
        read_as_text = lambda c, d: (_is_text_dtype(d) or d == "category") and kinds.get(c) not in _PARSED_CATEGORY_KINDS  # noqa: E731
        text = {c: str for c, d in fitted.items() if read_as_text(c, d)}
        sep = "\t" if suffix == ".tsv" else ","
        # In a file of one column a blank line is an empty cell, as in a .txt: pandas skipped it, and the output had
        # fewer rows than the input. (With more columns a row has separators; a blank line is no row.)
        blank_lines = len(pd.read_csv(path, sep=sep, nrows=0).columns) > 1
        if as_written:  # pandas' NA strings are words here: the sentence "NA" was read as missing and got no tag
            return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skip_blank_lines=blank_lines)
        frame = pd.read_csv(path, sep=sep, dtype=text or None, skip_blank_lines=blank_lines)
        # Dates first: a date column's empty cell is a missing date, and as "" it would fail
        # the ISO parse and leave the whole column text (texts is judged on the parsed frame).
        frame = _parse_dates(frame) if parse_dates else _as_fitted(frame, fitted)
        if target in frame.columns:
            frame[target] = _target_as_written(path, sep, target, blank_lines)
        return _texts_as_written(frame, path, sep, texts, blank_lines)
    raise CLIError(f"cannot read {path}: unknown file type {suffix or '(none)'!r}; use .csv, .tsv, .parquet or .txt")


def _parquet_dates(frame: pd.DataFrame, path: Path, dtypes: dict | None, parse_dates: bool) -> pd.DataFrame:
    """A Parquet file's ``date32`` / ``date64`` columns as datetimes, as a streamed fit reads them (pandas reads
    ``datetime.date`` cells, which a tokenizer reads as categories): a training file's every one, else those fit
    saw as datetimes (a model fitted on the cells as categories reads them so still)."""
    if parse_dates:
        import pyarrow as pa

        dates = [field.name for field in parquet_dataset(path).schema if pa.types.is_date(field.type)]
    else:
        dates = [c for c, d in (dtypes or {}).items() if d.startswith(("datetime64", "date32", "date64"))]
    for column in dates:
        if column in frame.columns and frame[column].dtype == object:
            frame[column] = pd.to_datetime(frame[column])
    return frame


def _parse_dates(frame: pd.DataFrame) -> pd.DataFrame:
    """A training CSV's ISO 8601 date columns as datetimes (as ``pd.read_parquet`` would give them), not text.

    A column whose offsets differ (a zone across a daylight-saving change) is read in UTC.
    """
    for column in frame.columns:
        values = frame[column].dropna()
        if not len(values) or not _is_text_dtype(str(frame[column].dtype)) or not values.astype(str).str.match(ISO_DATE).all():
            continue
        try:
            frame[column] = pd.to_datetime(frame[column], format="ISO8601")
        except (ValueError, TypeError):  # mixed offsets
            frame[column] = pd.to_datetime(frame[column], format="ISO8601", utc=True)
    return frame


def _resolve_image_paths(frame: pd.DataFrame, root: Path, image_columns=None) -> pd.DataFrame:
    """Relative image paths made relative to ``root``: in ``image_columns`` (a fitted model's), else in any column of paths.

    At predict only the columns that held images at fit are rewritten: a category such as
    ``"nike.png"`` must keep its fitted spelling whatever folder the file sits in.
    """
    for column in frame.columns if image_columns is None else [c for c in frame.columns if c in image_columns]:
        values = frame[column].dropna().astype(object)  # a category column's map would stay categorical
        if len(values) and values.map(is_path).all():
            rooted = lambda v: v if not isinstance(v, str) or os.path.isabs(v) else str(root / v)  # noqa: E731
            frame[column] = frame[column].astype(object).map(rooted)
    return frame


def image_columns(estimator):
    """The columns a fitted estimator read as images: a mixed tokenizer's image columns, none for a table's.

    None (every column of paths is rewritten) for an image tokenizer, or without a fitted one.
    """
    tokenizer = getattr(estimator, "tokenizer_", None)
    kinds = getattr(tokenizer, "column_kinds_", None)
    if kinds is not None:
        return {column for column, kind in kinds.items() if kind == "image"}
    return None if tokenizer is None or getattr(tokenizer, "kind", None) == "image" else set()


def text_columns(estimator) -> set:
    """The columns a fitted estimator reads as text: a mixed tokenizer's text columns, a text tokenizer's named ones.

    Parameters
    ----------
    estimator : a fitted tabformer estimator

    Returns
    -------
    set
        Empty for table and image models.
    """
    tokenizer = getattr(estimator, "tokenizer_", None)
    kinds = getattr(tokenizer, "column_kinds_", None)
    if kinds is not None:
        return {column for column, kind in kinds.items() if kind == "text"}
    return set(getattr(tokenizer, "feature_names_in_", None) or []) if getattr(tokenizer, "kind", None) == "text" else set()


def fit_text_columns(settings: dict, target=None):
    """What :func:`text_columns` will say of the model the CLI fits with ``settings``, as a function of the training frame.

    Parameters
    ----------
    settings : dict
        The ``--set`` settings: ``tokenizer`` (default ``"auto"``) and ``tokenizer__max_categories``,
        ``tokenizer__text_columns`` are read.
    target : str or None, default=None
        The target column, never an input.

    Returns
    -------
    columns : callable
        ``columns(frame)``: the set of ``frame``'s columns read as text. Under ``"auto"`` and
        ``"mixed"``, those the column detection calls text; under a text tokenizer, its
        ``text_columns`` or every non-numeric column; none under a table or image tokenizer.
    """
    spec = settings.get("tokenizer", "auto")
    kind = getattr(TOKENIZERS.get(spec) if isinstance(spec, str) else spec, "kind", None)

    def columns(frame: pd.DataFrame) -> set:
        inputs = [c for c in frame.columns if c != target]
        if kind == "text":
            named = settings.get("tokenizer__text_columns")
            named = [named] if isinstance(named, str) else named
            return set(named) if named else {c for c in inputs if _is_text_dtype(str(frame[c].dtype))}
        if spec not in ("auto", "mixed"):
            return set()
        limit, found = settings.get("tokenizer__max_categories", 100), set()
        for column in inputs:
            try:
                found |= {column} if infer_column_kind(frame[column], limit) == "text" else set()
            except ValueError:  # fit names the column
                pass
        return found

    return columns


def category_kinds(estimator) -> dict:
    """Column -> the kind of value its categories held at fit (pandas' ``infer_dtype`` name), from the fitted table tokenizers.

    Parameters
    ----------
    estimator : a fitted tabformer estimator

    Returns
    -------
    dict
        Empty where the estimator has no categorical column.
    """
    tokenizer = getattr(estimator, "tokenizer_", None)
    tables = [tokenizer] + [sub for _, sub, _ in getattr(tokenizer, "transformers_", None) or []]
    kinds = {}
    for table in tables:
        kinds.update(zip(getattr(table, "categorical_columns_", None) or [], getattr(table, "category_kinds_", None) or []))
    return kinds


def read_data(
    path,
    image_root=None,
    dtypes=None,
    category_kinds=None,
    images=None,
    parse_dates=False,
    texts=(),
    as_written=False,
    *,
    target=None,
):
    """A DataFrame (table files), a list of str (``.txt``) or a list of image paths (a folder of images).

    ``dtypes`` (column -> the dtype's name at fit) and ``category_kinds`` (see
    :func:`category_kinds`) make a CSV read back as fit saw it; ``images`` (see
    :func:`image_columns`) names the columns whose relative paths start at the data's folder.
    ``parse_dates`` (a training file) reads a CSV's ISO 8601 date columns as datetimes. The
    ``texts`` columns (a set, or a function of the frame read) are read as written: ``"NA"`` is a
    text, an empty cell the empty text ``""``.
    ``as_written`` reads every CSV cell as its text, with no NA strings nor numbers (a tagger's sentences).
    A CSV's ``target`` column (a training file's) is read as written: only an empty cell is missing.
    """
    path, options = Path(path), {"as_written": as_written, "target": target}
    if not path.exists():
        raise CLIError(f"cannot read {path}: no such file or folder")
    try:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            images = [str(p) for p in files if p.suffix.lower() in IMAGE_EXTENSIONS]
            if images:
                return images
            tables = [p for p in files if p.suffix.lower() in TABLE_SUFFIXES]
            if not tables and any(p.is_dir() and "=" in p.name for p in path.iterdir()):
                data = _read_file(path, dtypes, category_kinds, parse_dates, texts, hive=True, **options)
            elif not tables:
                raise CLIError(f"{path} holds no image or data file ({', '.join(TABLE_SUFFIXES)})")
            else:
                parts = [_read_file(p, dtypes, category_kinds, parse_dates, texts, **options) for p in tables]
                if all(isinstance(part, list) for part in parts):
                    return [text for part in parts for text in part]
                data = pd.concat(parts, ignore_index=True)
        else:
            data = _read_file(path, dtypes, category_kinds, parse_dates, texts, **options)
    except CLIError:
        raise
    except UnicodeDecodeError as error:  # a ValueError too: caught first, for the hint
        raise CLIError(f"cannot read {path}: it is not UTF-8 ({error.reason} at byte {error.start}); save it as UTF-8") from None
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise CLIError(f"cannot read {path}: {error}") from None
    if isinstance(data, pd.DataFrame):
        if data.empty:
            raise CLIError(f"{path} holds no rows")
        root = Path(image_root) if image_root else (path if path.is_dir() else path.parent)
        data = _resolve_image_paths(data, root, images)
    return data
