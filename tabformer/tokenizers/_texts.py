"""Checks on the texts and word lists a text tokenizer reads, naming the offending row."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .._warnings import user_stacklevel
from ._columns import gathering_warnings, warn_once
from .detect import is_missing

__all__ = ["check_strings", "check_words", "warn_truncated"]


def check_strings(values, where: str) -> list:
    values = list(values)
    missing = [i for i, v in enumerate(values) if is_missing(v)]
    if missing:
        raise ValueError(
            f"{where} holds missing text (None/NaN) at row(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}; "
            "replace it with '' (an empty text, encoded as [SEP] alone) or drop those rows"
        )
    wrong = [(i, type(v).__name__) for i, v in enumerate(values) if not isinstance(v, str)]
    if wrong:
        raise ValueError(f"{where} must hold str; row {wrong[0][0]} is a {wrong[0][1]}")
    return values


def check_words(values, where: str) -> list:
    out = []
    for i, words in enumerate(values):
        if isinstance(words, str) or not isinstance(words, (list, tuple, np.ndarray, pd.Series)):
            raise ValueError(f"{where}: row {i} must be a list of words, got {type(words).__name__}")
        words = list(words)
        bad = [w for w in words if not isinstance(w, str)]
        if bad:
            raise ValueError(f"{where}: row {i} holds a non-str word {bad[0]!r}")
        out.append(words)
    return out


def warn_truncated(needed, budget: int, max_length: int, columns=None) -> None:
    """Warn when texts were cut to ``max_length``: their ends are never read (the tagger counts its words itself).

    ``needed`` holds each row's full length without the CLS (its sub-words and [SEP]s), ``budget`` the room for them.
    """
    over = [n for n in needed if n > budget]
    if over:
        where = f" in column(s) {list(columns)}" if columns is not None else ""
        if gathering_warnings() is not None:  # a predict in chunks: one warning for the whole input, not one per chunk
            warn_once(
                f"texts{where} longer than max_length={max_length} sub-words (CLS and [SEP] included) are truncated and "
                "their ends are never read; raise tokenizer__max_length (up to the encoder's positions) or split long texts"
            )
            return
        warnings.warn(
            f"{len(over)} of {len(needed)} texts{where} are longer than max_length={max_length} sub-words (CLS and "
            f"[SEP] included; the longest has {max(over) + 1}): they are truncated and their ends are never read; "
            "raise tokenizer__max_length (up to the encoder's positions) or split long texts",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
