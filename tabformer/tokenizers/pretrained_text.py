"""Text through a pretrained model's own ``tokenizer.json`` (WordPiece, byte-level BPE, Unigram).

Hugging Face folders ship their tokenizer as one ``tokenizer.json`` that the ``tokenizers``
library reads whole: normalizer, pre-tokenizer, model and decoder. :class:`PretrainedTextTokenizer`
loads it, renumbers the vocabulary so that the model's five special tokens (``<pad>``, ``<unk>``,
``<s>``, ``</s>``, ``<mask>`` for RoBERTa; ``[PAD]``... for BERT) take tabformer's shared ids
0..4, and records the permutation in ``source_ids_`` so pretrained embedding rows can follow it,
exactly as :class:`~tabformer.tokenizers.WordPieceTokenizer` does for a ``vocab.txt``. Everything
after the ids (pairs, truncation, pre-split words, padding) is WordPieceTokenizer's.
"""

from __future__ import annotations

import json
import numbers
import os
import warnings

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from ._vocab import _read_json, backend_from_json, bert_config_normalizer
from .base import SPECIAL_TOKENS, register_tokenizer
from .text import WordPieceTokenizer

__all__ = ["PretrainedTextTokenizer", "special_tokens_of", "renumber_tokenizer_json"]

#: tabformer role -> key of that token in a Hugging Face ``tokenizer_config.json``
_ROLE_KEYS = {"[PAD]": "pad_token", "[UNK]": "unk_token", "[CLS]": "cls_token", "[SEP]": "sep_token", "[MASK]": "mask_token"}
#: the two spellings of the special tokens in the wild, tried when the folder does not name them
_CONVENTIONS = (
    {"[PAD]": "[PAD]", "[UNK]": "[UNK]", "[CLS]": "[CLS]", "[SEP]": "[SEP]", "[MASK]": "[MASK]"},
    {"[PAD]": "<pad>", "[UNK]": "<unk>", "[CLS]": "<s>", "[SEP]": "</s>", "[MASK]": "<mask>"},
)


def _token_text(value):
    # tokenizer_config.json writes a special token as a str or as an AddedToken dict.
    return value.get("content") if isinstance(value, dict) else value


def special_tokens_of(folder: str, vocab: dict) -> dict:
    """The folder's five special tokens, by tabformer role (``"[CLS]"`` -> ``"<s>"``...).

    Read from ``special_tokens_map.json`` then ``tokenizer_config.json``; roles they leave
    out fall back to the BERT or the RoBERTa spelling, whichever the vocabulary holds.

    Parameters
    ----------
    folder : str
        A Hugging Face model folder.
    vocab : dict of str to int
        The tokenizer's vocabulary (added tokens included).

    Returns
    -------
    dict of str to str

    Raises
    ------
    ValueError
        If a role has no token in the vocabulary.
    """
    named = {}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):  # the map wins: read last
        config = _read_json(os.path.join(folder, name))
        named.update({role: _token_text(config[key]) for role, key in _ROLE_KEYS.items() if config.get(key)})
    out = {}
    for role in SPECIAL_TOKENS:
        candidates = [named[role]] if role in named else [convention[role] for convention in _CONVENTIONS]
        found = [token for token in candidates if token in vocab]
        if not found:
            raise ValueError(
                f"{folder}: no {_ROLE_KEYS[role]} in the tokenizer's vocabulary (tried {candidates}); "
                f"tabformer needs a pad, unk, cls, sep and mask token"
            )
        out[role] = found[0]
    return out


def _full_vocab(spec: dict) -> dict:
    model = spec["model"]
    if model["type"] == "Unigram":
        vocab = {piece: i for i, (piece, _score) in enumerate(model["vocab"])}
    elif model["type"] in ("WordPiece", "BPE", "WordLevel"):
        vocab = dict(model["vocab"])
    else:
        raise ValueError(f"tokenizer.json model type {model['type']!r} is not supported (WordPiece, BPE, Unigram, WordLevel)")
    vocab.update({token["content"]: token["id"] for token in spec.get("added_tokens", [])})
    return vocab


