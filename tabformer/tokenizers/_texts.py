"""Checks on the texts and word lists a text tokenizer reads, naming the offending row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .detect import is_missing

__all__ = ["check_strings", "check_words"]


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
