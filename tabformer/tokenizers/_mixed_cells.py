"""What a :class:`~tabformer.tokenizers.MixedTokenizer` feeds its sub-tokenizers for a missing text or image cell."""

from __future__ import annotations

import numpy as np

__all__ = ["missing_placeholder"]


def missing_placeholder(tokenizer, kind: str):
    """What a missing cell is tokenized as before its segment is masked out.

    Parameters
    ----------
    tokenizer : BaseTokenizer
        The fitted text or image sub-tokenizer of the cell's column.
    kind : {"text", "image"}
        The column's segment kind.

    Returns
    -------
    str or ndarray
        ``""`` for text; for images, a black image the tokenizer accepts: of the training
        images' size when it resizes only that size (the estimators' upscale to the
        pretrained stem, ``accept_any_size=False``), else of its output size, with the
        fitted channels and pixel dtype.
    """
    if kind == "text":
        return ""
    dtype = {"float": np.float32, "bool": np.bool_}.get(getattr(tokenizer, "pixel_kind_", None), np.uint8)  # as fitted
    size = getattr(tokenizer, "input_size_", None) or tokenizer.image_size_
    return np.zeros((*size, tokenizer.n_channels_), dtype=dtype)
