"""Masked-cell modelling: self-supervised pretraining on a plain table (``objective="masked_cells"``).

Each epoch hides a fresh random share of every row's cells and asks the encoder to fill them in from the others,
as TabTransformer's masked-language-model pretraining (Huang et al., 2020), VIME's feature estimation (Yoon et al.,
2020) and SAINT's denoising (Somepalli et al., 2021) do:

- a hidden categorical cell becomes its column's UNSEEN id, the id that already means "a value of this column I
  cannot tell" in the column's own id space; the head predicts the original category among that column's categories
  (cross-entropy, output tied to the category embeddings);
- a hidden numeric cell becomes missing, so the embedder gives it its column's learned missing token; the head
  regresses the cell's value, standardised per column with the training rows' mean and standard deviation (squared
  error, so predicting the column mean scores 1 whatever the column's scale).

The loss is the mean over all hidden cells of both kinds. Missing cells are never hidden (there is nothing to
predict) and are never targets.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn

from .._data import TensorDictDataset
from ..nn.heads import IGNORE_INDEX
from ..tokenizers.tabular import FIRST_CATEGORY_ID, UNSEEN_ID
from ._draws import RowSeededMasks
from .losses import masked_cell_loss, masked_cell_loss_sum
from .mlm import TokenHead, column_categories, score_masked_categories
from .registry import register_objective
from .views import make_generator

__all__ = ["MaskedCellModeling", "MaskedCellDataset", "MaskedCellHead"]

#: the arrays a table batch must hold (a TabularTokenizer's output)
TABLE_ARRAYS = ("cat_ids", "num_values", "num_missing")


class MaskedCellDataset(RowSeededMasks, TensorDictDataset):
    """Table tokens with fresh hidden cells at every access.

    Batches carry the tokenizer's arrays with the hidden cells replaced (``cat_ids`` holds UNSEEN_ID ``1``,
    ``num_missing`` is True and ``num_values`` 0), plus the targets: ``cell_labels`` (B, n_categorical), the original
    column-local id of hidden categorical cells and ``-100`` elsewhere; ``num_targets`` (B, n_numeric), the
    standardised original value (0 where not hidden); ``num_hidden`` (B, n_numeric), True where hidden.

    Parameters
    ----------
    X : dict of arrays of first dimension N
        A fitted :class:`~tabformer.tokenizers.TabularTokenizer`'s ``transform`` output.
    mask_prob : float in (0, 1]
        Chance that a present cell is hidden, per cell and access.
    center, scale : ndarray of shape (n_numeric,)
        What standardises the numeric targets: ``(value - center) / scale``.
    random_state : int or None, default=None
        Seed of the masks (a private generator; the global torch RNG is untouched). With ``seed_rows = True`` (set by
        ``TabFormerPretrainer.score``) each row's masks come from (this seed, the row's index) instead, the same in any
        batch (:mod:`tabformer.pretraining._draws`).

    Examples
    --------
    >>> import numpy as np
    >>> batch = {"cat_ids": np.array([[2], [3]]), "num_values": np.zeros((2, 1), "float32"),
    ...          "num_missing": np.zeros((2, 1), bool)}
    >>> X, _ = MaskedCellDataset(batch, 1.0, np.zeros(1), np.ones(1), 0).__getitems__([0, 1])
    >>> X["cat_ids"].tolist(), X["cell_labels"].tolist(), X["num_hidden"].tolist()
    ([[1], [1]], [[2], [3]], [[True], [True]])
    """

    def __init__(self, X, mask_prob, center, scale, random_state=None):
        super().__init__({key: X[key] for key in TABLE_ARRAYS})
        self.mask_prob = mask_prob
        self.center = torch.as_tensor(np.asarray(center, dtype=np.float32))
        self.scale = torch.as_tensor(np.asarray(scale, dtype=np.float32))
        self.generator = make_generator(random_state)

    def __getitems__(self, indices):
        X, y = super().__getitems__(indices)
        cat_ids, values, missing = X["cat_ids"], X["num_values"], X["num_missing"].bool()
        draws = self.draws(indices)
        hide_cat = (cat_ids >= FIRST_CATEGORY_ID) & (draws.rand(cat_ids.shape) < self.mask_prob)
        hide_num = ~missing & (draws.rand(values.shape) < self.mask_prob)
        targets = torch.where(hide_num, (values - self.center) / self.scale, torch.zeros_like(values))
        return {
            "cat_ids": cat_ids.masked_fill(hide_cat, UNSEEN_ID),
            "num_values": values.masked_fill(hide_num, 0.0),
            "num_missing": missing | hide_num,
            "cell_labels": torch.where(hide_cat, cat_ids, torch.full_like(cat_ids, IGNORE_INDEX)),
            "num_targets": targets,
            "num_hidden": hide_num,
        }, y


class MaskedCellHead(nn.Module):
    """Predict the hidden cells of a table row from the encoder's cell states.

    Categorical cells: a :class:`~tabformer.pretraining.mlm.TokenHead` onto the embedder's category table, each hidden
    cell scored only against its own column's categories. Numeric cells: ``LayerNorm(GELU(Linear(h)))`` shared by the
    columns, then one ``(D,)`` weight and a bias per column, giving one number per cell.

    Parameters
    ----------
    embedder : TabularEmbedder
        Read once to size the heads (not kept).
    d_model : int
        Token width ``D``.
    tie_weights : bool, default=True
        Score categories against the embedder's category embeddings rather than an own output matrix.

    Raises
    ------
    TypeError
        If ``embedder`` is not a table embedder (no ``category_embedding`` / ``n_numeric``).
    """

    def __init__(self, embedder: nn.Module, d_model: int, tie_weights: bool = True):
        super().__init__()
        if not (hasattr(embedder, "category_embedding") and hasattr(embedder, "n_numeric")):
            raise TypeError(f"objective='masked_cells' needs a TabularEmbedder, got {type(embedder).__name__}")
        self.n_numeric, self.n_categorical = int(embedder.n_numeric), int(embedder.n_categorical)
        self.categories = None
        if self.n_categorical:
            table = embedder.category_embedding
            self.categories = TokenHead(d_model, table.num_embeddings, tie_weights, table.embedding_dim)
            self.register_buffer("allowed", column_categories(embedder), persistent=False)
        self.numeric_transform = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model))
        self.numeric_weight = nn.Parameter(torch.zeros(self.n_numeric, d_model))
        self.numeric_bias = nn.Parameter(torch.zeros(self.n_numeric))
        nn.init.normal_(self.numeric_weight, std=d_model**-0.5)

    def forward(self, embedder, encoder, cat_ids, num_values, num_missing, cell_labels, num_targets, num_hidden, **_):
        """Encode the corrupted rows and score their hidden cells.

        Parameters
        ----------
        embedder : TabularEmbedder
            The shared embedder.
        encoder : TransformerEncoder
            The shared encoder.
        cat_ids, num_values, num_missing : Tensor of shape (B, n_categorical), (B, n_numeric), (B, n_numeric)
            The corrupted table batch.
        cell_labels : long Tensor of shape (B, n_categorical)
            Original column-local id of hidden categorical cells, ``-100`` elsewhere.
        num_targets : float Tensor of shape (B, n_numeric)
            Standardised original value of hidden numeric cells.
        num_hidden : bool Tensor of shape (B, n_numeric)
            True where a numeric cell is hidden.

        Returns
        -------
        predictions : tuple
            ``(categorical, numeric)``: ``categorical`` a list of zero or one (logits of shape (n_c, R), long target of
            shape (n_c,)), ``numeric`` a pair (predicted, target) of float Tensors of shape (n_n,).
        """
        tokens, mask = embedder(cat_ids=cat_ids, num_values=num_values, num_missing=num_missing)
        hidden = encoder(tokens, mask)[:, 1:]  # CLS first, then the numeric cells, then the categorical ones
        categorical = []
        if self.categories is not None:
            cells = hidden[:, self.n_numeric : self.n_numeric + self.n_categorical]
            categorical.append(score_masked_categories(self.categories, embedder, self.allowed, cells, cell_labels))
        chosen = num_hidden.bool()
        column = torch.arange(self.n_numeric, device=chosen.device).expand_as(chosen)[chosen]
        states = self.numeric_transform(hidden[:, : self.n_numeric][chosen])
        predicted = (states * self.numeric_weight[column]).sum(dim=-1) + self.numeric_bias[column]
        return categorical, (predicted, num_targets[chosen])


def _standardisation(batch) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and std of the present numeric cells (std 1 for a constant or empty column)."""
    values = np.asarray(batch["num_values"], dtype=np.float64)
    present = ~np.asarray(batch["num_missing"], dtype=bool)
    count = present.sum(axis=0)
    center = np.where(count > 0, (values * present).sum(axis=0) / np.maximum(count, 1), 0.0)
    spread = np.sqrt(((values - center) ** 2 * present).sum(axis=0) / np.maximum(count, 1))
    return center, np.where(spread > 1e-6, spread, 1.0)


