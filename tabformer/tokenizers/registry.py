"""Which tokenizer ``X`` gets: names (``tokenizer="wordpiece"``), instances (cloned) and
``"auto"``, which asks :mod:`tabformer.tokenizers.detect` what ``X`` holds.

This is the one place that dispatches on tokenizer classes; everything else asks a
tokenizer what it is (its ``kind``) or what it needs (its ``embedder_spec``).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
from sklearn.base import clone

from ._labels import column_list
from .base import TOKENIZERS, BaseTokenizer
from .detect import _string_column_kind, holds_images, infer_column_kind, is_word_lists, looks_like_images, looks_like_text
from .image import PatchTokenizer
from .mixed import MixedTokenizer
from .tabular import TabularTokenizer
from .text import WordPieceTokenizer

__all__ = ["make_tokenizer", "TOKENIZERS"]


def make_tokenizer(spec, X=None, params=None) -> BaseTokenizer:
    """Return an unfitted tokenizer for ``spec``: a name, ``"auto"`` or an instance.

    An instance is cloned, so fitting never mutates the user's object (and every CV
    fold starts from the same unfitted tokenizer). ``params`` are the routed
    ``tokenizer__*`` settings, applied to the result; under ``"auto"`` they also steer
    the choice: mixed-only settings (``text__*``, ``image__*``, ``table__*``,
    ``max_categories``, ``segment_dropout``) ask for a :class:`MixedTokenizer`.

    Parameters
    ----------
    spec : str or BaseTokenizer
        ``"auto"``, ``"mixed"``, a name in :data:`TOKENIZERS`, or a tokenizer instance.
    X : object, optional
        The training input, read by ``"auto"`` only: images get a :class:`PatchTokenizer`,
        texts (or word lists) a :class:`WordPieceTokenizer`, a DataFrame holding a text or
        image column a :class:`MixedTokenizer`, anything else a :class:`TabularTokenizer`.
    params : dict or None, default=None
        ``set_params`` arguments for the result.

    Returns
    -------
    tokenizer : BaseTokenizer
        Unfitted.

    Raises
    ------
    ValueError
        If ``spec`` is an unknown name, a parameter is invalid for the tokenizer, or
        ``"auto"`` finds text/image columns next to a column of unknown kind.
    TypeError
        If ``spec`` is neither a str nor a tokenizer.
    """
    params = dict(params or {})
    if isinstance(spec, str):
        if spec == "auto":
            tokenizer = _auto(X, params)
            params = _table_settings_to_template(tokenizer, params)
        elif spec == "mixed":
            tokenizer = _mixed_with_templates()
        elif spec in TOKENIZERS:
            tokenizer = TOKENIZERS[spec]()
        else:
            raise ValueError(f"unknown tokenizer {spec!r}; choose 'auto', one of {sorted(TOKENIZERS)}, or pass an instance")
    elif isinstance(spec, BaseTokenizer):
        tokenizer = clone(spec)
    else:
        raise TypeError(f"tokenizer must be a name or a tabformer tokenizer instance, got {type(spec).__name__}")
    return tokenizer.set_params(**params) if params else tokenizer


_MIXED_ONLY = ("text__", "image__", "table__", "max_categories", "segment_dropout", "transformers")


def _mixed_with_templates():
    # Templates rather than None, so tokenizer__image__patch_size etc. route.
    return MixedTokenizer(text=WordPieceTokenizer(), image=PatchTokenizer(), table=TabularTokenizer())


#: a plain table's settings: under "auto", a frame found to be mixed gives them to its table template
_TABLE_SETTINGS = frozenset(TabularTokenizer().get_params(deep=False))


def _auto(X, params):
    # Before text: a list of image file paths is also a list of str.
    if looks_like_images(X):
        return PatchTokenizer()
    # A flat list/Series of str is text; a list of word lists is pre-split text.
    if looks_like_text(X) or is_word_lists(X):
        return WordPieceTokenizer()
    # Columns named in categorical_columns/numeric_columns are the user's table columns, whatever
    # their strings look like: a zip code of 300 distinct values is not a text making X mixed.
    told = [c for kind in ("categorical", "numeric") for c in column_list(f"{kind}_columns", params.get(f"{kind}_columns"))]
    if isinstance(X, pd.DataFrame) and told:
        X = X.drop(columns=[column for column in told if column in X.columns])
    if any(key.startswith(_MIXED_ONLY) for key in params) or _has_text_or_images(X, params.get("max_categories", 100)):
        return _mixed_with_templates()
    return TabularTokenizer()


def _table_settings_to_template(tokenizer, params) -> dict:
    """``params`` with a plain table's settings (``numeric_embedding``, ``categorical_columns``...)
    routed to a mixed tokenizer's ``table`` template.

    Whether "auto" makes a frame mixed depends on its values (one column of job titles), so
    ``tokenizer__numeric_embedding="linear"`` from the docs failed on the Lending Club frame
    with "Invalid parameter 'numeric_embedding' for estimator MixedTokenizer".
    """
    if not isinstance(tokenizer, MixedTokenizer):
        return params
    return {f"table__{key}" if key in _TABLE_SETTINGS else key: value for key, value in params.items()}


def _has_text_or_images(X, max_categories=100) -> bool:
    """Whether a DataFrame holds a text or image column.

    A column whose kind cannot be told is left to the table tokenizer's own error (or its
    warning: a code column read as ints from one file and as strings from another), unless
    another column is text or images, or the column itself holds an image or strings that
    are text on their own: then the detection error is raised, since falling back to a
    table would silently turn that text, or those images' bytes, into categories (one
    number among 200 reviews made each review a category, "unseen" at predict).
    """
    if not isinstance(X, pd.DataFrame):
        return False
    found, errors = False, []
    for position in range(X.shape[1]):
        column = X.iloc[:, position]
        try:
            found |= infer_column_kind(column, max_categories) in ("text", "image")
        except ValueError as error:
            errors.append(error)
            found |= holds_images(column) or _strings_are_text(column, max_categories)
    if found and errors:
        raise errors[0]
    if found and not all(isinstance(c, str) for c in X.columns):
        raise ValueError(f"mixed inputs need str column names (they name the segments); X has columns {list(X.columns)[:5]}")
    return found


def _strings_are_text(column: pd.Series, max_categories: int) -> bool:
    """Whether the str cells of a column that also holds other values are text by detection's own rule."""
    if column.dtype != object:
        return False
    strings = Counter(value for value in column.tolist() if isinstance(value, str))
    try:
        return bool(strings) and _string_column_kind(strings, strings.total(), max_categories) == "text"
    except ValueError:  # mostly image paths: holds_images has answered
        return False
