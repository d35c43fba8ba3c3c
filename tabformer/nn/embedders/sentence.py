"""A frozen pretrained text encoder beside a mixed input's own sub-words: each text gets one
more token, its mean-pooled sentence embedding projected to the shared encoder's width.

Why one pooled token, and frozen: a mixed DataFrame's encoders are fresh and narrow (late
fusion trains one per modality at lr 3e-4), while a pretrained text encoder wants its own
width and a learning rate 6-10x lower. Sentence-transformers models such as all-MiniLM-L6-v2
are trained for exactly this read-out (the mean of the last layer over the real tokens), and
on the emoji names a logistic regression on the frozen embedding reads 0.920 where
fine-tuning the whole model reads 0.925 (the same validation split, docs/mixed.md). Why the
sub-words stay: icon file names and tweets carry exact word forms a sentence embedding
blurs (alone it cost them 3 points). Frozen, the embedding of a text is a fixed function of
its ids, so a fit computes it once per text (``feature_cache``).
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn

from ..encoder import TransformerEncoder
from ..positions import saved_encoder_config
from .augment import Augmented
from .feature_cache import CachedStemModule, FrozenFeatureCache
from .text import TextEmbedder

__all__ = ["SentenceEmbedder", "TextFeatureCache"]


class TextFeatureCache(FrozenFeatureCache):
    """:class:`FrozenFeatureCache` for texts: rows of ``(2, T)`` (ids over the mask), keyed by the
    ids of the real tokens only, so that one text padded to different batch lengths is one entry.

    Examples
    --------
    >>> import torch
    >>> cache = TextFeatureCache()
    >>> rows = torch.tensor([[[5, 6, 0], [1, 1, 0]]])
    >>> cache.key(rows[0]) == cache.key(torch.tensor([[5, 6], [1, 1]]))
    True
    """

    def __deepcopy__(self, memo):
        return TextFeatureCache(self.max_bytes)

    @staticmethod
    def key(row: torch.Tensor) -> bytes:
        """The lookup key of one ``(2, T)`` row: the ids where the mask is set."""
        ids = row[0][row[1].bool()].detach().contiguous().numpy()
        return hashlib.blake2b(ids.astype("int64").tobytes(), digest_size=20).digest()


class SentenceEmbedder(Augmented, CachedStemModule):
    """A text's sub-words as tokens, led by a frozen pretrained encoder's sentence embedding.

    The sub-words are a :class:`~tabformer.nn.embedders.text.TextEmbedder` trained with
    the model (a vocabulary fitted on the data); in front of them goes one more token: the
    mean over a frozen pretrained encoder's output (CLS and separators included, as
    sentence-transformers pools), projected to ``d_model``. The pretrained word embeddings
    and encoder have the pretrained model's architecture (``encoder``, a
    :class:`~tabformer.nn.encoder.TransformerEncoder` config); their weights are random
    until the estimator copies the pretrained ones in (:meth:`load_pretrained`) or a saved
    model's state dict is loaded.

    Parameters
    ----------
    d_model : int
        Token width ``D``.
    words : dict
        The sub-words' :class:`TextEmbedder` arguments (``vocab_size``, ``token_dropout``...).
    stem_vocab_size : int
        Rows of the pretrained word embeddings.
    encoder : dict
        The pretrained encoder's ``config``.
    sentence_dropout : float, default=0.0
        Training only: probability of masking a row's sentence token, so that the words
        learn to carry the answer too.

    Notes
    -----
    During a supervised fit each CPU text's pretrained states are computed once and read
    from ``feature_cache`` afterwards (see
    :func:`~tabformer.nn.embedders.feature_cache.caching_frozen_features`).
    """

    def __init__(self, d_model: int, words: dict, stem_vocab_size: int, encoder: dict, sentence_dropout: float = 0.0):
        super().__init__()
        self.sentence_dropout = float(sentence_dropout)
        self.words = TextEmbedder(d_model=d_model, **words)
        self.stem_encoder = TransformerEncoder(**saved_encoder_config(encoder))
        self.stem_words = TextEmbedder(stem_vocab_size, self.stem_encoder.embedding_size, n_segments=2)
        self.stem_words.requires_grad_(False)
        self.stem_encoder.requires_grad_(False)
        self.projection = nn.Linear(self.stem_encoder.d_model, d_model)
        self.feature_cache = TextFeatureCache()
        self.train()

    def load_pretrained(self, words: nn.Module, encoder: nn.Module) -> None:
        """Copy a pretrained model's word embedder and encoder weights into the stem.

        Parameters
        ----------
        words : TextEmbedder
            The pretrained model's embedder (``PretrainedEncoder.embedder``).
        encoder : TransformerEncoder
            Its encoder, of this stem's architecture.
        """
        self.stem_words.load_state_dict(words.state_dict())
        self.stem_encoder.load_state_dict(encoder.state_dict())
        self.feature_cache.clear()

    def train(self, mode: bool = True):
        """Set training mode; the frozen stem always stays in eval mode (no dropout). Returns ``self``."""
        super().train(mode)
        self.stem_words.eval()
        self.stem_encoder.eval()
        return self

    def forward(self, input_ids, attention_mask, stem_rows, token_type_ids=None, **_):
        """Embed texts: ``(tokens (B, 1+T', D), mask (B, 1+T'))``, the sentence token first.

        Parameters
        ----------
        input_ids, attention_mask, token_type_ids : Tensor of shape (B, T)
            The sub-words, as :class:`TextEmbedder` reads them (``T' <= T``: it cuts
            all-padding columns while training on the CPU).
        stem_rows : long Tensor of shape (B, 2, L)
            The pretrained model's ids over their mask; a row without a real id is masked.
        """
        words, mask = self.words(input_ids, attention_mask, token_type_ids)
        tracing = torch.jit.is_tracing() or torch.compiler.is_compiling() or torch.onnx.is_in_onnx_export()
        if self.feature_cache.enabled and stem_rows.device.type == "cpu" and not tracing:
            pooled = self.feature_cache(self._pooled, stem_rows)
        else:
            pooled = self._pooled(stem_rows)
        sentence = self.projection(pooled[:, None].to(self.projection.weight.dtype)).to(words.dtype)
        present = stem_rows[:, 1].bool().any(dim=1, keepdim=True)
        if self.augmenting and self.sentence_dropout > 0:
            kept = torch.rand(present.shape, device=present.device) >= self.sentence_dropout
            present = present & (kept | ~mask.any(dim=1, keepdim=True))  # a text keeps one real token
        return torch.cat([sentence, words], dim=1), torch.cat([present, mask], dim=1)

    def _pooled(self, rows: torch.Tensor) -> torch.Tensor:
        """``(B, 2, L)`` ids over mask -> ``(B, width)``: the mean of the frozen encoder's output, CLS included."""
        with torch.no_grad():
            words, mask = self.stem_words(rows[:, 0], rows[:, 1].bool())
            hidden = self.stem_encoder(words, mask)
            real = torch.cat([mask.new_ones(mask.shape[0], 1), mask], dim=1).to(hidden.dtype)[..., None]
            return (hidden * real).sum(dim=1) / real.sum(dim=1)