@register_objective("masked_cells")
class MaskedCellModeling(BaseEstimator):  # an estimator so that saving keeps center_ and scale_
    """Masked-cell objective for :class:`~tabformer.TabFormerPretrainer` on tables (``objective="masked_cells"``).

    What ``objective="auto"`` picks for a table. See the module docstring for what is hidden and predicted.

    Parameters
    ----------
    mask_prob : float, default=0.3
        Share of a row's present cells hidden per epoch (TabTransformer and SAINT hide about 30%; BERT's 15% leaves
        a row of a dozen columns with one or two targets).
    numeric_weight : float, default=1.0
        Weight of a numeric cell's squared error against a categorical cell's cross-entropy.
    tie_weights : bool, default=True
        The categorical output layer shares the category embeddings.

    Attributes
    ----------
    center_, scale_ : ndarray of shape (n_numeric,)
        Standardisation of the numeric targets, from the rows of the first :meth:`make_dataset` (the ``fit`` rows).

    Raises
    ------
    ValueError, TypeError
        From :meth:`make_dataset` / :meth:`build_head`: ``mask_prob`` outside ``(0, 1]``, a negative
        ``numeric_weight``, or a tokenizer that is not a plain table's.

    Examples
    --------
    >>> from tabformer import TabFormerPretrainer                                     # doctest: +SKIP
    >>> pre = TabFormerPretrainer(objective="masked_cells").fit(X_unlabeled)         # doctest: +SKIP
    >>> pre.transform(X).shape                                                        # doctest: +SKIP
    (n_samples, 64)
    """

    def __init__(self, mask_prob=0.3, numeric_weight=1.0, tie_weights=True):
        self.mask_prob = mask_prob
        self.numeric_weight = numeric_weight
        self.tie_weights = tie_weights

    def _check(self, tokenizer):
        if not isinstance(self.mask_prob, numbers.Real) or not 0 < self.mask_prob <= 1:
            raise ValueError(f"objective__mask_prob must be in (0, 1], got {self.mask_prob!r}")
        if not isinstance(self.numeric_weight, numbers.Real) or not self.numeric_weight >= 0:
            raise ValueError(f"objective__numeric_weight must be a number >= 0, got {self.numeric_weight!r}")
        kind = getattr(tokenizer, "kind", None)
        if kind != "table" or not hasattr(tokenizer, "numeric_columns_"):
            hint = {"text": "'mlm'", "image": "'simclr'", "mixed": "'mlm' or 'simclr'"}.get(kind, "'mlm' or 'simclr'")
            raise TypeError(
                f"objective='masked_cells' hides the cells of a plain table (TabularTokenizer); got "
                f"{type(tokenizer).__name__} ({kind} input): use objective={hint} or objective='auto'"
            )

    def make_dataset(self, batch, tokenizer, random_state=None):
        """Dataset of the tokenized rows, with cells hidden afresh at every access.

        Parameters
        ----------
        batch : dict of ndarray
            The fitted TabularTokenizer's ``transform`` output for the ``n`` unlabeled rows.
        tokenizer : TabularTokenizer
            The fitted tokenizer.
        random_state : int or None, default=None
            Seed of the masks.

        Returns
        -------
        dataset : MaskedCellDataset
            ``n`` items; the first call also fits ``center_`` and ``scale_``.
        """
        self._check(tokenizer)
        # A hidden category reads the unseen id, so pretraining trains it: a classifier on this tokenizer does not
        # read categories fit never saw through a random row, and predict does not warn that it does.
        tokenizer.unseen_trained_ = True
        if getattr(self, "center_", None) is None:
            self.center_, self.scale_ = _standardisation(batch)
        return MaskedCellDataset(batch, self.mask_prob, self.center_, self.scale_, random_state)

    def build_head(self, tokenizer, embedder, d_model: int) -> nn.Module:
        """The masked-cell head; the shared embedder and encoder are passed at each call.

        Parameters
        ----------
        tokenizer : TabularTokenizer
            The fitted tokenizer.
        embedder : TabularEmbedder
            The shared embedder built from it (read to size the head).
        d_model : int
            Token width ``D``.

        Returns
        -------
        head : MaskedCellHead
        """
        self._check(tokenizer)
        return MaskedCellHead(embedder, d_model, self.tie_weights)

    def loss(self, predictions) -> torch.Tensor:
        """Mean over hidden cells of cross-entropy (categories) and weighted squared error (numbers).

        Parameters
        ----------
        predictions : tuple
            The head's output (see :meth:`MaskedCellHead.forward`).

        Returns
        -------
        loss : scalar Tensor
        """
        categorical, numeric = predictions
        return masked_cell_loss(categorical, numeric, self.numeric_weight)

    def loss_sum(self, predictions) -> tuple[torch.Tensor, int]:
        """Summed loss over the hidden cells and their number, which ``score`` adds up over the batches of ``X``.

        Parameters
        ----------
        predictions : tuple
            The head's output (see :meth:`MaskedCellHead.forward`).

        Returns
        -------
        total : scalar Tensor
        count : int
        """
        categorical, numeric = predictions
        return masked_cell_loss_sum(categorical, numeric, self.numeric_weight)
