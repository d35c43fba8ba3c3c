"""Text: WordPiece sub-words (BERT's tokenization) on the Hugging Face ``tokenizers`` library.

A text becomes ``t_1 .. t_k [SEP]`` and a pair ``a_1 .. a_k [SEP] b_1 .. b_m [SEP]`` (segment ids 0
for the first part, 1 for the second). There is no ``[CLS]`` in the tokenizer output: the encoder
prepends its own learned CLS token, which for loaded BERT weights is BERT's ``[CLS]`` word embedding
plus its segment-0 embedding, so the two layouts compute the same thing.

Ids follow the shared special layout of :mod:`tabformer.tokenizers.base` (``[PAD]`` 0, ``[UNK]`` 1,
``[CLS]`` 2, ``[SEP]`` 3, ``[MASK]`` 4). A ``vocab.txt`` whose specials sit elsewhere (bert-base: 0,
100..103) is remapped by swapping each special with the token occupying its tabformer id;
``source_ids_`` records the permutation so that pretrained embedding rows can follow it.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from ._texts import check_strings, check_words, warn_unread
from ._vocab import backend_from_json, bert_normalizer, canonical_vocab, continuing_pieces, read_vocab, with_added_tokens
from .base import MASK, PAD, SEP, SPECIAL_TOKENS, UNK, BaseTokenizer, expecting_name, register_tokenizer
from .detect import is_missing

__all__ = ["WordPieceTokenizer"]

_SPECIALS_IN_ORDER = sorted(SPECIAL_TOKENS, key=SPECIAL_TOKENS.get)
#: the longest word (a run without space or punctuation) a trained vocabulary splits into pieces; longer is [UNK]
MAX_WORD_CHARS = 1000


@register_tokenizer("wordpiece", "text")
class WordPieceTokenizer(BaseTokenizer):
    """Texts (or pairs of texts, or pre-split words) to WordPiece ids.

    Parameters
    ----------
    vocab_size : int, default=8000
        Size of the vocabulary trained in ``fit`` (special tokens included); ignored with ``vocab_file``.
    lowercase : bool, default=True
        Lower-case (and strip accents, unless ``strip_accents=False``) before splitting, as uncased BERT does.
    max_length : int, default=128
        Longest sequence the encoder will see, counting its CLS and every [SEP]; longer texts are truncated
        (pairs: the longer part first), with a ``UserWarning`` counting them. Shorter data is padded to its longest row only.
    min_frequency : int, default=2
        Training: minimum count for a merge to enter the vocabulary.
    vocab_file : str or None, default=None
        A BERT ``vocab.txt`` (or a folder holding one): use its vocabulary instead of training one, with
        the tokens a ``tokenizer_config.json`` beside it adds. It must contain [PAD], [UNK], [CLS], [SEP] and [MASK].
    text_columns : list of str or None, default=None
        DataFrame input: the one or two text columns to read (two make sentence pairs).
        ``None`` uses every column, which must then be one or two.
    token_dropout : float, default=0.0
        Word dropout, a regulariser for small labelled sets: while training, each real sub-word is
        replaced by [MASK] with this probability ([SEP] and padding never are), so the model cannot
        lean on any single word. Off at predict time. It lives in the embedder this tokenizer
        builds; a pretrained embedder keeps the setting it was built with.
    strip_accents : bool or None, default=None
        Strip accents before splitting; ``None`` follows ``lowercase``, as in BERT's ``tokenizer_config.json``.
    tokenize_chinese_chars : bool, default=True
        Split CJK ideographs into one word each, as BERT does (``tokenizer_config.json``'s setting).

    Attributes
    ----------
    vocab_size_ : int
        Size of the fitted vocabulary, special tokens included.
    source_ids_ : ndarray of shape (vocab_size,) or None
        ``vocab_file`` only: line of ``vocab.txt`` (or added id) behind each tabformer id.
    tokenizer_json_ : str
        The whole fitted ``tokenizers`` model; pickles and deep-copies with the estimator.
    n_features_in_ : int
        1 for single texts, 2 for pairs.
    feature_names_in_ : ndarray of str
        The text column(s) read (DataFrame input only).

    Notes
    -----
    Input: a list/tuple/1-D array/Series of str; a DataFrame (or 2-D array) with one or two text columns; or,
    for tagging, a list of word lists (pre-split words). ``None``/NaN texts raise a ``ValueError`` naming the
    rows; an empty string is valid and becomes a sequence holding only [SEP] (the CLS embedding then reflects no words).

    Examples
    --------
    >>> tok = WordPieceTokenizer(vocab_size=60, min_frequency=1).fit(["a cat sat", "a dog ran"])
    >>> batch = tok.transform(["a cat ran"])
    >>> sorted(batch), batch["input_ids"].shape
    (['attention_mask', 'input_ids', 'token_type_ids'], (1, 4))
    """

    fit_reads_target = False  # its vocabulary comes from X alone

    default_positions = "learned"
    kind = "text"

    def __init__(
        self,
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
        self.vocab_size, self.strip_accents, self.tokenize_chinese_chars = vocab_size, strip_accents, tokenize_chinese_chars
        self.lowercase = lowercase
        self.max_length = max_length
        self.min_frequency = min_frequency
        self.vocab_file = vocab_file
        self.text_columns = text_columns
        self.token_dropout = token_dropout

    def read_columns(self, X):
        """Record ``X``'s text columns (a pretrained tokenizer meeting a sentence pair, or named
        DataFrame columns) for ``transform`` and ``feature_names_in_``; the vocabulary stays.

        Parameters
        ----------
        X : list/Series of str, DataFrame with 1-2 text columns, or list of word lists

        Returns
        -------
        self
        """
        self._set_columns(self._parts(X, fitting=True)[1])
        return self

    def _set_columns(self, second) -> None:
        if second is not None and self.max_length < 5:
            # Two texts share max_length - 3 positions (CLS and two SEP): at 3 or 4 one or both get none.
            raise ValueError(
                f"max_length must be an int >= 5 for pairs of texts (CLS, a token and a SEP each), got {self.max_length!r}"
            )
        self.n_features_in_ = 1 if second is None else 2

    # ---------------------------------------------------------------- input
    def _parts(self, X, fitting: bool):
        """Return ``(first, second_or_None, pretokenized)`` lists from any accepted input."""
        if isinstance(X, str):
            raise ValueError("X must be a collection of texts, got a single str; wrap it in a list")
        named = isinstance(X, pd.DataFrame)  # an array's columns get names here, none the user chose
        if isinstance(X, np.ndarray) and X.ndim == 2:
            X = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
        if isinstance(X, pd.DataFrame):
            given = [self.text_columns] if isinstance(self.text_columns, str) else self.text_columns  # one name, not its letters
            columns = list(given) if given is not None else list(X.columns)
            missing = [c for c in columns if c not in X.columns]
            if missing:
                raise ValueError(f"text column(s) {missing} not in X; it has {list(X.columns)}")
            if len(columns) not in (1, 2):
                message = f"WordPieceTokenizer reads one text column or two (a sentence pair); X has {len(columns)} columns"
                raise ValueError(f"{message} {columns}: pick them with tokenizer__text_columns")
            names, seen = [str(c) for c in columns], list(getattr(self, "feature_names_in_", []))
            if fitting and named:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif fitting and "feature_names_in_" in vars(self):  # an array's columns carry no names (sklearn's rule)
                del self.feature_names_in_
            elif named and "feature_names_in_" in vars(self) and names != seen:
                if sorted(names) != sorted(seen):  # scikit-learn refuses other names too: renamed columns may be other texts
                    lacks, extra = [c for c in seen if c not in names], [c for c in names if c not in seen]
                    if not extra:  # one text of a fitted pair: renaming would not help, the other text is needed
                        raise ValueError(f"X lacks the text column {lacks[0]!r}: fit read the sentence pair {seen}")
                    raise ValueError(
                        f"X's text column(s) {columns} are not those seen in fit, {seen}: rename them (or pass a list)"
                    )
                columns = [columns[names.index(name)] for name in seen]  # a pair in the fitted order, as tables are read
            parts = [check_strings(X[c].tolist(), f"column {c!r}") for c in columns]
            return parts[0], (parts[1] if len(parts) == 2 else None), False
        if fitting and "feature_names_in_" in vars(self):
            del self.feature_names_in_
        if not isinstance(X, (list, tuple, np.ndarray, pd.Series)):
            raise ValueError(
                f"X must be a list/Series of str, a DataFrame of text columns, or a list of word lists; got {type(X).__name__}"
            )
        values = X.tolist() if hasattr(X, "tolist") else list(X)
        if len(values) == 0:
            raise ValueError("X has 0 texts; at least 1 is required")
        first = next((v for v in values if not is_missing(v)), None)
        if isinstance(first, (list, tuple, np.ndarray)):
            return check_words(values, "X"), None, True
        return check_strings(values, "X"), None, False

    # ---------------------------------------------------------------- backend
    def _backend(self):
        backend = getattr(self, "_backend_cache", None)
        if backend is None:
            backend = self._backend_cache = backend_from_json(self.tokenizer_json_)
        return backend

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_backend_cache", None)  # rebuilt from tokenizer_json_ on first use
        return state

    def _new_backend(self, vocab=None, trained=False):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        # A vocab.txt (BERT's) reads words of up to 100 characters, longer ones as [UNK], as Hugging
        # Face does; a vocabulary trained here reads up to MAX_WORD_CHARS, since its trainer learnt
        # pieces of longer runs too (DNA, Thai, kana, compounds): at 100 each read as one [UNK].
        limit = MAX_WORD_CHARS if trained or not vocab else 100
        model = models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=limit, **({"vocab": vocab} if vocab else {}))
        backend = Tokenizer(model)
        backend.normalizer = bert_normalizer(self.lowercase, self.strip_accents, self.tokenize_chinese_chars)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece()
        return backend

    def fit(self, X, y=None):
        """Train (or load) the vocabulary.

        Parameters
        ----------
        X : list/Series of str of shape (n_samples,), DataFrame with 1-2 text columns, or list of word lists
            Training texts (see Notes of the class).
        y : ignored
            Not used, present for API consistency.

        Returns
        -------
        self : WordPieceTokenizer
            The fitted tokenizer.

        Raises
        ------
        ValueError
            If ``max_length`` or ``vocab_size`` is invalid, ``X`` is not an accepted input (a single str,
            missing texts, 0 rows, more than two columns), or ``vocab_file`` lacks a special token.
        """
        if not isinstance(self.max_length, numbers.Integral) or self.max_length < 3:
            raise ValueError(f"max_length must be an int >= 3 (CLS, one token, SEP), got {self.max_length!r}")
        first, second, pretokenized = self._parts(X, fitting=True)
        self._set_columns(second)
        if self.vocab_file is not None:
            vocab, self.source_ids_, added = read_vocab(self.vocab_file)
            backend = with_added_tokens(self._new_backend(vocab), added)
        else:
            if not isinstance(self.vocab_size, numbers.Integral) or self.vocab_size <= len(SPECIAL_TOKENS):
                raise ValueError(f"vocab_size must be an int > {len(SPECIAL_TOKENS)}, got {self.vocab_size!r}")
            from tokenizers import trainers

            backend = self._new_backend()
            texts = [" ".join(w) for w in first] if pretokenized else first + (second or [])
            # The trainer gives the "##c" pieces ids in hash-map order as it meets them, and
            # those ids break ties between equally frequent merges, so the token set itself
            # changed from one fit to the next (huggingface/tokenizers#1794; 10 different
            # vocabularies in 10 fits of 300 reviews). Declared up front, sorted, they get
            # fixed ids; the trainer would have made the same pieces.
            trainer = trainers.WordPieceTrainer(
                vocab_size=int(self.vocab_size),
                min_frequency=int(self.min_frequency),
                special_tokens=_SPECIALS_IN_ORDER + continuing_pieces(backend, texts),
                show_progress=False,
            )
            backend.train_from_iterator(texts, trainer=trainer)
            # Renumbered, specials first, then the rest sorted; rebuilt from the plain
            # vocabulary, so the "##c" pieces are ordinary tokens again, not special ones.
            backend = self._new_backend(canonical_vocab(backend.get_vocab()), trained=True)
            self.source_ids_ = None
        for token, wanted in SPECIAL_TOKENS.items():
            if backend.token_to_id(token) != wanted:  # pragma: no cover - guards the id contract
                raise RuntimeError(f"{token} got id {backend.token_to_id(token)}, expected {wanted}")
        self.tokenizer_json_ = backend.to_str()
        self._backend_cache = backend
        self.vocab_size_ = backend.get_vocab_size()
        return self

    # ------------------------------------------------------------- transform
    def transform(self, X):
        """Encode ``X``.

        Parameters
        ----------
        X : list/Series of str of shape (n_samples,), DataFrame with 1-2 text columns, or list of word lists
            As in ``fit``, with as many text columns.

        Returns
        -------
        batch : dict of ndarray, each of shape (n_samples, T) with ``T <= max_length - 1``
            ``input_ids`` (int64), ``attention_mask`` (bool, True = real token) and
            ``token_type_ids`` (int64 segment ids); pre-split words add ``word_ids``
            (int64, index of the word a sub-word comes from, -1 for [SEP]/padding).

        Raises
        ------
        ValueError
            If ``X`` is not an accepted input or has another number of text columns than in ``fit``.
        """
        check_is_fitted(self, "tokenizer_json_")
        first, second, pretokenized = self._parts(X, fitting=False)
        if (given := 1 if second is None else 2) != self.n_features_in_:
            raise ValueError(
                f"X has {given} text column(s); {expecting_name('the tokenizer')} was fitted on {self.n_features_in_}"
            )
        backend = self._backend()
        budget = int(self.max_length) - 1  # the encoder's CLS takes one position
        if pretokenized:
            encodings = backend.encode_batch(first, is_pretokenized=True, add_special_tokens=False)
            rows = [(e.ids[: budget - 1] + [SEP], [0] * min(len(e.ids), budget - 1) + [0]) for e in encodings]
            words, needed = [[-1 if w is None else w for w in e.word_ids[: budget - 1]] + [-1] for e in encodings], ()
        elif second is None:
            encodings = backend.encode_batch(first, add_special_tokens=False)
            rows = [(e.ids[: budget - 1] + [SEP], [0] * (min(len(e.ids), budget - 1) + 1)) for e in encodings]
            words, needed = None, [len(e.ids) + 1 for e in encodings]
        else:
            ids_a = [e.ids for e in backend.encode_batch(first, add_special_tokens=False)]
            ids_b = [e.ids for e in backend.encode_batch(second, add_special_tokens=False)]
            rows = [_pair(a, b, budget - 2) for a, b in zip(ids_a, ids_b)]
            words, needed = None, [len(a) + len(b) + 2 for a, b in zip(ids_a, ids_b)]
        warn_unread(needed, rows, budget, self.max_length, getattr(self, "feature_names_in_", None), self.source_ids_ is None)
        length = max(len(ids) for ids, _ in rows)
        n = len(rows)
        input_ids = np.full((n, length), PAD, dtype=np.int64)
        token_type_ids = np.zeros((n, length), dtype=np.int64)
        attention_mask = np.zeros((n, length), dtype=bool)
        for i, (ids, types) in enumerate(rows):
            input_ids[i, : len(ids)] = ids
            token_type_ids[i, : len(ids)] = types
            attention_mask[i, : len(ids)] = True
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        if words is not None:
            word_ids = np.full((n, length), -1, dtype=np.int64)
            for i, row in enumerate(words):
                word_ids[i, : len(row)] = row
            batch["word_ids"] = word_ids
        return batch

    # ------------------------------------------------------------- helpers
    def embedder_spec(self) -> dict:
        """Describe the :class:`~tabformer.nn.embedders.text.TextEmbedder` these ids need.

        Returns
        -------
        spec : dict
            ``{"kind": "text", "vocab_size", "token_dropout", "mask_id", "n_special"}``.

        Raises
        ------
        ValueError
            If ``token_dropout`` is not in ``[0, 1)``.
        """
        check_is_fitted(self, "vocab_size_")
        if not 0.0 <= float(self.token_dropout) < 1.0:
            raise ValueError(f"token_dropout must be a probability in [0, 1), got {self.token_dropout!r}")
        return {
            "kind": "text",
            "vocab_size": int(self.vocab_size_),
            "token_dropout": float(self.token_dropout),
            "mask_id": MASK,
            "n_special": len(SPECIAL_TOKENS),
        }

    def save_vocabulary(self, path) -> str:
        """Write the fitted vocabulary as a BERT ``vocab.txt`` (one token per line, in id order).

        ``WordPieceTokenizer(vocab_file=path)`` then reproduces these exact ids, whatever version of
        ``tokenizers`` trains vocabularies later (fits on the same texts give the same vocabulary).

        Parameters
        ----------
        path : str or path-like
            File to write (overwritten).

        Returns
        -------
        path : str
        """
        tokens = self.convert_ids_to_tokens(range(self.vocab_size_))
        with open(path, "w", encoding="utf-8") as handle:
            handle.writelines(token + "\n" for token in tokens)
        return str(path)

    def convert_ids_to_tokens(self, ids) -> list:
        """Token strings for a sequence of ids.

        Parameters
        ----------
        ids : iterable of int

        Returns
        -------
        tokens : list of str
            One string per id (``None`` for an id outside the vocabulary).
        """
        check_is_fitted(self, "tokenizer_json_")
        backend = self._backend()
        return [backend.id_to_token(int(i)) for i in ids]

    def convert_tokens_to_ids(self, tokens) -> list:
        """Ids of token strings (sub-words as in the vocabulary); ``[UNK]``'s id for the rest.

        Parameters
        ----------
        tokens : iterable of str
            Vocabulary entries, e.g. ``"cat"`` or ``"##s"``.

        Returns
        -------
        list of int
        """
        check_is_fitted(self, "tokenizer_json_")
        backend = self._backend()
        ids = [backend.token_to_id(str(token)) for token in tokens]
        return [UNK if i is None else i for i in ids]

    def token_labels(self, batch: dict) -> list:
        """The sub-word strings of each row's real tokens (what ``explain`` labels with).

        Parameters
        ----------
        batch : dict of ndarray
            Output of :meth:`transform` (``input_ids`` and ``attention_mask`` are read).

        Returns
        -------
        labels : list of n_samples lists of str
            Row ``i`` has ``attention_mask[i].sum()`` entries.
        """
        ids, mask = batch["input_ids"], batch["attention_mask"]
        return [self.convert_ids_to_tokens(np.asarray(row)[np.asarray(m, dtype=bool)]) for row, m in zip(ids, mask)]

    def get_feature_names_out(self, input_features=None):
        """The text column(s) read: fitted DataFrame columns, else ``["text"]`` or ``["text_a", "text_b"]``."""
        return np.asarray(
            getattr(self, "feature_names_in_", ["text"] if getattr(self, "n_features_in_", 1) == 1 else ["text_a", "text_b"]),
            dtype=object,
        )


def _pair(a: list, b: list, budget: int):
    """``a [SEP] b [SEP]`` truncated longest-first to ``budget`` tokens, as Hugging Face's fast tokenizers cut.

    The shorter text keeps its length while the longer fits beside it; when both are too
    long, the shorter keeps ``budget // 2`` and the longer the rest (``a`` counts as the
    shorter on a tie). Popping from the longer one by one, as the slow tokenizers do, gives
    other lengths when the texts tie or the second is longer.
    """
    a, b = list(a), list(b)
    if len(a) + len(b) > budget:
        short = min(len(a), len(b))
        keep_short, keep_long = short, max(short, budget - short)
        if keep_short + keep_long > budget:
            keep_short, keep_long = budget // 2, budget // 2 + budget % 2
        keep_a, keep_b = (keep_long, keep_short) if len(a) > len(b) else (keep_short, keep_long)
        a, b = a[:keep_a], b[:keep_b]
    return a + [SEP] + b + [SEP], [0] * (len(a) + 1) + [1] * (len(b) + 1)
