"""Tokenizers: turn raw inputs into token sequences for the shared encoder."""

from __future__ import annotations

from sklearn.base import clone

from .base import BaseTokenizer
from .tabular import TabularEmbedder, TabularTokenizer

__all__ = ["BaseTokenizer", "TabularTokenizer", "TabularEmbedder", "TOKENIZERS", "make_tokenizer"]

#: names accepted by the estimators' ``tokenizer`` parameter
TOKENIZERS = {"tabular": TabularTokenizer, "table": TabularTokenizer}


def make_tokenizer(spec, X=None) -> BaseTokenizer:
    """Return an unfitted tokenizer for ``spec``: a name, ``"auto"`` or an instance.

    An instance is cloned, so fitting never mutates the user's object (and every CV
    fold starts from the same unfitted tokenizer).
    """
    if isinstance(spec, str):
        if spec == "auto":
            return TabularTokenizer()
        if spec not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {spec!r}; choose 'auto', one of {sorted(TOKENIZERS)}, or pass an instance")
        return TOKENIZERS[spec]()
    if isinstance(spec, BaseTokenizer):
        return clone(spec)
    raise TypeError(f"tokenizer must be a name or a tabformer tokenizer instance, got {type(spec).__name__}")
