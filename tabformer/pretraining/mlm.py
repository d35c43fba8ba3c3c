"""Masked-token pretraining (BERT's masked language model) for discrete token ids.

Each epoch draws fresh masks: 15% of the real, non-special tokens of every row are
chosen; of those, 80% become ``[MASK]``, 10% a random token and 10% stay unchanged
(Devlin et al., 2019), and the loss is the cross-entropy of the original id at the
chosen positions only. The output layer shares its weights with the input word
embeddings (as BERT does), which halves the parameters the objective adds.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.embedders.mixed import SEPARATOR
from ..nn.heads import IGNORE_INDEX
from ..tokenizers.tabular import FIRST_CATEGORY_ID
from .losses import masked_token_loss, masked_token_loss_sum
from .registry import register_objective
from .views import LABELS, MaskedTokenDataset, MixedMaskedTokenDataset

__all__ = [
    "MaskedTokenModeling",
    "MaskedTokenHead",
    "MixedMaskedTokenHead",
    "TokenHead",
    "column_categories",
    "score_masked_categories",
]


class TokenHead(nn.Module):
    """``LayerNorm(GELU(Linear(h)))`` then logits against an output matrix (+ bias):
    BERT's masked-token head, one per vocabulary.

    Parameters
    ----------
    d_model : int
        Token width ``D``.
    n_outputs : int
        Vocabulary size ``V`` (rows of the output matrix).
    tie_weights : bool
        ``True``: the output matrix is passed to :meth:`forward` (the input embeddings);
        ``False``: the head owns a ``(V, E)`` decoder.
    width : int or None, default=None
        Width ``E`` of the output matrix: the input embeddings' (``encoder__embedding_size``,
        narrower than ``D`` in ELECTRA's factorised embeddings, whose generator head also maps
        ``D`` to ``E`` before the tied matrix); ``None`` is ``D``.
    """

    def __init__(self, d_model: int, n_outputs: int, tie_weights: bool, width: int | None = None):
        super().__init__()
        width = width or d_model
        self.transform = nn.Sequential(nn.Linear(d_model, width), nn.GELU(), nn.LayerNorm(width))
        self.decoder = None if tie_weights else nn.Linear(width, n_outputs, bias=False)
        self.bias = nn.Parameter(torch.zeros(n_outputs))

    def forward(self, states: torch.Tensor, tied_weight: torch.Tensor) -> torch.Tensor:
        """Logits ``(n, V)`` for encoder states ``(n, D)``; ``tied_weight`` ``(V, D)`` is used only when tied."""
        weight = tied_weight if self.decoder is None else self.decoder.weight
        return F.linear(self.transform(states), weight, self.bias)


def column_categories(embedder) -> torch.Tensor:
    """Which rows of a table embedder's category table belong to which column.

    Parameters
    ----------
    embedder : TabularEmbedder
        Read for ``category_offsets`` and the table's size.

    Returns
    -------
    allowed : bool Tensor of shape (n_categorical, n_rows)
        ``allowed[j, r]``: row ``r`` is one of column ``j``'s fitted categories (its
        missing and unseen rows are not).
    """
    n_rows = embedder.category_embedding.num_embeddings
    bounds = torch.cat([embedder.category_offsets.cpu(), torch.tensor([n_rows])])
    rows = torch.arange(n_rows)[None, :]
    return (rows >= bounds[:-1, None] + FIRST_CATEGORY_ID) & (rows < bounds[1:, None])


def score_masked_categories(head, embedder, allowed, cells, labels):
    """Logits of the masked categorical cells, each against its own column's categories only.

    Parameters
    ----------
    head : TokenHead
        Scores against ``embedder.category_embedding`` (tied) or its own matrix.
    embedder : TabularEmbedder
        The table's embedder (offsets and category table).
    allowed : bool Tensor of shape (n_categorical, n_rows)
        :func:`column_categories` of ``embedder``.
    cells : Tensor of shape (B, n_categorical, D)
        Encoder states of the categorical cells.
    labels : long Tensor of shape (B, n_categorical)
        Column-local id (``2..``) of masked cells, ``IGNORE_INDEX`` elsewhere.

    Returns
    -------
    logits, target : Tensor of shape (n, n_rows) and long Tensor of shape (n,)
        For the ``n`` masked cells; other columns' rows get the dtype's lowest value, and
        targets are rows of the shared table.
    """
    chosen = labels != IGNORE_INDEX
    column = torch.arange(labels.shape[1], device=labels.device).expand_as(labels)[chosen]
    logits = head(cells[chosen], embedder.category_embedding.weight).float()
    logits = logits.masked_fill(~allowed[column], torch.finfo(logits.dtype).min)
    return logits, labels[chosen] + embedder.category_offsets[column]


class MaskedTokenHead(nn.Module):
    """Masked-token head for text: predict the original id at the chosen positions.

    ``forward(embedder, encoder, input_ids, attention_mask, mlm_labels, token_type_ids)``
    embeds and encodes the corrupted ids and returns ``[(logits, target)]`` of the
    chosen positions only, so only they go through the vocabulary-sized output layer,
    tied to the word embeddings (as BERT's) unless ``tie_weights=False``.

    Parameters
    ----------
    d_model : int
        Token width ``D``.
    vocab_size : int
        Size ``V`` of the text vocabulary.
    tie_weights : bool, default=True
        Score against the embedder's word embeddings rather than an own output matrix.
    width : int or None, default=None
        Width of the word embeddings, where narrower than ``D`` (see :class:`TokenHead`).
    """

    def __init__(self, d_model: int, vocab_size: int, tie_weights: bool = True, width: int | None = None):
        super().__init__()
        self.head = TokenHead(d_model, vocab_size, tie_weights, width)

    def forward(self, embedder, encoder, input_ids, attention_mask, mlm_labels, token_type_ids=None, **_):
        """Embed, encode and score the chosen positions.

        Parameters
        ----------
        embedder : TextEmbedder
            The shared embedder (its ``word_embeddings`` are the tied output matrix).
        encoder : TransformerEncoder
            The shared encoder.
        input_ids, attention_mask, token_type_ids : Tensor of shape (B, T)
            The corrupted ids, as a text batch (``token_type_ids`` may be None).
        mlm_labels : long Tensor of shape (B, T)
            Original id at the chosen positions, ``IGNORE_INDEX`` elsewhere.

        Returns
        -------
        predictions : list of one (Tensor of shape (n, V), long Tensor of shape (n,))
            Logits and target ids of the ``n`` chosen positions of the batch.
        """
        tokens, mask = embedder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        hidden = encoder(tokens, mask)[:, 1:]
        labels = mlm_labels[:, : hidden.shape[1]]  # the text embedder cuts padding in training
        chosen = labels != IGNORE_INDEX
        return [(self.head(hidden[chosen], embedder.word_embeddings.weight), labels[chosen])]


class MixedMaskedTokenHead(nn.Module):
    """Masked-token head for :class:`~tabformer.pretraining.views.MixedMaskedTokenDataset` batches.

    One pass of the whole row through the embedder and encoder; then, per text
    sub-tokenizer, a head onto its vocabulary tied to its word embeddings (as
    :class:`MaskedTokenHead`), and per table, a head onto
    the rows of the categorical embedding table tied to ``category_embedding``, where a
    masked cell of column ``j`` is scored only against column ``j``'s own categories
    (its rows ``offset_j + 2 ..``; every other row, and its missing/unseen rows, get
    ``-inf``-like logits). The loss is the mean cross-entropy over all masked positions,
    words and cells together, i.e. the two losses averaged with weights the number of
    masked positions of each.

    ``forward(embedder, encoder, **inputs)`` returns one ``(logits, target)`` pair per
    segment with masked positions; :func:`masked_token_loss` averages them.

    Parameters
    ----------
    embedder : MixedEmbedder
        Read once, to size the heads (it is not kept).
    d_model : int
        Token width ``D``.
    tie_weights : bool, default=True
        Score against the embedders' word / category embeddings rather than own output matrices.

    Raises
    ------
    TypeError
        If ``embedder`` is not a mixed embedder.
    """

    def __init__(self, embedder: nn.Module, d_model: int, tie_weights: bool = True):
        super().__init__()
        if not hasattr(embedder, "forward_segments"):
            raise TypeError(f"mixed masked-token modelling needs a MixedEmbedder, got {type(embedder).__name__}")
        self.heads = nn.ModuleDict()
        for index, name in enumerate(embedder.names):
            sub = embedder.embedders[index]
            if embedder.kinds[name] == "text":
                words = sub.word_embeddings
                self.heads[f"g{index}"] = TokenHead(d_model, words.num_embeddings, tie_weights, words.embedding_dim)
            elif getattr(sub, "n_categorical", 0):
                table = sub.category_embedding
                self.heads[f"g{index}"] = TokenHead(d_model, table.num_embeddings, tie_weights, table.embedding_dim)
                self.register_buffer(f"allowed_g{index}", column_categories(sub), persistent=False)

    def forward(self, embedder, encoder, **inputs) -> list:
        """Embed and encode the whole corrupted row once, then score each segment's masked positions.

        Parameters
        ----------
        embedder : MixedEmbedder
            The shared embedder.
        encoder : TransformerEncoder
            The shared encoder.
        **inputs : Tensor
            A mixed batch (keys ``"<segment>/<array>"``, first dimension ``B``) plus
            ``"<segment>/mlm_labels"`` for the masked segments.

        Returns
        -------
        predictions : list of (Tensor of shape (n_s, V_s), long Tensor of shape (n_s,))
            Logits and targets per segment with masked positions (one empty pair if none).
        """
        suffix = SEPARATOR + LABELS
        labels = {k[: -len(suffix)]: inputs.pop(k) for k in [k for k in inputs if k.endswith(suffix)]}
        parts = embedder.forward_segments(**inputs)
        tokens = torch.cat([t for _, t, _ in parts], dim=1)
        mask = torch.cat([m for _, _, m in parts], dim=1)
        hidden = encoder(tokens, mask)[:, 1:]
        predictions, start = [], 0
        for (key, name, _), (_, segment, _) in zip(embedder.segments, parts):
            states = hidden[:, start : start + segment.shape[1]]
            start += segment.shape[1]
            if key not in labels:
                continue
            index = embedder.names.index(name)
            sub, head = embedder.embedders[index], self.heads[f"g{index}"]
            if embedder.kinds[name] == "text":
                target = labels[key][:, : states.shape[1]]  # the text embedder cuts padding in training
                chosen = target != IGNORE_INDEX
                logits = head(states[chosen], sub.word_embeddings.weight)
                target = target[chosen]
            else:
                cells = states[:, sub.n_numeric : sub.n_numeric + sub.n_categorical]  # numbers come first
                logits, target = score_masked_categories(head, sub, getattr(self, f"allowed_g{index}"), cells, labels[key])
            predictions.append((logits, target))
        if not predictions:
            predictions.append((hidden[:, :0].reshape(0, hidden.shape[-1]), hidden.new_zeros(0, dtype=torch.long)))
        return predictions


@register_objective("mlm")
class MaskedTokenModeling:
    """Masked-token objective for :class:`~tabformer.TabFormerPretrainer` (``objective="mlm"``).

    Parameters
    ----------
    mask_prob : float, default=0.15
        Share of real, non-special tokens chosen per row and epoch.
    mask_token_prob : float, default=0.8
        Share of chosen tokens replaced by ``[MASK]``.
    random_token_prob : float, default=0.1
        Share of chosen tokens replaced by a random non-special token; the rest stay.
    tie_weights : bool, default=True
        Output layer shares the input word embeddings.

    Raises
    ------
    ValueError, TypeError
        From :meth:`make_dataset` / :meth:`build_head`: a probability outside ``[0, 1]``,
        ``mask_prob == 0``, ``mask_token_prob + random_token_prob > 1``, or a tokenizer
        without a vocabulary (an image tokenizer).

    Notes
    -----
    With a :class:`~tabformer.tokenizers.MixedTokenizer` (a DataFrame with text, image
    and table columns), text words are masked as above and categorical cells with the
    same ``mask_prob`` (:class:`~tabformer.pretraining.views.MixedMaskedTokenDataset`),
    and :class:`MixedMaskedTokenHead` predicts both.
    """

    def __init__(self, mask_prob=0.15, mask_token_prob=0.8, random_token_prob=0.1, tie_weights=True):
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.random_token_prob = random_token_prob
        self.tie_weights = tie_weights

    def _check(self, tokenizer):
        self._check_probabilities()
        if not hasattr(tokenizer, "vocab_size_"):
            raise TypeError(
                f"objective='mlm' masks discrete token ids and needs a vocabulary tokenizer "
                f"(e.g. tokenizer='wordpiece'); got {type(tokenizer).__name__}"
            )

    def _check_probabilities(self):
        for name in ("mask_prob", "mask_token_prob", "random_token_prob"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
                raise ValueError(f"objective__{name} must be a probability in [0, 1], got {value!r}")
        if not self.mask_prob > 0:
            raise ValueError("objective__mask_prob must be > 0: with nothing masked there is nothing to learn")
        if self.mask_token_prob + self.random_token_prob > 1:
            raise ValueError(
                f"objective__mask_token_prob + objective__random_token_prob = "
                f"{self.mask_token_prob + self.random_token_prob} exceeds 1"
            )

    def make_dataset(self, batch, tokenizer, random_state=None):
        """Dataset of the tokenized rows, masked afresh at every access.

        Parameters
        ----------
        batch : dict of ndarray
            The fitted tokenizer's ``transform`` output for the ``n`` unlabeled rows.
        tokenizer : BaseTokenizer
            The fitted tokenizer (text with a vocabulary, or mixed).
        random_state : int or None, default=None
            Seed of the masks.

        Returns
        -------
        dataset : MaskedTokenDataset or MixedMaskedTokenDataset
            ``n`` items ``(inputs, 0)``: the row's corrupted arrays plus its labels.
        """
        if getattr(tokenizer, "kind", None) == "mixed":
            self._check_probabilities()
            return MixedMaskedTokenDataset(
                batch, tokenizer, self.mask_prob, self.mask_token_prob, self.random_token_prob, random_state
            )
        self._check(tokenizer)
        return MaskedTokenDataset(
            batch, tokenizer.vocab_size_, self.mask_prob, self.mask_token_prob, self.random_token_prob, random_state
        )

    def build_head(self, tokenizer, embedder, d_model: int) -> nn.Module:
        """The masked-token head; the shared embedder and encoder are passed at each call.

        Parameters
        ----------
        tokenizer : BaseTokenizer
            The fitted tokenizer.
        embedder : nn.Module
            The shared embedder built from it (read to size the heads).
        d_model : int
            Token width ``D``.

        Returns
        -------
        head : MaskedTokenHead or MixedMaskedTokenHead
        """
        if getattr(tokenizer, "kind", None) == "mixed":
            self._check_probabilities()
            return MixedMaskedTokenHead(embedder, d_model, self.tie_weights)
        self._check(tokenizer)
        if not hasattr(embedder, "word_embeddings"):
            raise TypeError(f"objective='mlm' needs an embedder with word_embeddings, got {type(embedder).__name__}")
        return MaskedTokenHead(d_model, tokenizer.vocab_size_, self.tie_weights, embedder.word_embeddings.embedding_dim)

    def loss(self, predictions) -> torch.Tensor:
        """Cross-entropy of the original ids at the masked positions (:func:`masked_token_loss`).

        Parameters
        ----------
        predictions : list of (Tensor of shape (n_i, V_i), long Tensor of shape (n_i,))
            The head's output.

        Returns
        -------
        loss : scalar Tensor
        """
        return masked_token_loss(predictions)

    def loss_sum(self, predictions) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy over the masked positions and their number, which ``score`` adds up over the batches.

        Parameters
        ----------
        predictions : list of (Tensor of shape (n_i, V_i), long Tensor of shape (n_i,))
            The head's output.

        Returns
        -------
        total : scalar Tensor
        count : int
        """
        return masked_token_loss_sum(predictions)
