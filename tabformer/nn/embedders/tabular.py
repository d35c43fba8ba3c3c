"""Table cells as tokens: per-column categorical embeddings (TabTransformer) and per-column
numeric embeddings, linear, periodic or piecewise-linear (FT-Transformer; Gorishniy et al., 2022)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .augment import Augmented

#: the categorical id a category ``fit`` never saw gets (``TabularTokenizer``'s; 0 is missing, 2.. the categories)
UNSEEN_ID = 1

__all__ = ["TabularEmbedder"]


def _uniform_(tensor: torch.Tensor, d_model: int) -> torch.Tensor:
    bound = 1 / math.sqrt(d_model)
    return nn.init.uniform_(tensor, -bound, bound)


def _checked_edges(bin_edges, n_numeric: int) -> np.ndarray:
    """``bin_edges`` as float32 of shape (n_numeric, n_bins + 1), finite and sorted per row; ValueError otherwise."""
    if not n_numeric:
        return np.zeros((0, 2), np.float32)  # [] without numbers
    edges = np.asarray([] if bin_edges is None else bin_edges, dtype=np.float32)
    if edges.ndim != 2 or edges.shape[0] != n_numeric or edges.shape[1] < 2:
        raise ValueError(f"piecewise embedding needs bin_edges of shape ({n_numeric}, n_bins + 1), got shape {edges.shape}")
    if not np.isfinite(edges).all() or (np.diff(edges, axis=1) < 0).any():
        raise ValueError("piecewise bin_edges must be finite and sorted within each column")
    return edges


class TabularEmbedder(Augmented, nn.Module):
    """Embed ``cat_ids``, ``num_values`` and ``num_missing`` as ``(B, n_num + n_cat, D)`` tokens.

    Numeric tokens come first, then categorical ones; each column has its own
    embedding weights. A missing numeric value gets its column's learned "missing" token.

    Parameters
    ----------
    cardinalities : list of int
        Id-space size of each categorical column (categories + 2 special ids).
    n_numeric : int
        Number of numeric columns.
    d_model : int
        Token width ``D``.
    numeric_embedding : {"periodic", "linear", "piecewise"}, default="periodic"
        ``"linear"``: ``x * w_j + b_j``; ``"periodic"``:
        ``ReLU(W_j [cos(2π c_j x), sin(2π c_j x)] + b_j)`` with learned frequencies ``c_j``;
        ``"piecewise"``: ``ReLU(W_j PLE_j(x) + x v_j + b_j)``, where bin ``t`` of ``PLE_j(x)`` is how
        far ``x`` has crossed it, ``clip((x - lower_t) / width_t, 0, 1)``.
    n_frequencies : int, default=16
        Number of frequencies ``k`` per numeric column (periodic only).
    frequency_scale : float, default=0.1
        Standard deviation of the frequencies' initialisation (periodic only).
    category_dropout : float, default=0.0
        In training mode, each present category is read as its column's "unseen" id
        (``UNSEEN_ID``) with this probability, so that id is trained.
    bin_edges : array-like of shape (n_numeric, n_bins + 1), optional
        Piecewise embedding: each column's sorted bin edges. A bin of width 0 (a column
        with fewer bins repeats its last edge) encodes as 0. The paper leaves the first and
        last bin open-ended; here every bin is clipped to [0, 1], so a value past the
        training range reads as the range's end. Required by it: other shapes, non-finite
        or unsorted edges raise ``ValueError``.
    """

    def __init__(
        self,
        cardinalities,
        n_numeric,
        d_model,
        numeric_embedding="periodic",
        n_frequencies=16,
        frequency_scale=0.1,
        category_dropout=0.0,
        bin_edges=None,
    ):
        super().__init__()
        self.category_dropout = category_dropout
        self.n_categorical = len(cardinalities)
        self.n_numeric = n_numeric
        self.numeric_embedding = numeric_embedding
        # One table for all columns; offsets keep each column's ids apart, which is
        # one embedding lookup instead of a Python loop over columns.
        offsets = np.concatenate([[0], np.cumsum(cardinalities)[:-1]]) if cardinalities else np.zeros(0)
        self.register_buffer("category_offsets", torch.as_tensor(offsets, dtype=torch.long), persistent=False)
        self.category_embedding = nn.Embedding(max(1, int(sum(cardinalities))), d_model)
        _uniform_(self.category_embedding.weight, d_model)
        self.column_embedding = nn.Parameter(_uniform_(torch.empty(self.n_categorical, d_model), d_model))

        if numeric_embedding == "periodic":
            self.frequencies = nn.Parameter(torch.randn(n_numeric, n_frequencies) * frequency_scale)
            self.numeric_weight = nn.Parameter(_uniform_(torch.empty(n_numeric, 2 * n_frequencies, d_model), 2 * n_frequencies))
        elif numeric_embedding == "piecewise":
            edges = torch.as_tensor(_checked_edges(bin_edges, n_numeric))
            width = edges[:, 1:] - edges[:, :-1]
            # Derived from the spec (the tokenizer's bin_edges_), so not saved with the weights.
            self.register_buffer("bin_lower", edges[:, :-1].contiguous(), persistent=False)
            self.register_buffer("bin_scale", torch.where(width > 0, 1 / width.clamp_min(1e-12), 0.0), persistent=False)
            # Departs from the paper: a linear term x * v_j beside the bins (as rtdl's "version B",
            # which also starts the bins' weights at 0: that cost Adult's demo rows 0.005, random ones do not).
            # Without it a column a tree split once (2 bins of 32) gave tokens too alike to train:
            # a 2% class behind one threshold stayed unlearnt (tests/test_collapse.py).
            n_bins = edges.shape[1] - 1
            self.numeric_weight = nn.Parameter(_uniform_(torch.empty(n_numeric, n_bins, d_model), n_bins))
            self.numeric_linear = nn.Parameter(_uniform_(torch.empty(n_numeric, d_model), d_model))
        else:
            self.numeric_weight = nn.Parameter(_uniform_(torch.empty(n_numeric, d_model), d_model))
        self.numeric_bias = nn.Parameter(_uniform_(torch.empty(n_numeric, d_model), d_model))
        self.missing_embedding = nn.Parameter(_uniform_(torch.empty(n_numeric, d_model), d_model))

    def grow_categories(self, cardinalities) -> torch.Tensor:
        """Make room for new categories at the end of each column's id space, keeping every old row.

        Row ``r`` of column ``j`` keeps its weights (exactly) and its column-local id; the
        rows added after it are initialised as fresh ones. The table becomes a new
        ``nn.Parameter``, so an optimizer holding the old one must be given the new one.

        Parameters
        ----------
        cardinalities : list of int
            New id-space size of each categorical column, each at least the current one.

        Returns
        -------
        positions : long Tensor of shape (n_old_rows,)
            The row of the new table each old row moved to (for optimizer state).

        Raises
        ------
        ValueError
            If the number of columns differs or a column would shrink.
        """
        old_offsets = self.category_offsets.tolist()
        old_sizes = np.diff(old_offsets + [self.category_embedding.num_embeddings]).tolist()
        if len(cardinalities) != self.n_categorical or any(new < old for new, old in zip(cardinalities, old_sizes)):
            raise ValueError(f"cannot grow category id spaces of sizes {old_sizes} to {list(cardinalities)}")
        old = self.category_embedding.weight
        weight = _uniform_(old.new_empty(int(sum(cardinalities)), old.shape[1]), old.shape[1])
        offsets = np.concatenate([[0], np.cumsum(cardinalities)[:-1]]).astype(int).tolist()
        positions = torch.cat([torch.arange(size) + new_start for size, new_start in zip(old_sizes, offsets)]).to(old.device)
        with torch.no_grad():
            weight[positions] = old[: len(positions)]
        self.category_embedding.weight = nn.Parameter(weight, requires_grad=old.requires_grad)
        self.category_embedding.num_embeddings = weight.shape[0]
        self.category_offsets = torch.as_tensor(offsets, dtype=torch.long, device=self.category_offsets.device)
        return positions

    def embed_numeric(self, values: torch.Tensor, missing: torch.Tensor) -> torch.Tensor:
        """Embed the numeric columns.

        Parameters
        ----------
        values : float Tensor of shape (B, n_numeric)
            Scaled values (anything where missing).
        missing : bool Tensor of shape (B, n_numeric)
            ``True`` where the value is missing.

        Returns
        -------
        tokens : Tensor of shape (B, n_numeric, D)
        """
        if self.numeric_embedding == "periodic":
            angles = 2 * math.pi * values[..., None] * self.frequencies  # (B, n, k)
            features = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)  # (B, n, 2k)
            tokens = torch.relu(torch.einsum("bnk,nkd->bnd", features, self.numeric_weight) + self.numeric_bias)
        elif self.numeric_embedding == "piecewise":
            features = ((values[..., None] - self.bin_lower) * self.bin_scale).clamp(0, 1)  # (B, n, bins)
            linear = values[..., None] * self.numeric_linear
            tokens = torch.relu(torch.einsum("bnk,nkd->bnd", features, self.numeric_weight) + linear + self.numeric_bias)
        else:
            tokens = values[..., None] * self.numeric_weight + self.numeric_bias
        return torch.where(missing[..., None], self.missing_embedding.to(tokens.dtype), tokens)

    def forward(self, cat_ids=None, num_values=None, num_missing=None):
        """Embed a table batch.

        Parameters
        ----------
        cat_ids : long Tensor of shape (B, n_categorical), or None when there is no categorical column
        num_values : float Tensor of shape (B, n_numeric), or None when there is no numeric column
        num_missing : bool Tensor of shape (B, n_numeric), or None when there is no numeric column

        Returns
        -------
        tokens : Tensor of shape (B, n_numeric + n_categorical, D)
        mask : None
            Tables have no padding.
        """
        parts = []
        if self.n_numeric:
            parts.append(self.embed_numeric(num_values, num_missing))
        if self.n_categorical:
            if self.augmenting and getattr(self, "category_dropout", 0.0) > 0:
                # Ids 0 and 1 are missing and unseen; a missing cell stays missing.
                drop = (torch.rand(cat_ids.shape, device=cat_ids.device) < self.category_dropout) & (cat_ids > UNSEEN_ID)
                cat_ids = torch.where(drop, torch.full_like(cat_ids, UNSEEN_ID), cat_ids)
            parts.append(self.category_embedding(cat_ids + self.category_offsets) + self.column_embedding)
        tokens = torch.cat(parts, dim=1)
        return tokens, None
