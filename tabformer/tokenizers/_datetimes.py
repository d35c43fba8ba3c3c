"""Datetime columns of a table as number columns: elapsed years and periodic calendar parts.

Used by :class:`~tabformer.tokenizers.TabularTokenizer` (see its ``numeric_columns``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["datetime_parts", "expand_datetimes", "part_owners"]

_PERIODS = {"month": 12, "weekday": 7, "hour": 24}
#: in a column's parts: its calendar parts are read on the column's own clock (a time zone's local time), not in UTC.
#: Models fitted before it read them in UTC: a Monday in Tokyo was a Sunday at 15:00, and every date had an hour.
LOCAL_CLOCK = "local"


def datetime_parts(values: pd.Series) -> list:
    """The parts a datetime column becomes: elapsed time, month and weekday, hour if the times have one;
    a time-zone aware column's calendar parts on its local clock (``LOCAL_CLOCK``)."""
    times = _naive(values, local=True).dropna()
    with_time = bool(len(times)) and bool((times != times.dt.normalize()).any())
    return ["elapsed", "month", "weekday"] + (["hour"] if with_time else []) + ([LOCAL_CLOCK] if is_tz_aware(values) else [])


def _is_arrow_date(values: pd.Series) -> bool:
    if not isinstance(values.dtype, pd.ArrowDtype):
        return False
    import pyarrow  # present whenever an ArrowDtype is

    return pyarrow.types.is_date(values.dtype.pyarrow_dtype)


def is_tz_aware(values: pd.Series) -> bool:
    """Whether a datetime column carries a time zone (pyarrow dates never do)."""
    return not _is_arrow_date(values) and values.dt.tz is not None


def _naive(values: pd.Series, local: bool = False) -> pd.Series:
    """Datetimes without a time zone: converted to UTC first (elapsed time: every row on one clock), or with
    ``local`` the wall time of the column's zone (calendar parts: the weekday and hour where the time was taken)."""
    if _is_arrow_date(values):  # pyarrow dates have no .dt.tz: read them as midnight datetimes
        return values.astype("datetime64[s]")
    if values.dt.tz is None:
        return values
    return values.dt.tz_localize(None) if local else values.dt.tz_convert("UTC").dt.tz_localize(None)


def _part_names(column, part: str) -> list:
    return [f"{column}.elapsed"] if part == "elapsed" else [f"{column}.{part}_sin", f"{column}.{part}_cos"]


def part_owners(parts: dict) -> dict:
    """Each number column a datetime column became (``"when.month_sin"``) -> that datetime column."""
    return {
        name: column
        for column, names in parts.items()
        for part in names
        if part != LOCAL_CLOCK
        for name in _part_names(column, part)
    }


def expand_datetimes(frame: pd.DataFrame, parts: dict) -> pd.DataFrame:
    """``frame`` with each datetime column replaced, in place, by its number columns (NaT -> NaN)."""
    if not parts:
        return frame
    columns = {}
    for column in frame.columns:
        if column not in parts:
            columns[column] = frame[column]
            continue
        times = _naive(frame[column])
        calendar = _naive(frame[column], local=True) if LOCAL_CLOCK in parts[column] else times
        for part in parts[column]:
            if part == LOCAL_CLOCK:
                continue
            names = _part_names(column, part)
            if part == "elapsed":
                columns[names[0]] = (times - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=365.25)
                continue
            if part == "month":  # the position in the year, so 31 January sits next to 1 February
                phase = (calendar.dt.day_of_year - 1) / (365 + calendar.dt.is_leap_year.astype(float))
            elif part == "weekday":
                phase = (calendar.dt.day_of_week + calendar.dt.hour / 24) / 7
            else:
                phase = (calendar.dt.hour + calendar.dt.minute / 60 + calendar.dt.second / 3600) / 24
            columns[names[0]] = np.sin(2 * np.pi * phase.astype(float))
            columns[names[1]] = np.cos(2 * np.pi * phase.astype(float))
    return pd.DataFrame(columns, index=frame.index)
