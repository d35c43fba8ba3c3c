"""Random crops of tokenized texts: the text view of a mixed row's SimCLR pair.

Used by :class:`~tabformer.pretraining.views.MixedTwoViewDataset`.
"""

from __future__ import annotations

import torch

from ..tokenizers.base import PAD

__all__ = ["crop_text"]

#: what a position outside a cropped text holds, per text array
_TEXT_FILL = {"input_ids": PAD, "attention_mask": False, "token_type_ids": 0, "word_ids": -1}


def crop_text(arrays: dict, min_fraction: float, generator: torch.Generator) -> dict:
    """Keep a random contiguous span of every row's words, moved to the front.

    The words of a row are its real tokens but the last one, the ``[SEP]`` the tokenizer appends (also after a text
    truncated at ``max_length``). A row of ``k`` words keeps ``L`` of them, ``L`` uniform in ``[ceil(min_fraction * k), k]``
    (at least 1 when ``k >= 1``), starting at a uniform offset; the span is followed by the row's ``[SEP]`` and padding.
    So a crop looks like a shorter text: positions restart at 0, as for a real text of that length.

    Parameters
    ----------
    arrays : dict of Tensor
        ``input_ids`` and ``attention_mask`` of shape (B, T); optionally ``token_type_ids`` / ``word_ids`` (gathered the
        same way) and 1-D arrays such as ``present`` (kept).
    min_fraction : float in (0, 1]
        Smallest share of a row's words that is kept.
    generator : torch.Generator

    Returns
    -------
    arrays : dict of Tensor
        The same keys and shapes.
    """
    mask = arrays["attention_mask"].bool()
    n_rows, width = mask.shape
    lengths = mask.sum(dim=1)
    words = (lengths - 1).clamp(min=0)
    shortest = torch.ceil(words.double() * min_fraction).long().clamp(min=1).minimum(words)
    keep = shortest + (torch.rand(n_rows, generator=generator, dtype=torch.float64) * (words - shortest + 1)).long()
    start = (torch.rand(n_rows, generator=generator, dtype=torch.float64) * (words - keep + 1)).long()
    position = torch.arange(width)[None, :]
    keep, start, last = keep[:, None], start[:, None], (lengths - 1).clamp(min=0)[:, None]
    source = torch.where(position < keep, start + position, last.expand(n_rows, width))
    inside = (position <= keep) & (lengths > 0)[:, None]
    out = {}
    for name, value in arrays.items():
        if value.ndim == 2 and value.shape == mask.shape:
            fill = _TEXT_FILL.get(name, 0)
            value = torch.where(inside, value.gather(1, source), torch.full_like(value, fill))
        out[name] = value
    return out
