"""The tagger's input checks: ``X`` and ``y`` as lists of word (tag) lists, and the words ``tokenizer__max_length`` cuts."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping, Set

import numpy as np
import pandas as pd
from scipy.sparse import issparse

from .._warnings import user_stacklevel

__all__ = ["check_class_types", "check_sentences", "check_sentence_weights", "check_tag_types", "warn_cut_words"]


def check_sentences(X, what="X") -> list:
    if issparse(X):
        raise TypeError(f"{what} is a sparse matrix; sparse input is not supported: pass a list of sentences (lists of words)")
    if isinstance(X, np.ndarray) and np.iscomplexobj(X):
        raise ValueError(f"Complex data not supported: {what} must be a list of sentences, each a list of words")
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise ValueError(f"{what} must be a list of sentences, each a list of words; got {type(X).__name__}")
    if isinstance(X, pd.DataFrame):  # iterating a frame gives its column names, not its rows
        if X.shape[1] != 1:
            name = repr(X.columns[0]) if X.shape[1] else "'column'"
            raise ValueError(
                f"{what} is a DataFrame of {X.shape[1]} columns {list(X.columns)}; pass its one column of "
                f"{'tag' if what == 'y' else 'word'} lists ({what}[{name}])"
            )
        X = X.iloc[:, 0]
    if isinstance(X, (Mapping, Set)):  # a dict iterates its keys, a set in an arbitrary order
        raise ValueError(
            f"{what} is a {type(X).__name__}; pass a list of {'tag lists' if what == 'y' else 'sentences'}, in order"
        )
    sentences = list(X)
    if not sentences:
        raise ValueError(f"{what} has 0 sentences; at least 1 is required")
    unit = "tags" if what == "y" else "words (str)"
    for i, words in enumerate(sentences):
        if words is None:
            raise ValueError(f"{what}[{i}] is None; every sentence must be a list of {unit} (an empty sentence is [])")
        if isinstance(words, (Mapping, Set)):
            why = "which has no order" if isinstance(words, Set) else "whose keys would be read"
            raise ValueError(f"{what}[{i}] is a {type(words).__name__}, {why}; pass the {unit} as a list, in order")
        if isinstance(words, str) or not hasattr(words, "__len__"):
            advice = "one tag per word" if what == "y" else "split the text into words first" if isinstance(words, str) else ""
            raise ValueError(f"{what}[{i}] must be a list of {unit}, got {type(words).__name__}{': ' * bool(advice)}{advice}")
    return [list(words) for words in sentences]


def _tag_kind(tag) -> str:
    """A tag's kind as its str would lose it: ``bool``, ``int``, ``float`` or ``str`` (numpy's scalars as Python's)."""
    if isinstance(tag, (bool, np.bool_)):
        return "bool"
    if isinstance(tag, numbers.Integral):
        return "int"
    if isinstance(tag, numbers.Real):
        return "float"
    return "str" if isinstance(tag, str) else type(tag).__name__


def check_tag_types(sentences: list, tags: list) -> None:
    """Refuse tags of more than one type, naming the first two tags that differ.

    Tags are compared as their str (``classes_``), so ``1`` and ``"1"`` became one tag and ``1`` and ``1.0``
    two, silently. The classifier refuses labels mixing str with other types the same way.

    Parameters
    ----------
    sentences : list of lists of str
        The words, for the message.
    tags : list of lists
        One tag per word, none missing.
    """
    first = None
    for i, row in enumerate(tags):
        for j, tag in enumerate(row):
            if first is None:
                first = (i, j, tag, _tag_kind(tag))
            elif _tag_kind(tag) != first[3]:
                i0, j0, tag0, kind0 = first
                raise ValueError(
                    f"y mixes tag types: y[{i}][{j}] (the tag of word {_plain(sentences[i][j])!r}) is {_tag_kind(tag)} "
                    f"({_plain(tag)!r}) where y[{i0}][{j0}] (of word {_plain(sentences[i0][j0])!r}) is {kind0} "
                    f"({_plain(tag0)!r}). Tags are compared as str, so 1 and '1' would be one tag, 1 and 1.0 two: make "
                    "every tag one type, e.g. [[str(tag) for tag in tags] for tags in y]"
                )


def check_class_types(classes: list) -> None:
    """Refuse ``partial_fit(classes=...)`` listing tags of more than one type, as :func:`check_tag_types` refuses y.

    Parameters
    ----------
    classes : list
        The tags ``partial_fit`` was given.
    """
    kinds = [_tag_kind(tag) for tag in classes]
    for tag, kind in zip(classes, kinds):
        if kind != kinds[0]:
            raise ValueError(
                f"classes mixes tag types: {_plain(classes[0])!r} is {kinds[0]} and {_plain(tag)!r} is {kind}. Tags are "
                "compared as str, so 1 and '1' would be one tag, 1 and 1.0 two: list every tag as one type"
            )


def _plain(value):
    """A numpy scalar as its Python value, for messages (``1``, not ``np.int64(1)``)."""
    return value.item() if isinstance(value, np.generic) else value


def check_sentence_weights(sample_weight) -> None:
    """Refuse per-word weights: numpy said "inhomogeneous shape", or "got 2D array" where sentences are equally long."""
    if isinstance(sample_weight, np.ndarray) and sample_weight.ndim > 1:
        found = f" has shape {sample_weight.shape}"
    else:
        rows = sample_weight if isinstance(sample_weight, (list, tuple, pd.Series)) else ()
        found = next((f"[{i}] holds {len(w)} numbers" for i, w in enumerate(rows) if np.ndim(w) > 0), None)
    if found:
        raise ValueError(
            f"sample_weight{found}: sample_weight is one number per sentence (each of its words counts that many times), "
            "not one per word"
        )


def warn_cut_words(tagger, sentences, batch, when: str) -> None:
    """Warn when ``tokenizer__max_length`` cut words off the end of sentences (their tags are never read)."""
    max_length = getattr(tagger.tokenizer_, "max_length", None)
    if max_length is None:  # a tokenizer of its own, without the setting
        return
    word_ids, full = batch["word_ids"], batch["attention_mask"].sum(axis=1) >= int(max_length) - 1
    tails = [words[int(word_ids[i].max(initial=-1)) + 1 :] for i, words in enumerate(sentences) if full[i]]
    tails = [tail for tail in tails if tail]
    if not tails:
        return
    # Words of no sub-word ("\x00", a zero-width space) past the end were not cut: they get default_tag_ at any length.
    # Each distinct word is tokenized once: tails are most of a long sentence, and their words repeat.
    distinct = list(dict.fromkeys(word for tail in tails for word in tail))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the [UNK] share was said of the whole sentences
        pieces = (tagger.tokenizer_.transform([[word] for word in distinct])["word_ids"] >= 0).any(axis=1)
    has_pieces = dict(zip(distinct, pieces.tolist()))
    cut = [n for n in (sum(has_pieces[word] for word in tail) for tail in tails) if n]
    if cut:
        fate = "are never trained on" if when == "fit" else f"get default_tag_ {tagger.default_tag_!r} without being read"
        warnings.warn(
            f"{len(cut)} of {len(sentences)} sentences are longer than tokenizer__max_length={max_length} sub-words "
            f"(CLS and [SEP] included): the {sum(cut)} words past it {fate}; raise tokenizer__max_length "
            "or split long sentences",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
