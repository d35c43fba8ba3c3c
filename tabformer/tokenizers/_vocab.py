"""WordPiece vocabularies: read from a ``vocab.txt``, or made reproducible after training.

``tokenizers``' trainer is not deterministic on its own (huggingface/tokenizers#1794): it
numbers the ``##c`` continuation pieces in hash-map order as it meets them, and those ids
break ties between equally frequent merges, so the token set could change from one fit to
the next. :func:`continuing_pieces` lists them for the trainer up front, sorted, and
:func:`canonical_vocab` renumbers the result, so equal texts give equal vocabularies with
equal ids. :func:`bert_normalizer` reads text as a ``tokenizer_config.json`` configures BERT to
(:func:`bert_settings` reads it, :func:`bert_config_normalizer` applies it to a ``tokenizer.json``).
:func:`backend_from_json` reads a fitted backend back, special tokens typed in a text read as text.
:func:`read_vocab` also reads the tokens a ``tokenizer_config.json`` beside the ``vocab.txt`` adds
(``added_tokens_decoder``: an entity marker added with ``add_special_tokens``), which
:func:`with_added_tokens` makes the backend match as one id each, as ``transformers`` does; those past
the model's word-embedding rows (``config.json``'s ``vocab_size``: ``add_tokens`` without ``resize_token_embeddings``)
are left out with a warning and read as ordinary text, as they were before they were read.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from .._warnings import user_stacklevel
from .base import SPECIAL_TOKENS

__all__ = [
    "backend_from_json",
    "bert_config_normalizer",
    "bert_normalizer",
    "bert_settings",
    "canonical_vocab",
    "continuing_pieces",
    "read_vocab",
    "with_added_tokens",
]

#: the flags of an added token (``tokenizers.AddedToken``'s), as ``added_tokens_decoder`` writes them
_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized")

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


def _added_tokens(folder: str, tokens: list, where: str) -> list:
    """``tokenizer_config.json``'s ``added_tokens_decoder`` beside a ``vocab.txt`` of ``tokens`` (or, without one, a
    legacy ``added_tokens.json``): the added tokens tabformer does not place itself (the five specials), as dicts with
    ``id`` and ``content``.

    Those past the file's lines extend ``tokens`` (in place), in id order; one at a line's id must be that line.
    Those past the model's word-embedding rows (``config.json``'s ``vocab_size``: added without
    ``resize_token_embeddings``) are left out with a warning, read as ordinary text as before tabformer read them.
    """
    path = os.path.join(folder, "tokenizer_config.json")
    decoder, source = _read_json(path).get("added_tokens_decoder") or {}, f"{path}: added_tokens_decoder"
    if not decoder and os.path.exists(legacy := os.path.join(folder, "added_tokens.json")):
        decoder, source = _legacy_added_tokens(folder, legacy), legacy
    added, n_lines = [], len(tokens)
    for key, entry in sorted(decoder.items(), key=lambda item: int(item[0])):
        token = {"content": entry} if isinstance(entry, str) else dict(entry)  # an AddedToken's dict, or its text
        token["id"], content = int(key), token.get("content")
        if not isinstance(content, str) or not content:
            raise ValueError(f"{source}'s entry {key} has no token text (content), got {entry!r}")
        if token["id"] < n_lines and tokens[token["id"]] != content:
            raise ValueError(
                f"{source} puts {content!r} at id {token['id']}, which is {tokens[token['id']]!r} "
                f"in {where}; an added token below {n_lines} must be the line at its id"
            )
        if token["id"] >= n_lines:
            if token["id"] != len(tokens) or content in tokens:
                why = "is a line of " + where if content in tokens else f"leaves ids {len(tokens)}..{token['id'] - 1} empty"
                raise ValueError(
                    f"{source}'s {content!r} at id {token['id']} {why}; tokens added past "
                    f"{where}'s {n_lines} lines must take the ids that follow, one each"
                )
            tokens.append(content)
        if content not in SPECIAL_TOKENS:  # the five are tabformer's to place; typed in a text they are text
            added.append(token)
    return _within_embeddings(folder, tokens, n_lines, added, source)


def _legacy_added_tokens(folder: str, path: str) -> dict:
    """``added_tokens.json`` (``{token: id}``, what ``transformers`` before 4.34 saved) in ``added_tokens_decoder``'s form.

    Flags as ``transformers`` gives such tokens: a token the folder lists as special (``additional_special_tokens`` or
    ``extra_special_tokens`` of ``special_tokens_map.json`` or ``tokenizer_config.json``) matches the text as typed,
    the others the normalised (lower-cased) text.
    """
    encoder = _read_json(path)
    bad = [item for item in getattr(encoder, "items", list)() if not isinstance(item[1], int) or isinstance(item[1], bool)]
    if not isinstance(encoder, dict) or bad:
        raise ValueError(f"{path}: expected a JSON object of token -> integer id, got {(bad[:1] or [encoder])[0]!r}")
    specials = set()
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        settings = _read_json(os.path.join(folder, name))
        for key in ("additional_special_tokens", "extra_special_tokens"):
            listed = settings.get(key) or []
            specials.update(t if isinstance(t, str) else t.get("content") for t in (listed if isinstance(listed, list) else []))
    return {
        str(index): {
            "content": token,
            "lstrip": False,
            "rstrip": False,
            "single_word": False,
            "normalized": token not in specials,
        }
        for token, index in encoder.items()
    }


def _within_embeddings(folder: str, tokens: list, n_lines: int, added: list, source: str) -> list:
    """``added`` without the tokens past the model's word-embedding rows (``config.json``'s ``vocab_size``), warned
    about and cut from ``tokens`` (in place): ``add_tokens`` without ``resize_token_embeddings`` leaves them no row."""
    rows = _read_json(os.path.join(folder, "config.json")).get("vocab_size")
    if not isinstance(rows, int) or isinstance(rows, bool) or len(tokens) <= max(rows, n_lines):
        return added  # a vocab.txt longer than the rows is the weights loader's to refuse
    cut = max(rows, n_lines)
    warnings.warn(
        f"{source} adds {tokens[cut:]} at ids {cut}..{len(tokens) - 1}, past the model's {rows} "
        f"word-embedding rows (config.json's vocab_size; tokens added without resize_token_embeddings): they are left "
        "out and read as ordinary text, as before tabformer read added tokens",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    del tokens[cut:]
    return [token for token in added if token["id"] < cut]


def read_vocab(path):
    """Read ``vocab.txt`` (one token per line) into the tabformer special layout.

    Parameters
    ----------
    path : str
        A ``vocab.txt``, or a folder holding one. The tokens that a ``tokenizer_config.json``
        beside it adds (``added_tokens_decoder``) join the vocabulary at their ids.

    Returns
    -------
    vocab : dict of str to int
        Token -> tabformer id.
    source_ids : ndarray of shape (n_tokens,)
        The file's id (line, or added id) behind each tabformer id.
    added : list of dict
        The added tokens (``content``, tabformer ``id`` and their flags), for :func:`with_added_tokens`.
    """
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
    n_lines = len(tokens)
    added = _added_tokens(os.path.dirname(path), tokens, path)
    position.update({token: i for i, token in enumerate(tokens[n_lines:], n_lines)})
    missing = [t for t in SPECIAL_TOKENS if t not in position]
    if missing:
        raise ValueError(f"{path} lacks the special token(s) {missing}")
    order = list(range(len(tokens)))  # tabformer id -> vocab.txt line (or added id)
    where = list(range(len(tokens)))  # vocab.txt line -> tabformer id
    for token, wanted in SPECIAL_TOKENS.items():
        current = where[position[token]]
        if current != wanted:
            line_at_wanted = order[wanted]
            order[wanted], order[current] = position[token], line_at_wanted
            where[position[token]], where[line_at_wanted] = wanted, current
    vocab = {tokens[line]: new_id for new_id, line in enumerate(order)}
    added = [{**token, "id": where[token["id"]]} for token in added]
    return vocab, np.asarray(order, dtype=np.int64), added


def with_added_tokens(backend, added: list):
    """``backend`` matching each added token (:func:`read_vocab`'s) as one id, before it splits words.

    They are added unflagged as special, as a ``tokenizer.json``'s own markers are
    (:func:`~tabformer.tokenizers.pretrained_text.renumber_tokenizer_json`): the backend reads
    a special token typed in a text as its characters (:func:`backend_from_json`).

    Parameters
    ----------
    backend : tokenizers.Tokenizer
        A WordPiece backend whose vocabulary holds the added tokens at their ids.
    added : list of dict

    Returns
    -------
    tokenizers.Tokenizer
        ``backend``, the tokens added.
    """
    from tokenizers import AddedToken

    if added:
        flags = [{flag: bool(token[flag]) for flag in _ADDED_FLAGS if flag in token} for token in added]
        backend.add_tokens([AddedToken(token["content"], special=False, **flag) for token, flag in zip(added, flags)])
    for token in added:
        if backend.token_to_id(token["content"]) != token["id"]:  # pragma: no cover - guards the id contract
            raise RuntimeError(f"added token {token['content']!r} got id {backend.token_to_id(token['content'])}")
    return backend


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
