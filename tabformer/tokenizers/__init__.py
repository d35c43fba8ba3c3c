"""Tokenizers: turn raw inputs into token sequences for the shared encoder."""

from __future__ import annotations

from sklearn.base import clone

from .base import BaseTokenizer
from .tabular import TabularEmbedder, TabularTokenizer
from .text import TextEmbedder, WordPieceTokenizer, looks_like_text
from .image import PatchTokenizer, looks_like_images
from .detect import infer_column_kinds
from .mixed import MixedEmbedder, MixedTokenizer

__all__ = ["BaseTokenizer", "TabularTokenizer", "TabularEmbedder", "WordPieceTokenizer", "TextEmbedder", "PatchTokenizer", "MixedTokenizer", "MixedEmbedder", "infer_column_kinds", "TOKENIZERS", "make_tokenizer"]

#: names accepted by the estimators' ``tokenizer`` parameter
TOKENIZERS = {"tabular": TabularTokenizer, "table": TabularTokenizer, "wordpiece": WordPieceTokenizer, "text": WordPieceTokenizer, "patch": PatchTokenizer, "image": PatchTokenizer, "mixed": MixedTokenizer}


def make_tokenizer(spec, X=None) -> BaseTokenizer:
    """Return an unfitted tokenizer for ``spec``: a name, ``"auto"`` or an instance.

    An instance is cloned, so fitting never mutates the user's object (and every CV
    fold starts from the same unfitted tokenizer).
    """
    if isinstance(spec, str):
        if spec == "auto":
            # Before text: a list of image file paths is also a list of str.
            if looks_like_images(X):
                return PatchTokenizer()
            # A flat list/Series of str is text; a list of word lists is pre-split text.
            if looks_like_text(X) or _is_word_lists(X):
                return WordPieceTokenizer()
            if _has_text_or_images(X):
                # Templates rather than None, so tokenizer__image__patch_size etc. route.
                return MixedTokenizer(text=WordPieceTokenizer(), image=PatchTokenizer(), table=TabularTokenizer())
            return TabularTokenizer()
        if spec not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {spec!r}; choose 'auto', one of {sorted(TOKENIZERS)}, or pass an instance")
        return TOKENIZERS[spec]()
    if isinstance(spec, BaseTokenizer):
        return clone(spec)
    raise TypeError(f"tokenizer must be a name or a tabformer tokenizer instance, got {type(spec).__name__}")


def _is_word_lists(X) -> bool:
    if not isinstance(X, (list, tuple)) or not X:
        return False
    return isinstance(X[0], (list, tuple)) and all(isinstance(w, str) for w in X[0])


def _has_text_or_images(X) -> bool:
    """A DataFrame with at least one text or image column (detection errors are left to
    the table tokenizer, whose messages name the column)."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame) or not all(isinstance(c, str) for c in X.columns):
        return False
    try:
        kinds = infer_column_kinds(X)
    except ValueError:
        return False
    return any(kind in ("text", "image") for kind in kinds.values())