def renumber_tokenizer_json(spec: dict, specials: dict) -> tuple[dict, np.ndarray]:
    """``spec`` (a parsed ``tokenizer.json``) with its ids renumbered to tabformer's special layout.

    Each special token swaps places with the token holding its tabformer id, so the other
    ids barely move. Padding, truncation and the post-processor (which adds the model's own
    ``[CLS]``; the encoder prepends its own) are dropped. Added tokens flagged special that
    play none of the five roles (an ``additional_special_tokens`` entity marker such as
    ``<ent>``) lose the flag: the backend reads a special token typed in a text as its
    characters (:func:`~tabformer.tokenizers._vocab.backend_from_json`), which is meant for
    the five, while a checkpoint's own markers must match as one id, as in ``transformers``.

    Parameters
    ----------
    spec : dict
        A ``tokenizer.json`` as :func:`json.load` returns it.
    specials : dict of str to str
        Tabformer role -> the token playing it (:func:`special_tokens_of`).

    Returns
    -------
    spec : dict
        A renumbered copy; ``Tokenizer.from_str(json.dumps(spec))`` reads it.
    source_ids : ndarray of shape (n_tokens,)
        Original id of each new id.

    Raises
    ------
    ValueError
        If the ids are not ``0..n_tokens-1`` or the model type is unsupported.
    """
    vocab = _full_vocab(spec)
    n = len(vocab)
    if sorted(vocab.values()) != list(range(n)):
        raise ValueError(f"tokenizer.json ids are not 0..{n - 1} without gaps; tabformer cannot renumber them")
    order = np.arange(n)  # new id -> old id
    where = np.arange(n)  # old id -> new id
    for role, wanted in SPECIAL_TOKENS.items():
        old = vocab[specials[role]]
        current = where[old]
        if current != wanted:
            displaced = order[wanted]
            order[wanted], order[current] = old, displaced
            where[old], where[displaced] = wanted, current
    spec = json.loads(json.dumps(spec))  # a deep copy we may edit
    model = spec["model"]
    if model["type"] == "Unigram":
        model["vocab"] = [model["vocab"][old] for old in order]
        if model.get("unk_id") is not None:
            model["unk_id"] = int(where[model["unk_id"]])
    else:
        model["vocab"] = {token: int(where[old]) for token, old in model["vocab"].items()}
    roles = set(specials.values())
    for token in spec.get("added_tokens", []):
        token["id"] = int(where[token["id"]])
        if token["content"] not in roles:  # matched in the raw text as transformers does; see above
            token["special"] = False
    spec["post_processor"] = spec["padding"] = spec["truncation"] = None
    return spec, order


def _read_spec(path: str) -> dict:
    """The parsed ``tokenizer.json`` at ``path`` (a file or a folder); a folder with only
    ``vocab.json`` + ``merges.txt`` gives the byte-level BPE they describe (RoBERTa's settings)."""
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "tokenizer.json")):
        vocab, merges = os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")
        if os.path.exists(vocab) and os.path.exists(merges):
            from tokenizers import ByteLevelBPETokenizer

            return json.loads(ByteLevelBPETokenizer(vocab, merges)._tokenizer.to_str())
    path = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
    if not os.path.exists(path):
        raise ValueError(f"tokenizer_file {path!r} does not exist (nor vocab.json + merges.txt beside it)")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@register_tokenizer("pretrained_text")
