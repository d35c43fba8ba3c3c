"""Several independently initialised models trained side by side; their predictions average."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["EnsembleModel", "COMBINES", "FOLD"]

#: the batch key of each row's fold: in eval mode the row's prediction is then its fold member's alone
FOLD = "ensemble_fold"

#: how member outputs become one prediction: mean probability (softmax or sigmoid outputs), mean value, or the log of
#: the mean of exp (log-rates: the members' mean rate)
COMBINES = ("softmax", "sigmoid", "mean", "logmeanexp")


class EnsembleModel(nn.Module):
    """A deep ensemble in one module: ``k`` members, each its own embedder, encoder and head.

    Departs from a deep ensemble of separate fits (Lakshminarayanan et al., 2017) as TabM
    does (Gorishniy et al., 2024): the members see the same batches and share one early
    stopping, so one fit trains them all. Each member keeps its own loss (the estimator
    averages the members' losses in training); a loss on the averaged prediction would
    train them as one wide model, and the members would lose the independence that makes
    an average better than each of them.

    Parameters
    ----------
    members : list of nn.Module
        Models of one architecture, each ``member(**batch) -> Tensor (B, ...)``.
    combine : {"softmax", "sigmoid", "mean", "logmeanexp"}
        ``"softmax"``: members give logits of one label; the ensemble returns the logarithm of
        the mean probability, so a softmax of its output is the members' mean probability.
        ``"sigmoid"``: independent logits (multi-label); the ensemble returns the logit of the
        mean probability. ``"mean"``: the mean output (regression). ``"logmeanexp"``: members
        give log-rates (a Poisson regressor's log link); the ensemble returns the log of their
        mean rate, so its exp is the members' mean prediction, not their geometric mean.

    Attributes
    ----------
    members : nn.ModuleList

    Examples
    --------
    >>> import torch
    >>> ensemble = EnsembleModel([torch.nn.Linear(3, 2) for _ in range(4)], "softmax").eval()
    >>> ensemble(input=torch.randn(5, 3)).shape  # doctest: +SKIP
    torch.Size([5, 2])
    """

    def __init__(self, members, combine: str):
        super().__init__()
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {combine!r}")
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got {len(members)}")
        self.members = nn.ModuleList(members)
        self.combine = combine

    def forward(self, **batch) -> torch.Tensor:
        """Each member's output stacked (training), or the combined prediction (eval).

        Parameters
        ----------
        **batch : Tensor
            A tokenized batch; under ``FOLD`` (optional), each row's fold, int Tensor of shape (B,).

        Returns
        -------
        Tensor of shape (k, B, ...) in training mode; in eval mode (B, ...): the combined
        prediction, or with ``FOLD`` each row's out-of-fold prediction (the member of its fold
        did not train on it), as float32.
        """
        fold = batch.pop(FOLD, None)
        if fold is None:
            outputs = torch.stack([member(**batch) for member in self.members])
            return outputs if self.training else self.combined(outputs)
        fold = fold.to(next(iter(batch.values())).device)
        # Each member runs on the rows its loss reads: in training every fold but its own (its fold's rows
        # would weigh 0), in eval its own fold's alone. Computing all rows costs 25% more in training, 5x in eval.
        parts = [
            (member, torch.nonzero(fold != index if self.training else fold == index).squeeze(1))
            for index, member in enumerate(self.members)
        ]
        outputs = [member(**{key: value[rows] for key, value in batch.items()}) if len(rows) else None for member, rows in parts]
        template = next(out for out in outputs if out is not None)
        empty = template.new_zeros((len(fold), *template.shape[1:]))
        if not self.training:  # each row is filled by its fold's member alone
            for (_, rows), out in zip(parts, outputs):
                if out is not None:
                    empty = empty.index_copy(0, rows, out.to(empty.dtype))
            return empty.float()
        # rows outside a member's training folds hold 0 there, and weigh 0 in its loss
        return torch.stack(
            [empty if out is None else empty.index_copy(0, rows, out.to(empty.dtype)) for (_, rows), out in zip(parts, outputs)]
        )

    def combined(self, outputs: torch.Tensor) -> torch.Tensor:
        """One prediction from the members' stacked outputs, in float32.

        Parameters
        ----------
        outputs : Tensor of shape (k, B, ...)

        Returns
        -------
        Tensor of shape (B, ...)
        """
        outputs = outputs.float()
        log_k = math.log(len(outputs))
        if self.combine == "softmax":
            return torch.logsumexp(torch.log_softmax(outputs, dim=-1), dim=0) - log_k
        if self.combine == "logmeanexp":
            return torch.logsumexp(outputs, dim=0) - log_k
        if self.combine == "sigmoid":
            log_p = torch.logsumexp(nn.functional.logsigmoid(outputs), dim=0)
            log_not_p = torch.logsumexp(nn.functional.logsigmoid(-outputs), dim=0)
            return log_p - log_not_p  # the shared log k cancels
        return outputs.mean(dim=0)

    # ------------------------------------------------------------------ what a single model offers
    @property
    def head(self) -> nn.Module:
        """The first member's head (the members share its settings, e.g. ``pooling``)."""
        return self.members[0].head

    @property
    def encoder(self) -> nn.Module:
        """The first member's encoder: what saving an encoder, or warm-starting from this model, reads."""
        return self.members[0].encoder

    @property
    def embedder(self) -> nn.Module:
        """The first member's embedder (see :attr:`encoder`)."""
        return self.members[0].embedder

    @property
    def encoders(self) -> list:
        """Every member's encoder(s), in member order."""
        # Not getattr(member, "encoders", [member.encoder]): its default is evaluated first, and a late-fused member has
        # no `encoder`, so the property raised and saving the ensemble failed
        own = [member.encoders if hasattr(member, "encoders") else [member.encoder] for member in self.members]
        return [encoder for encoders in own for encoder in encoders]

    def encode(self, return_attention: bool = False, **batch):
        """The members' encoder outputs side by side, and their mean attention, as
        :meth:`TabFormerModel.encode <tabformer.nn.models.TabFormerModel.encode>`.

        Parameters
        ----------
        return_attention : bool, default=False
            Also return the members' mean attention maps.
        **batch : Tensor
            A tokenized batch, each tensor of shape (B, ...).

        Returns
        -------
        out : Tensor of shape (B, 1+T, k * D), or ``(hidden, attention)`` if ``return_attention``;
            ``attention`` is a list (one per layer) of the members' mean maps (B, H, 1+T, 1+T).
        mask : bool Tensor of shape (B, T), or None
        """
        results = [member.encode(return_attention, **batch) for member in self.members]
        return _side_by_side([out for out, _ in results], return_attention), results[0][1]

    def forward_features(self, return_attention: bool = False, **batch):
        """The members' features side by side (and their mean attention maps).

        Parameters
        ----------
        return_attention : bool, default=False
            Also return the members' mean attention maps.
        **batch : Tensor
            A tokenized batch, each tensor of shape (B, ...).

        Returns
        -------
        hidden : Tensor of shape (B, 1+T, k * D)
        attention : list of Tensor of shape (B, H, 1+T, 1+T), only if ``return_attention``
        """
        outputs = [member.forward_features(return_attention, **batch) for member in self.members]
        return _side_by_side(outputs, return_attention)


def _side_by_side(outputs: list, return_attention: bool):
    """Members' hidden states concatenated on the feature axis; attention maps averaged over members."""
    if not return_attention:
        return torch.cat(outputs, dim=-1)
    hidden = torch.cat([out[0] for out in outputs], dim=-1)
    attention = [torch.stack(maps).mean(dim=0) for maps in zip(*(out[1] for out in outputs))]
    return hidden, attention
