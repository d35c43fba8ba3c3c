"""What a fitted estimator attends to: CLS attention per token, per column, per image patch,
and sub-words merged back into words."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted

__all__ = ["explain", "attention_map", "aggregate_subwords"]


def explain(estimator, X, layer="all", level="token") -> pd.DataFrame:
    """CLS attention over the input tokens, averaged over heads, as a tidy DataFrame.

    Parameters
    ----------
    estimator : fitted tabformer estimator
        One with a single token sequence (not late fusion).
    X : input accepted by ``estimator.predict``
        ``n`` rows, texts or images.
    layer : "all" or int, default="all"
        Which encoder layer(s) to report (0-based; negative counts from the last).
    level : {"token", "column"}, default="token"
        ``"token"``: one row per token. ``"column"``: attention summed over the tokens
        of each input column (all words of a text column, all patches of an image).

    Returns
    -------
    frame : DataFrame, one row per (row, layer, token)
        Columns ``row`` (position in ``X``), ``layer``, ``token`` (index
        in the token sequence, CLS excluded), ``column`` (input column the token comes
        from; ``"text"``/``"image"`` for a single text or image input), ``label`` (a
        sub-word, a patch ``"r{i}c{j}"`` or a table column) and ``attention`` (weight the
        CLS query puts on that token; padding and masked segments excluded, so one row
        and layer sums to at most 1, the rest being CLS's self-attention). With
        ``level="column"``: ``row``, ``layer``, ``column``, ``n_tokens``, ``attention``.

    Raises
    ------
    ValueError
        If ``level`` or ``layer`` is invalid.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    """
    check_is_fitted(estimator)
    if level not in ("token", "column"):
        raise ValueError(f"level must be 'token' or 'column', got {level!r}")
    batch = estimator.tokenize(X)
    _, maps = estimator.forward_features(batch, return_attention=True)
    described = estimator.tokenizer_.describe_tokens(batch)
    if layer == "all":
        layers = range(len(maps))
    elif isinstance(layer, (int, np.integer)) and -len(maps) <= layer < len(maps):
        layers = [int(layer) % len(maps)]
    else:
        raise ValueError(f"layer must be 'all' or an int in [{-len(maps)}, {len(maps) - 1}], got {layer!r}")
    records = []
    for layer_index in layers:
        cls_rows = maps[layer_index].mean(axis=1)[:, 0, 1:]  # (n, T): CLS query, heads averaged
        for row, tokens in enumerate(described):
            for position, column, label in tokens:
                records.append((row, layer_index, position, column, label, float(cls_rows[row, position])))
    frame = pd.DataFrame.from_records(records, columns=["row", "layer", "token", "column", "label", "attention"])
    if level == "column":
        frame = (
            frame.groupby(["row", "layer", "column"], sort=False)
            .agg(n_tokens=("token", "size"), attention=("attention", "sum"))
            .reset_index()
        )
    return frame


def attention_map(estimator, X, layer=-1, upsample=False) -> np.ndarray:
    """CLS attention over the patches, as an image-shaped map to overlay.

    Parameters
    ----------
    estimator : fitted TabFormerClassifier or TabFormerRegressor
        One with a :class:`~tabformer.tokenizers.PatchTokenizer`.
    X : images accepted by ``estimator.predict``
        ``n_images`` images.
    layer : int or "mean", default=-1
        Encoder layer whose attention to read (heads averaged), or the mean over layers.
    upsample : bool, default=False
        Bilinearly resize the map to the image size, for overlaying.

    Returns
    -------
    ndarray of shape (n_images, h, w), or (n_images, H, W) with ``upsample``
        The CLS query's attention on each patch (each map sums to at most 1; the rest
        is CLS's attention to itself); ``(h, w)`` is the tokenizer's ``grid_shape_``.

    Raises
    ------
    TypeError
        If the estimator's tokenizer is not an image tokenizer.
    """
    check_is_fitted(estimator)
    tokenizer = estimator.tokenizer_
    if not hasattr(tokenizer, "grid_shape_"):
        raise TypeError(f"attention_map needs an image tokenizer, the estimator has {type(tokenizer).__name__}")
    _, maps = estimator.forward_features(tokenizer.transform(X), return_attention=True)
    if layer == "mean":
        cls = np.mean([m.mean(axis=1)[:, 0, 1:] for m in maps], axis=0)
    else:
        cls = maps[layer].mean(axis=1)[:, 0, 1:]
    grid = cls.reshape(len(cls), *tokenizer.grid_shape_)
    if upsample:
        grid = torch.nn.functional.interpolate(
            torch.from_numpy(grid)[:, None], size=tokenizer.image_size_, mode="bilinear", align_corners=False
        )[:, 0].numpy()
    return grid


def aggregate_subwords(frame: pd.DataFrame) -> pd.DataFrame:
    """Merge ``explain`` rows of WordPiece continuations (``##xx``) into whole words.

    Parameters
    ----------
    frame : DataFrame
        The ``level="token"`` output of :func:`explain` (or ``TabFormerClassifier.explain``)
        for an estimator with a WordPiece tokenizer.

    Returns
    -------
    words : DataFrame, one row per (row, layer, word)
        Columns ``row``, ``layer``, ``word`` (position of the word in the
        row), ``label`` (the word, ``##`` joined) and ``attention`` (sum over its
        sub-words); [SEP] stays a word of its own.
    """
    frame = frame.sort_values(["row", "layer", "token"])
    starts = ~frame["label"].astype(str).str.startswith("##")
    word = starts.astype(int).groupby([frame["row"], frame["layer"]]).cumsum() - 1
    grouped = frame.assign(word=word).groupby(["row", "layer", "word"], sort=True)
    out = grouped.agg(
        label=("label", lambda s: "".join(t[2:] if t.startswith("##") else t for t in s)), attention=("attention", "sum")
    )
    return out.reset_index()[["row", "layer", "word", "label", "attention"]]
