"""WordPiece vocabularies: read from a ``vocab.txt``, or made reproducible after training.

``tokenizers``' trainer is not deterministic on its own (huggingface/tokenizers#1794): it
numbers the ``##c`` continuation pieces in hash-map order as it meets them, and those ids
break ties between equally frequent merges, so the token set could change from one fit to
the next. :func:`continuing_pieces` lists them for the trainer up front, sorted, and
:func:`canonical_vocab` renumbers the result, so equal texts give equal vocabularies with
equal ids. :func:`bert_normalizer` reads text as a ``tokenizer_config.json`` configures BERT to
(:func:`bert_settings` reads it, :func:`bert_config_normalizer` applies it to a ``tokenizer.json``).
:func:`backend_from_json` reads a fitted backend back, special tokens typed in a text read as text.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .base import SPECIAL_TOKENS

__all__ = [
    "backend_from_json",
    "bert_config_normalizer",
    "bert_normalizer",
    "bert_settings",
    "canonical_vocab",
    "continuing_pieces",
    "read_vocab",
]

#: the tokenizer classes (``tokenizer_class``, or the ``model_type`` that implies one) whose ``transformers``
#: ``__init__`` sets the BertNormalizer from ``tokenizer_config.json``, whatever ``tokenizer.json`` says
_BERT_CLASSES = ("BertTokenizer", "DistilBertTokenizer", "ElectraTokenizer")
_BERT_MODEL_TYPES = ("bert", "distilbert", "electra")


def backend_from_json(text: str):
    """A ``tokenizers.Tokenizer`` read from its JSON, which encodes a special token typed in a text as plain text.

    A ``tokenizer.json`` lists its special tokens (``[SEP]``, ``</s>``, ``<mask>``...) as added
    tokens, which the library matches in the raw text before anything else, whatever
    ``add_special_tokens`` says: a user's "a [SEP] b" became the separator's id, "[MASK]" the
    mask's, "[PAD]" a padding id inside the attention mask. ``encode_special_tokens``
    (``transformers``' ``split_special_tokens=True``) reads them as the characters they are;
    tabformer puts the special ids in itself. The flag is not saved in the JSON: it is set on
    every backend read. It covers the tokens the JSON flags special only: a pretrained
    model's own markers (``additional_special_tokens``) are unflagged when it is read
    (:func:`~tabformer.tokenizers.pretrained_text.renumber_tokenizer_json`), so they match as one id.

    Parameters
    ----------
    text : str
        A serialized ``tokenizers.Tokenizer`` (``Tokenizer.to_str()``, a ``tokenizer.json``).

    Returns
    -------
    tokenizers.Tokenizer
    """
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(text)
    backend.encode_special_tokens = True
    return backend


def bert_normalizer(lowercase, strip_accents=None, tokenize_chinese_chars=True):
    """BERT's text normaliser, with the settings of a ``tokenizer_config.json`` (BertTokenizerFast's).

    Parameters
    ----------
    lowercase : bool
        Lower-case the text (``do_lower_case``).
    strip_accents : bool or None, default=None
        Strip accents; ``None`` strips them exactly when lower-casing.
    tokenize_chinese_chars : bool, default=True
        Put spaces around CJK ideographs, so each is a word.

    Returns
    -------
    tokenizers.normalizers.BertNormalizer
    """
    from tokenizers import normalizers

    if strip_accents not in (None, True, False) or tokenize_chinese_chars not in (True, False):
        raise ValueError(
            "strip_accents must be a bool or None and tokenize_chinese_chars a bool; "
            f"got strip_accents={strip_accents!r}, tokenize_chinese_chars={tokenize_chinese_chars!r}"
        )
    return normalizers.BertNormalizer(
        lowercase=bool(lowercase),
        clean_text=True,
        handle_chinese_chars=bool(tokenize_chinese_chars),
        strip_accents=None if strip_accents is None else bool(strip_accents),
    )


def _read_json(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def bert_settings(folder: str) -> dict:
    """The normaliser settings of a folder's ``tokenizer_config.json``, read as ``BertTokenizerFast`` reads them.

    Parameters
    ----------
    folder : str
        A Hugging Face model folder; a missing ``tokenizer_config.json`` or key takes the class's default.

    Returns
    -------
    dict
        ``lowercase`` (``do_lower_case``, default True), ``strip_accents`` (default None: strip
        them when lower-casing) and ``tokenize_chinese_chars`` (default True).
    """
    config = _read_json(os.path.join(folder, "tokenizer_config.json"))
    return {
        "lowercase": bool(config.get("do_lower_case", True)),
        "strip_accents": config.get("strip_accents"),
        "tokenize_chinese_chars": bool(config.get("tokenize_chinese_chars", True)),
    }


def bert_config_normalizer(spec: dict, folder: str) -> dict:
    """``spec`` (a parsed ``tokenizer.json``) with its BertNormalizer set as ``tokenizer_config.json`` says.

    ``transformers``' BERT tokenizers (BERT, DistilBERT, ELECTRA) build their normaliser from
    ``do_lower_case``, ``strip_accents`` and ``tokenize_chinese_chars`` (the class defaults where
    ``tokenizer_config.json`` leaves one out), overriding ``tokenizer.json``'s where they disagree
    (transformers 4's ``BertTokenizerFast``; 5 rebuilds it). A folder whose files disagree must read
    text as ``AutoTokenizer`` does. The class is ``tokenizer_config.json``'s ``tokenizer_class``, else
    the one ``config.json``'s ``model_type`` implies; other classes, and other normalisers, keep the file's.

    Parameters
    ----------
    spec : dict
        A ``tokenizer.json`` as :func:`json.load` returns it; not modified.
    folder : str
        The folder holding it, with its ``tokenizer_config.json`` and ``config.json``.

    Returns
    -------
    dict
    """
    normalizer = spec.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        return spec
    name = _read_json(os.path.join(folder, "tokenizer_config.json")).get("tokenizer_class")
    if name is None:
        bert = _read_json(os.path.join(folder, "config.json")).get("model_type") in _BERT_MODEL_TYPES
    else:
        bert = str(name).removesuffix("Fast") in _BERT_CLASSES
    if not bert:
        return spec
    settings = bert_settings(folder)
    bert_normalizer(**settings)  # the same validation as a vocab.txt's settings
    normalizer = {
        **normalizer,
        "lowercase": settings["lowercase"],
        "strip_accents": settings["strip_accents"],
        "handle_chinese_chars": settings["tokenize_chinese_chars"],
    }
    return {**spec, "normalizer": normalizer}


def read_vocab(path):
    """Read ``vocab.txt`` (one token per line) into the tabformer special layout."""
    if os.path.isdir(path):
        path = os.path.join(path, "vocab.txt")
    with open(path, encoding="utf-8-sig") as handle:  # -sig: a byte-order mark is not part of the first token
        tokens = [line.rstrip("\r\n") for line in handle]
    while tokens and tokens[-1] == "":
        tokens.pop()
    position = {token: i for i, token in enumerate(tokens)}
    if len(position) < len(tokens):  # a repeated token would leave an id no line holds
        first = next(i for i, token in enumerate(tokens) if position[token] != i)
        token = tokens[first]
        raise ValueError(
            f"{path} lists the token {token!r} twice (lines {first + 1} and {position[token] + 1}); "
            "each token must appear once, its line number being its id"
        )
    missing = [t for t in SPECIAL_TOKENS if t not in position]
    if missing:
        raise ValueError(f"{path} lacks the special token(s) {missing}")
    order = list(range(len(tokens)))  # tabformer id -> vocab.txt line
    where = list(range(len(tokens)))  # vocab.txt line -> tabformer id
    for token, wanted in SPECIAL_TOKENS.items():
        current = where[position[token]]
        if current != wanted:
            line_at_wanted = order[wanted]
            order[wanted], order[current] = position[token], line_at_wanted
            where[position[token]], where[line_at_wanted] = wanted, current
    vocab = {tokens[line]: new_id for new_id, line in enumerate(order)}
    return vocab, np.asarray(order, dtype=np.int64)


def continuing_pieces(backend, texts) -> list:
    """Sorted ``"##c"`` for every character ``c`` of ``texts`` that can continue a word.

    The characters are the texts' distinct ones after ``backend``'s normalizer; one
    continues a word unless the pre-tokenizer splits it off (punctuation, CJK), tested as
    ``"a" + c + "a"``. Per distinct character, not per text: a few hundred calls.
    """
    pieces = set()
    for raw in set().union(*texts) if texts else ():
        normalized = backend.normalizer.normalize_str(f"a{raw}a")
        if len(backend.pre_tokenizer.pre_tokenize_str(normalized)) == 1:
            pieces.update(normalized[1:-1])
    return ["##" + character for character in sorted(pieces)]


def canonical_vocab(vocab: dict) -> dict:
    """``vocab`` renumbered: special tokens at their shared ids, then the others sorted."""
    rest = sorted(token for token in vocab if token not in SPECIAL_TOKENS)
    return {**SPECIAL_TOKENS, **{token: len(SPECIAL_TOKENS) + i for i, token in enumerate(rest)}}
