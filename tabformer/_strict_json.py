"""Strict JSON for the files tabformer writes, with NaN and infinities kept exactly.

Python's :func:`json.dumps` writes a non-finite float as the bare words ``NaN``,
``Infinity`` and ``-Infinity``, which JSON does not have: other languages' parsers (and
``json.loads(..., parse_constant=...)``) reject the file. Here such a float is written as
the tagged object ``{"__type__": "float", "value": "nan"}`` (``"inf"``, ``"-inf"``), the tag
the saved folder's ``config.json`` uses too, and :func:`loads` turns it back into the float.
Files written before (with the bare words) still read: :func:`loads` accepts them.
"""

from __future__ import annotations

import json
import math

__all__ = ["dumps", "loads", "tag_nonfinite", "untag_nonfinite"]

_TAG = "__type__"


def tag_nonfinite(value):
    """``value`` (plain JSON values: dict, list, str, number, bool, None) with every non-finite float tagged.

    Parameters
    ----------
    value : object
        What :func:`json.loads` returns.

    Returns
    -------
    object
        The same structure, non-finite floats replaced by ``{"__type__": "float", "value": repr(x)}``.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else {_TAG: "float", "value": repr(float(value))}
    if isinstance(value, dict):
        return {key: tag_nonfinite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [tag_nonfinite(item) for item in value]
    return value


def untag_nonfinite(value):
    """The inverse of :func:`tag_nonfinite`: tagged floats back to ``float("nan")``, ``float("inf")``...

    Parameters
    ----------
    value : object
        What :func:`json.loads` returns for a file :func:`dumps` wrote.

    Returns
    -------
    object
    """
    if isinstance(value, dict):
        if value.get(_TAG) == "float" and set(value) == {_TAG, "value"}:
            return float(value["value"])
        return {key: untag_nonfinite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [untag_nonfinite(item) for item in value]
    return value


def dumps(obj, default=None, **kwargs) -> str:
    """``obj`` as strict JSON (no bare ``NaN``/``Infinity``): non-finite floats are tagged.

    Parameters
    ----------
    obj : object
        Anything :func:`json.dumps` writes with ``default``.
    default : callable, optional
        As :func:`json.dumps`'s: the JSON value of an object it has no type for.
    **kwargs
        More :func:`json.dumps` arguments (``indent``...).

    Returns
    -------
    str
    """
    # A first pass through json turns numpy scalars, tuples and ``default``'s answers into plain values
    # (np.float64, a float subclass, would otherwise reach the encoder untagged as NaN).
    plain = json.loads(json.dumps(obj, default=default))
    return json.dumps(tag_nonfinite(plain), allow_nan=False, **kwargs)


def loads(text: str):
    """What :func:`dumps` wrote (or a file with bare ``NaN``/``Infinity``, as tabformer wrote before), tags undone.

    Parameters
    ----------
    text : str

    Returns
    -------
    object
    """
    return untag_nonfinite(json.loads(text))
