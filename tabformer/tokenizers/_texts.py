"""Checks on the texts and word lists a text tokenizer reads, naming the offending row."""

from __future__ import annotations

import contextvars
import warnings

import numpy as np
import pandas as pd

from .._warnings import user_stacklevel
from ._columns import gathering_warnings, warn_once
from .base import SEP, UNK
from .detect import is_missing

__all__ = ["UNKNOWN_SHARE", "check_strings", "check_words", "in_text_columns", "warn_truncated", "warn_unread"]

#: ``(columns, routing name)`` MixedTokenizer is tokenizing: its text tokenizer is handed a bare list, so without this the
#: warnings named no column, and advised tokenizer__max_length, which MixedTokenizer refuses (it is <name>__max_length)
_COLUMNS = contextvars.ContextVar("tabformer_text_columns", default=None)

#: warn when more than this share of the sub-words are [UNK]: English tweets with emoji read 1-5% under MiniLM's
#: vocabulary, Thai or Arabic under an English one 60-100% (each word or character outside it is one [UNK])
UNKNOWN_SHARE = 0.2


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


def in_text_columns(columns, call, name="text"):
    """``call()``, with the text warnings it raises naming ``columns`` and the setting ``tokenizer__<name>__max_length``.

    ``name`` is the routing's: ``"text"`` under detection, the user's own under ``transformers=[(name, ...)]``.
    """
    token = _COLUMNS.set((list(columns), name))
    try:
        return call()
    finally:
        _COLUMNS.reset(token)


def _where(columns) -> tuple[str, str]:
    """`` in column(s) [...]`` (those of :func:`in_text_columns` first) and the setting that raises ``max_length``."""
    framed = _COLUMNS.get()
    columns = framed[0] if framed is not None else columns
    setting = f"tokenizer__{framed[1]}__max_length" if framed is not None else "tokenizer__max_length"
    return (f" in column(s) {list(columns)}" if columns is not None else ""), setting


def warn_truncated(needed, budget: int, max_length: int, columns=None) -> None:
    """Warn when texts were cut to ``max_length``: their ends are never read (the tagger counts its words itself).

    ``needed`` holds each row's full length without the CLS (its sub-words and [SEP]s), ``budget`` the room for them.
    """
    over = [n for n in needed if n > budget]
    if over:
        where, setting = _where(columns)
        if gathering_warnings() is not None:  # a predict in chunks: one warning for the whole input, not one per chunk
            warn_once(
                f"texts{where} longer than max_length={max_length} sub-words (CLS and [SEP] included) are truncated and "
                f"their ends are never read; raise {setting} (up to the encoder's positions) or split long texts"
            )
            return
        warnings.warn(
            f"{len(over)} of {len(needed)} texts{where} are longer than max_length={max_length} sub-words (CLS and "
            f"[SEP] included; the longest has {max(over) + 1}): they are truncated and their ends are never read; "
            f"raise {setting} (up to the encoder's positions) or split long texts",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def warn_unread(needed, rows, budget: int, max_length: int, columns=None, trained: bool = False) -> None:
    """Warn about what the model will not read: texts past ``max_length`` (:func:`warn_truncated`) and [UNK] sub-words.

    ``rows`` holds each row's ``(ids, segment ids)`` as encoded; a vocabulary that does not hold the texts' script or
    language reads them as [UNK] (one per unknown word), which the model cannot tell apart, silently before.
    ``trained``: the vocabulary was learned from fit's texts, so the advice is to fit on such texts, not to learn one.
    """
    warn_truncated(needed, budget, max_length, columns)
    unknown = np.array([ids.count(UNK) for ids, _ in rows])
    pieces = np.array([len(ids) - ids.count(SEP) for ids, _ in rows])
    if not pieces.sum() or unknown.sum() <= UNKNOWN_SHARE * pieces.sum():
        return
    where, _ = _where(columns)
    # A vocabulary already learned from fit's texts (tokenizer='wordpiece'): advising that setting changed nothing
    build = (
        "or fit on texts of that language or script too: the vocabulary (tokenizer='wordpiece') was learned from fit's texts"
        if trained
        else "or tokenizer='wordpiece' to build a vocabulary from these texts"
    )
    advice = (
        "the model cannot tell them apart. Are the texts in a language or script the vocabulary was not built for? "
        f"Use weights trained on it (from_pretrained), {build}"
    )
    if gathering_warnings() is not None:  # a predict in chunks: one warning for the whole input
        share = f"more than {UNKNOWN_SHARE:.0%}"
        warn_once(f"{share} of the sub-words of the texts{where} are [UNK], not in the vocabulary: {advice}")
        return
    worst = int(np.argmax(unknown / np.maximum(pieces, 1)))
    warnings.warn(
        f"{unknown.sum() / pieces.sum():.0%} of the sub-words of the texts{where} are [UNK], not in the vocabulary "
        f"(row {worst}: {unknown[worst]} of {pieces[worst]}): {advice}",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
