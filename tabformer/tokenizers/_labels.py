"""The user's column labels, for a DataFrame whose labels are not all str (``0, 1``, ``x0, x1`` inside).

scikit-learn records feature names only when every label is a str; tabformer then names the
columns ``x0, x1...`` inside, as it does an array's. The user still names them by their own
labels, in ``categorical_columns`` / ``numeric_columns`` as in messages. On an array or a
DataFrame with str labels, where no label is an int, an int in those lists is a position, as
in scikit-learn's ``ColumnTransformer``.
"""

from __future__ import annotations

import numbers

import pandas as pd

__all__ = ["check_listed", "check_same_columns", "column_list", "internal_names", "user_label"]


def user_label(name, labels):
    """The user's label of a column that the tokenizer names as scikit-learn does for non-str labels (``x0``).

    Messages name the columns of the user's frame: ``0``, not the ``x0`` that no column of it is called.

    Parameters
    ----------
    name : str
        A column as the tokenizer names it inside, or a datetime part of one (``"x2.month_sin"``).
    labels : list or None
        The frame's column labels at fit (``TabularTokenizer.column_labels_``); None where they were str.

    Returns
    -------
    label : object
        ``labels[i]`` for ``"x<i>"``, ``"<label>.<part>"`` for a datetime part, else ``name`` unchanged.
    """
    owner, dot, part = str(name).partition(".")
    if not labels or not owner.startswith("x") or not owner[1:].isdigit() or int(owner[1:]) >= len(labels):
        return name
    label = labels[int(owner[1:])]
    return f"{label}{dot}{part}" if dot else label


def column_list(parameter: str, given) -> list:
    """``given`` (a list of columns, or None for none) as a list; a str or a scalar is refused, naming ``parameter``.

    A str is a list of its letters: ``categorical_columns="zip"`` named columns 'z', 'i' and 'p'.
    """
    if given is None:
        return []
    if isinstance(given, (str, bytes)) or not pd.api.types.is_list_like(given):
        raise ValueError(f"{parameter} must be a list of columns, got {given!r}; pass [{given!r}]")
    return list(given)


def internal_names(parameter: str, given, labels, columns: list):
    """A column list the user gave (``categorical_columns``...) under the names the tokenizer uses inside.

    On a frame with non-str labels, a label of the frame (``0``) becomes its column's ``x<i>``. On
    an array or a frame with str labels, an int (Python's or numpy's, not a bool) is a position,
    negative ones counting from the end as in ``ColumnTransformer``: ``0`` becomes ``"x0"`` (an
    array) or the first column's label. Any other entry (``"x0"``, a str label) stays as is.

    Parameters
    ----------
    parameter : str
        The parameter's name (``"categorical_columns"``); errors name it.
    given : list or None
        The columns listed (None: detect them).
    labels : list or None
        The frame's column labels at fit (``TabularTokenizer.column_labels_``); None where they were str.
    columns : list of str
        X's columns as the tokenizer names them inside, in order (before datetime columns expand).

    Returns
    -------
    inside : list or None
        ``given`` with its labels and positions named as inside, None kept.

    Raises
    ------
    ValueError
        If ``given`` is not a list (a str), or a position is out of range; the message names it and the range.
    """
    if given is None:
        return given
    column_list(parameter, given)
    if labels:
        return [f"x{labels.index(c)}" if _is_label(c, labels) else c for c in given]
    n = len(columns)
    far = [c for c in given if _is_position(c) and not -n <= c < n]
    if far:
        raise ValueError(
            f"{parameter} names position(s) {[int(c) for c in far]} out of range: X has {n} column(s), "
            f"positions 0 to {n - 1} (or -{n} to -1)"
        )
    return [columns[int(c)] if _is_position(c) else c for c in given]


def check_listed(lists: dict, columns: list, labels) -> None:
    """Refuse column lists that name a column X does not have, or name one column as two kinds.

    Parameters
    ----------
    lists : dict of str to list or None
        Each parameter's name and its columns, as :func:`internal_names` names them.
    columns : list of str
        X's columns as the tokenizer names them inside.
    labels : list or None
        The frame's column labels at fit; errors name the columns by them.

    Raises
    ------
    ValueError
        If a list names a column that X does not have, or two lists name the same column.
    """
    for name, listed in lists.items():
        unknown = [user_label(c, labels) for c in listed or [] if c not in columns]
        if unknown:
            raise ValueError(
                f"{name} names column(s) {unknown} that X does not have; X has {[user_label(c, labels) for c in columns]}"
            )
    given = [set(listed) for listed in lists.values() if listed is not None]
    both = set.intersection(*given) if len(given) > 1 else set()
    if both:
        shown = sorted((user_label(c, labels) for c in both), key=str)
        raise ValueError(f"column(s) {shown} are listed as both categorical and numeric")


def _is_label(column, labels: list) -> bool:
    try:
        return column in labels
    except (TypeError, ValueError):  # an array-like entry is no label
        return False


def _is_position(column) -> bool:
    return isinstance(column, numbers.Integral) and not isinstance(column, bool)


def check_same_columns(columns: list, fitted: list) -> None:
    """Raise naming the missing and unexpected columns unless ``columns`` are ``fitted``, in any order.

    Parameters
    ----------
    columns : list
        X's columns.
    fitted : list
        The columns seen in fit.

    Raises
    ------
    ValueError
        If a fitted column is missing or another one is there.
    """
    missing = [c for c in fitted if c not in columns]
    extra = [c for c in columns if c not in fitted]
    if missing or extra:
        parts = [f"missing column(s) {missing}"] if missing else []
        parts += [f"unexpected column(s) {extra}"] if extra else []
        raise ValueError(f"X does not have the columns seen in fit: {'; '.join(parts)}. Fitted columns: {fitted}")
