"""A review of targets and weights: dates as regression targets, object labels, tag types, constant targets,
infinite labels, and sample weights beyond float32's range."""

import datetime

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerRegressor

FAST = dict(max_epochs=1, encoder__d_model=16, encoder__n_layers=1, encoder__n_heads=2, batch_size=32, verbose=0)


def _table(n=60, seed=0):
    rng = np.random.RandomState(seed)
    return pd.DataFrame({"a": rng.randn(n), "b": rng.choice(["x", "y", "z"], n)})


_DAYS = pd.Series(pd.date_range("2020-01-01", periods=60, freq="D"))


@pytest.mark.parametrize(
    "y, held",
    [
        (_DAYS.astype("datetime64[ns]"), r"dates \(datetime64\[ns\]\)"),
        (_DAYS.astype("datetime64[s]").to_numpy(), r"dates \(datetime64\[s\]\)"),
        (_DAYS.dt.tz_localize("Europe/Paris"), r"dates \(datetime64\[.s, Europe/Paris\]\)"),
        (_DAYS.dt.to_period("D"), r"periods \(period\[D\]\)"),
        (pd.Series(pd.to_timedelta(np.arange(60), unit="h")), r"durations \(timedelta64\[.s\]\)"),
        ([datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in range(60)], r"dates \(dates as Python objects\)"),
        (pd.DataFrame({"price": np.arange(60.0), "when": _DAYS}), r"y column 1 \('when'\) holds dates \(datetime64\[.s\]\)"),
    ],
)
def test_a_regression_target_of_dates_or_durations_is_refused_naming_its_dtype_and_the_fix(y, held):
    # A datetime64 target trained on its raw count of the unit: predictions of 1.586e18 for [ns], 1.586e9 for [s].
    with pytest.raises(ValueError, match=held + r", not the numbers a regressor trains on.*Convert y to numbers first"):
        TabFormerRegressor(**FAST).fit(_table(), y)


def test_the_date_advice_round_trips():
    days = (_DAYS - _DAYS.min()).dt.days.to_numpy(dtype=float)
    assert (_DAYS.min() + pd.to_timedelta(days, unit="D") == _DAYS).all()
