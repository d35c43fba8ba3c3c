"""The pretraining losses, as plain functions of what the objective heads predict."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["nt_xent_loss", "masked_token_loss", "masked_token_loss_sum", "masked_cell_loss", "masked_cell_loss_sum"]


def nt_xent_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """Normalised-temperature cross-entropy over ``2B`` projections.

    For each of the ``2B`` projections, the positive is the other view of the same
    image and the negatives are the remaining ``2B - 2``; similarities are cosines
    divided by ``temperature``. Returns the mean loss over the ``2B`` anchors.

    Parameters
    ----------
    z1, z2 : Tensor of shape (B, k)
        Projections of the first and second views (row ``i`` of both is image ``i``).
    temperature : float, default=0.5
        Divisor of the cosine similarities.

    Returns
    -------
    loss : scalar float32 Tensor

    Raises
    ------
    ValueError
        If ``z1`` and ``z2`` are not 2-D of one shape, or ``B < 2``.
    """
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1 and z2 must be (B, k) of the same shape, got {tuple(z1.shape)} and {tuple(z2.shape)}")
    batch = z1.shape[0]
    if batch < 2:
        raise ValueError("NT-Xent needs at least 2 images per batch (the others are the negatives)")
    z = F.normalize(torch.cat([z1, z2]).float(), dim=1)
    logits = z @ z.T / temperature
    # A finite fill (not -inf) keeps the row's softmax NaN-free under any dtype.
    logits = logits.masked_fill(torch.eye(2 * batch, dtype=torch.bool, device=z.device), torch.finfo(logits.dtype).min)
    positives = torch.cat([torch.arange(batch, 2 * batch), torch.arange(batch)]).to(z.device)
    return F.cross_entropy(logits, positives)


def masked_token_loss(predictions) -> torch.Tensor:
    """Mean cross-entropy over every masked position of every vocabulary.

    Parameters
    ----------
    predictions : list of (logits (n_i, V_i), target (n_i,))
        One pair per vocabulary (a text tokenizer's words, a table's categories), holding
        only the masked positions. Summed, then divided by the number of positions, so
        words and cells weigh by how many were masked.

    Returns
    -------
    loss : scalar Tensor
        0 (with a gradient path) when nothing was masked in the batch.
    """
    total, count = masked_token_loss_sum(predictions)
    return total if count == 0 else total / count


def masked_token_loss_sum(predictions) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy over every masked position, and the number of positions.

    What ``TabFormerPretrainer.score`` adds up over batches, so that it averages over all masked positions of ``X``
    (a mean of per-batch means weighed batches by rows instead, and a batch masking nothing as a perfect one).

    Parameters
    ----------
    predictions : list of (logits (n_i, V_i), target (n_i,))
        As :func:`masked_token_loss`.

    Returns
    -------
    total : scalar Tensor
        Sum of the cross-entropies (0, with a gradient path, when nothing was masked).
    count : int
        Number of masked positions.
    """
    total, count = None, 0
    for logits, target in predictions:
        if len(target):
            part = F.cross_entropy(logits.float(), target, reduction="sum")
            total = part if total is None else total + part
            count += len(target)
    if total is None:
        return sum(logits.sum() for logits, _ in predictions) * 0.0, 0  # nothing masked in this batch
    return total, count


def masked_cell_loss(categorical, numeric, numeric_weight: float = 1.0) -> torch.Tensor:
    """Mean over the hidden cells of a table: cross-entropy for categories, squared error for numbers.

    Parameters
    ----------
    categorical : list of (logits (n_c, R), target (n_c,))
        The hidden categorical cells (an empty list for a table without categorical columns).
    numeric : (predicted (n_n,), target (n_n,))
        Predicted and true standardised values of the hidden numeric cells.
    numeric_weight : float, default=1.0
        Weight of one squared error against one cross-entropy.

    Returns
    -------
    loss : scalar Tensor
        ``(sum of cross-entropies + numeric_weight * sum of squared errors) / (n_c + n_n)``;
        0 (with a gradient path) when nothing was hidden in the batch.

    Examples
    --------
    >>> import torch
    >>> float(masked_cell_loss([], (torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]))))
    0.5
    """
    total, count = masked_cell_loss_sum(categorical, numeric, numeric_weight)
    if count == 0:
        return total * 0.0  # nothing hidden in this batch; the empty sums keep the gradient path
    return total / count


def masked_cell_loss_sum(categorical, numeric, numeric_weight: float = 1.0) -> tuple[torch.Tensor, int]:
    """Summed loss over the hidden cells of a table, and the number of hidden cells.

    What ``TabFormerPretrainer.score`` adds up over batches (see :func:`masked_token_loss_sum`).

    Parameters
    ----------
    categorical, numeric, numeric_weight
        As :func:`masked_cell_loss`.

    Returns
    -------
    total : scalar Tensor
        ``sum of cross-entropies + numeric_weight * sum of squared errors`` (0 when nothing was hidden).
    count : int
        ``n_c + n_n``, the number of hidden cells.
    """
    predicted, target = numeric
    total = numeric_weight * F.mse_loss(predicted.float(), target.float(), reduction="sum")
    count = len(target)
    for logits, labels in categorical:
        total = total + F.cross_entropy(logits.float(), labels, reduction="sum")
        count += len(labels)
    return total, count