class PretrainedTextTokenizer(WordPieceTokenizer):
    """Texts to ids with a pretrained model's ``tokenizer.json``; see the module docstring.

    Parameters
    ----------
    tokenizer_file : str or path-like
        A ``tokenizer.json``, or a Hugging Face folder holding one, or else a byte-level BPE's
        ``vocab.json`` and ``merges.txt`` (RoBERTa's slow-tokenizer files); the folder's
        ``tokenizer_config.json``/``special_tokens_map.json`` then name the special tokens, and a
        BERT tokenizer's ``do_lower_case`` there wins over ``tokenizer.json``'s, as in ``transformers``.
    special_tokens : dict or None, default=None
        Tabformer role (``"[PAD]"``, ``"[UNK]"``, ``"[CLS]"``, ``"[SEP]"``, ``"[MASK]"``) -> the
        token playing it; ``None`` reads them from the folder, else tries the BERT and the
        RoBERTa spellings.
    max_length : int, default=128
        Longest sequence the encoder sees, its CLS and every separator included.
    text_columns : list of str or None, default=None
        DataFrame input: the one or two text columns to read.
    token_dropout : float, default=0.0
        Training only: probability that a real sub-word becomes the mask token.

    Attributes
    ----------
    vocab_size_ : int
    source_ids_ : ndarray of shape (vocab_size,)
        The ``tokenizer.json`` id behind each tabformer id.
    tokenizer_json_ : str
        The renumbered ``tokenizers`` model.
    n_features_in_ : int
        1 for single texts, 2 for pairs.

    Examples
    --------
    >>> tok = PretrainedTextTokenizer("roberta-folder/").fit(["a text"])  # doctest: +SKIP
    >>> tok.transform(["hello world"])["input_ids"]  # doctest: +SKIP
    array([[31414, 232, 3]])
    """

    def __init__(self, tokenizer_file=None, special_tokens=None, max_length=128, text_columns=None, token_dropout=0.0):
        self.tokenizer_file = tokenizer_file
        self.special_tokens = special_tokens
        self.max_length = max_length
        self.text_columns = text_columns
        self.token_dropout = token_dropout

    def fit(self, X, y=None):
        """Read ``tokenizer_file`` (``X`` only sets the number of text columns).

        Parameters
        ----------
        X : list/Series of str, DataFrame with 1-2 text columns, or list of word lists
        y : ignored

        Returns
        -------
        self : PretrainedTextTokenizer

        Raises
        ------
        ValueError
            If ``max_length`` is invalid, the file is missing or a special token is not found.
        """
        if not isinstance(self.max_length, numbers.Integral) or self.max_length < 3:
            raise ValueError(f"max_length must be an int >= 3 (CLS, one token, SEP), got {self.max_length!r}")
        if self.tokenizer_file is None:
            raise ValueError("PretrainedTextTokenizer needs tokenizer_file: a tokenizer.json or a folder holding one")
        path = os.fspath(self.tokenizer_file)
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        first, second, _ = self._parts(X, fitting=True)
        self._set_columns(second)  # a pair needs max_length >= 5 here too: at 4 the first text was cut to nothing
        spec = bert_config_normalizer(_read_spec(path), folder)  # tokenizer_config.json's do_lower_case wins, as in HF
        specials = self.special_tokens or special_tokens_of(folder, _full_vocab(spec))
        spec, self.source_ids_ = renumber_tokenizer_json(spec, specials)
        self.tokenizer_json_ = json.dumps(spec, ensure_ascii=False)
        backend = self._backend_cache = backend_from_json(self.tokenizer_json_)
        self.vocab_size_ = backend.get_vocab_size()
        return self

    def transform(self, X):
        """Encode ``X`` as :meth:`WordPieceTokenizer.transform` does.

        Pre-split words (tagging) through a byte-level BPE (RoBERTa) get a space before
        every word, the first included, as ``add_prefix_space=True`` does in ``transformers``:
        inside a sentence a word is always preceded by one, and that is the form its ids had
        in pretraining.

        Parameters
        ----------
        X : list/Series of str, DataFrame with 1-2 text columns, or list of word lists

        Returns
        -------
        batch : dict of ndarray
        """
        one_column = isinstance(X, pd.Series) or (isinstance(X, np.ndarray) and X.ndim == 1)
        rows = X if isinstance(X, (list, tuple)) else X.tolist() if one_column else []
        first = next((row for row in rows if row is not None), None)
        prefixed = self._prefix_space_json() if isinstance(first, (list, tuple, np.ndarray)) else None
        if prefixed is None:
            return super().transform(X)
        plain = self._backend()
        self._backend_cache = backend_from_json(prefixed)
        try:
            return super().transform(X)
        finally:
            self._backend_cache = plain

    def _prefix_space_json(self):
        """The fitted model with ``add_prefix_space=True`` in its byte-level pre-tokenizer; None if it has none to set."""
        spec = json.loads(self.tokenizer_json_)
        pre = spec.get("pre_tokenizer") or {}
        levels = [p for p in ([pre] + pre.get("pretokenizers", [])) if p.get("type") == "ByteLevel"]
        if not levels or all(level.get("add_prefix_space") for level in levels):
            return None
        for level in levels:
            level["add_prefix_space"] = True
        return json.dumps(spec, ensure_ascii=False)


