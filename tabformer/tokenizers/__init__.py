"""Tokenizers: scikit-learn transformers that turn raw inputs into token arrays for the shared
encoder, each describing the embedder its tokens need (``embedder_spec``)."""

from ._columns import UntrainedMissingWarning
from ._predict_checks import UnseenCategoryWarning
from .base import TOKENIZERS, BaseTokenizer, register_tokenizer
from .detect import infer_column_kinds
from .image import PatchTokenizer
from .mixed import MixedTokenizer
from .pretrained_text import PretrainedTextTokenizer, SentenceTokenizer
from .registry import make_tokenizer
from .tabular import TabularTokenizer
from .text import WordPieceTokenizer

__all__ = [
    "BaseTokenizer",
    "TabularTokenizer",
    "WordPieceTokenizer",
    "PretrainedTextTokenizer",
    "SentenceTokenizer",
    "PatchTokenizer",
    "MixedTokenizer",
    "infer_column_kinds",
    "TOKENIZERS",
    "register_tokenizer",
    "make_tokenizer",
    "UntrainedMissingWarning",
    "UnseenCategoryWarning",
]