@register_tokenizer("sentence")
class SentenceTokenizer(WordPieceTokenizer):
    """Texts as sub-words learned from the data *and* as a pretrained model's ids: the text
    columns of a mixed DataFrame when the default text weights are installed.

    The sub-words are :class:`WordPieceTokenizer`'s (a vocabulary fitted on the column);
    the pretrained model's tokenizer (``stem_folder``) encodes the same texts for its
    frozen encoder, whose mean-pooled sentence embedding
    (:class:`~tabformer.nn.embedders.sentence.SentenceEmbedder`) becomes one more token in
    front of the words. The estimator copies the pretrained weights in after building.

    Parameters
    ----------
    stem_folder : str or path-like
        The pretrained model's Hugging Face folder (its ``tokenizer.json`` is read).
    encoder_config : dict
        The pretrained encoder's ``TransformerEncoder.config``: the stem's architecture.
    sentence_dropout : float, default=0.0
        Training only: probability of masking a row's sentence token, so that the words
        learn to carry the answer too.
    vocab_size, lowercase, max_length, min_frequency, vocab_file, text_columns, token_dropout
        As in :class:`WordPieceTokenizer`, for the sub-words; ``max_length`` also
        truncates the pretrained model's ids.
    strip_accents, tokenize_chinese_chars
        As in :class:`WordPieceTokenizer`, for the sub-words; the pretrained model's ids keep
        the normalisation of its own ``tokenizer.json``.

    Attributes
    ----------
    stem_state_ : dict
        The fitted attributes of the pretrained model's tokenizer (a
        :class:`PretrainedTextTokenizer`: ``vocab_size_``, ``tokenizer_json_``...).

    Examples
    --------
    >>> tok = SentenceTokenizer(minilm_folder, encoder_config=config).fit(["a text"])  # doctest: +SKIP
    >>> sorted(tok.transform(["a text"]))  # doctest: +SKIP
    ['attention_mask', 'input_ids', 'stem_rows', 'token_type_ids']
    """

    #: the tokens the embedder puts in front of the words (the sentence embedding), as explanations label them
    extra_token_names = ("[SENTENCE]",)

    def __init__(
        self,
        stem_folder=None,
        encoder_config=None,
        sentence_dropout=0.0,
        vocab_size=8000,
        lowercase=True,
        max_length=128,
        min_frequency=2,
        vocab_file=None,
        text_columns=None,
        token_dropout=0.0,
        strip_accents=None,
        tokenize_chinese_chars=True,
    ):
        super().__init__(vocab_size, lowercase, max_length, min_frequency, vocab_file, text_columns, token_dropout)
        self.strip_accents, self.tokenize_chinese_chars = strip_accents, tokenize_chinese_chars
        self.stem_folder = stem_folder
        self.encoder_config = encoder_config
        self.sentence_dropout = sentence_dropout

    def fit(self, X, y=None):
        """Fit the sub-word vocabulary on ``X`` and read the pretrained model's tokenizer.

        Parameters
        ----------
        X : list/Series of str
        y : ignored

        Returns
        -------
        self : SentenceTokenizer

        Raises
        ------
        ValueError
            If ``stem_folder`` or ``encoder_config`` is missing, or a setting is invalid.
        """
        if self.stem_folder is None or not isinstance(self.encoder_config, dict):
            raise ValueError(
                "SentenceTokenizer needs stem_folder (a pretrained text model's folder) and encoder_config "
                f"(its encoder's config dict); got {self.stem_folder!r} and {type(self.encoder_config).__name__}"
            )
        super().fit(X, y)
        stem = PretrainedTextTokenizer(
            tokenizer_file=self.stem_folder, max_length=self.max_length, text_columns=self.text_columns
        )
        stem.fit(X)  # it reads X's columns only (one text or a pair), as the words do
        # Its fitted attributes, not the tokenizer: a tokenizer inside a tokenizer is saved unfitted.
        self.stem_state_ = {key: value for key, value in vars(stem).items() if key.endswith("_") and not key.startswith("_")}
        self._stem_cache = stem
        return self

    def _stem(self) -> PretrainedTextTokenizer:
        """The pretrained model's fitted tokenizer, rebuilt from ``stem_state_`` after a load."""
        stem = getattr(self, "_stem_cache", None)
        if stem is None:
            stem = PretrainedTextTokenizer(
                tokenizer_file=self.stem_folder, max_length=self.max_length, text_columns=self.text_columns
            )
            for key, value in self.stem_state_.items():
                setattr(stem, key, value)
            self._stem_cache = stem
        return stem

    def transform(self, X):
        """The sub-words' arrays, plus ``stem_rows`` (n, 2, L): the pretrained ids over their mask.

        Parameters
        ----------
        X : list/Series of str

        Returns
        -------
        batch : dict of ndarray
        """
        batch = super().transform(X)
        check_is_fitted(self, "stem_state_")
        with warnings.catch_warnings():  # the sub-words above warned of texts past max_length; once is enough
            warnings.filterwarnings("ignore", message=".* are longer than max_length=", category=UserWarning)
            stem = self._stem().transform(X)
        # One 3-D array: the host-side trim cuts 2-D arrays to the words' length, never this one.
        batch["stem_rows"] = np.stack([stem["input_ids"], stem["attention_mask"].astype(stem["input_ids"].dtype)], axis=1)
        return batch

    def embedder_spec(self) -> dict:
        """Describe the :class:`~tabformer.nn.embedders.sentence.SentenceEmbedder` these arrays need.

        Returns
        -------
        spec : dict
            ``{"kind": "sentence", "words": <the sub-words' TextEmbedder spec, kind left out>,
            "stem_vocab_size", "encoder", "sentence_dropout"}``.
        """
        if not 0.0 <= float(self.sentence_dropout) < 1.0:
            raise ValueError(f"sentence_dropout must be a probability in [0, 1), got {self.sentence_dropout!r}")
        words = super().embedder_spec()
        words.pop("kind")
        return {
            "kind": "sentence",
            "words": words,
            "stem_vocab_size": int(self.stem_state_["vocab_size_"]),
            "encoder": dict(self.encoder_config),
            "sentence_dropout": float(self.sentence_dropout),
        }
