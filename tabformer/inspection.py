"""What a fitted estimator attends to: the attention its head reads per token, per column,
per image patch, and sub-words merged back into words.

The head reads CLS's output (``head__pooling="cls"``) or the mean of the outputs of CLS and
every real token (``"mean"``, the text recipes'), so "the attention the head reads" is CLS's
attention row, or the mean of the rows of those queries. Reading CLS's row under a
mean-pooling head would report a query the prediction hardly depends on (1 of 1+T).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted

from .nn.heads import TokenClassificationHead

__all__ = ["explain", "modality_ablation", "attention_map", "aggregate_subwords"]


def explain(estimator, X, layer="all", level="token", y=None, query="auto") -> pd.DataFrame:
    """The attention the head reads over the input tokens, averaged over heads, as a tidy DataFrame.

    Parameters
    ----------
    estimator : fitted tabformer estimator
        Late fusion too: each modality's encoder attends over its own tokens, laid out where
        they would sit in one sequence, each weight divided by the number of modalities
        (docs/mixed.md, "Explanations").
    X : input accepted by ``estimator.predict``
        ``n`` rows, texts or images; a Parquet path or an image folder as ``predict`` reads
        it (``estimator.tokenize``), whole.
    layer : "all" or int, default="all"
        Which encoder layer(s) to report (0-based; negative counts from the last).
    level : {"token", "column"}, default="token"
        ``"token"``: one row per token. ``"column"``: attention summed over the tokens
        of each input column (all words of a text column, all patches of an image), and
        divided by their number.
    y : array-like of shape (n_samples,), optional
        True targets of ``X``. With ``level="column"``, adds each modality's ablation
        score (see :func:`modality_ablation`); mixed inputs only. ``level="token"`` refuses it.
    query : {"auto", "cls", "mean"}, default="auto"
        Whose attention: ``"cls"`` the CLS query's row; ``"mean"`` the mean of the rows of
        CLS and every real token (what a mean-pooling head averages the outputs of);
        ``"auto"`` the one the estimator's head reads (``head__pooling``; CLS for a head
        without pooling). A tagger is refused: its head has no one query.

    Returns
    -------
    frame : DataFrame, one row per (row, layer, token)
        Columns ``row`` (position in ``X``), ``layer``, ``token`` (index
        in the token sequence, CLS excluded), ``column`` (input column the token comes
        from; ``"text"``/``"image"`` for a single text or image input), ``label`` (a
        sub-word, a patch ``"r{i}c{j}"`` or a table column) and ``attention`` (weight the
        query (``query``) puts on that token; padding and masked segments excluded, so one
        row and layer sums to at most 1, the rest being the attention to CLS). With
        ``level="column"``: ``row``, ``layer``, ``column``, ``modality`` (``"text"``,
        ``"image"`` or ``"table"``), ``n_tokens``, ``attention`` (the sum over the
        column's tokens) and ``attention_per_token`` (that sum over ``n_tokens``). A
        64-patch image gathers more *summed* attention than a price cell only because it
        has 64 tokens; compare ``attention_per_token`` to see which tokens the query prefers,
        and ``ablation`` (with ``y``) to see what the prediction needs. With ``y``, also
        ``ablation``: the drop in ``estimator.score`` on ``(X, y)`` when the column's
        whole modality is masked (the same value on every row of that modality; the
        columns of one sub-tokenizer, as in :func:`modality_ablation`'s rows).

    Raises
    ------
    TypeError
        If ``estimator`` is a tagger: its head reads each sub-word's own output, not a pooled query's.
    ValueError
        If ``level``, ``layer`` or ``query`` is invalid, ``y`` comes with ``level="token"``, or ``y``
        comes with ``level="column"`` for an estimator whose input is not mixed.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    """
    check_is_fitted(estimator)
    _check_pooled(estimator)
    if level not in ("token", "column"):
        raise ValueError(f"level must be 'token' or 'column', got {level!r}")
    query = _query(estimator, query)
    if level == "token" and y is not None:  # a y that changes nothing would read as if it had been used
        raise ValueError(
            "explain uses y only with level='column' (each modality's ablation score); level='token' has no use "
            "for it. Leave y out, or pass level='column'"
        )
    if level == "column" and y is not None and not hasattr(estimator.tokenizer_, "segments_"):
        # Masking the only modality leaves no input at all: there is no other modality to compare with.
        raise ValueError(
            f"explain(level='column', y=...) adds each modality's ablation score, which needs mixed inputs (a "
            f"MixedTokenizer: text, image and table columns together); this estimator's {type(estimator.tokenizer_).__name__} "
            "reads one modality. Leave y out for the per-column attention"
        )
    batch = estimator.tokenize(X)
    _, maps = estimator.forward_features(batch, return_attention=True)
    described = estimator.tokenizer_.describe_tokens(batch)
    layers = range(len(maps)) if isinstance(layer, str) and layer == "all" else [_layer_index(layer, len(maps), "all")]
    records = []
    for layer_index in layers:
        read = _read_attention(maps[layer_index], described, query)  # (n, T), heads averaged
        for row, tokens in enumerate(described):
            for position, column, label in tokens:
                records.append((row, layer_index, position, column, label, float(read[row, position])))
    frame = pd.DataFrame.from_records(records, columns=["row", "layer", "token", "column", "label", "attention"])
    if level == "column":
        frame = (
            frame.groupby(["row", "layer", "column"], sort=False)
            .agg(n_tokens=("token", "size"), attention=("attention", "sum"))
            .reset_index()
        )
        frame["attention_per_token"] = frame["attention"] / frame["n_tokens"]
        owners = _column_owners(estimator.tokenizer_)
        kinds = _segment_kinds(estimator.tokenizer_) if owners else {}
        modality_of = {column: kinds[name] for column, name in owners.items()}
        frame.insert(3, "modality", frame["column"].map(lambda column: modality_of.get(column, _kind(estimator.tokenizer_))))
        if y is not None:  # the tokens explain already computed, not a second tokenization
            # By sub-tokenizer, not by kind: two text tokenizers are two modalities ("t1", "t2"), each its own drop.
            drops = dict(zip([name for name, _, _ in estimator.tokenizer_.transformers_], _ablation(estimator, batch, y)["drop"]))
            frame["ablation"] = frame["column"].map(owners).map(drops)
    return frame


def _check_pooled(estimator) -> None:
    """Refuse a per-token head: no one query's attention explains its answers, and CLS's is never read."""
    model = getattr(estimator.module_, "members", [estimator.module_])[0]
    if isinstance(getattr(model, "head", None), TokenClassificationHead):
        raise TypeError(
            "explain reports the attention of the query a pooled head reads (CLS, or the mean of the tokens); "
            f"{type(estimator).__name__} reads each sub-word's own output (a word's tag at its first sub-word), never "
            "CLS's, so that attention would not explain its tags. For what a word attends to, read "
            "estimator.forward_features(X, return_attention=True)[1]: one (n, n_heads, 1+T, 1+T) map per layer, whose "
            "row 1+t is sub-word t's query (estimator.tokenize(X)['word_ids'][:, t] is its word)"
        )


def _query(estimator, query) -> str:
    """``query`` checked, ``"auto"`` resolved to the pooling of the estimator's head."""
    if not (isinstance(query, str) and query in ("auto", "cls", "mean")):
        raise ValueError(f"query must be 'auto', 'cls' or 'mean', got {query!r}")
    if query != "auto":
        return query
    return getattr(getattr(estimator.module_, "head", None), "pooling", "cls")


def _read_attention(layer_map: np.ndarray, described, query: str) -> np.ndarray:
    """(n, T) attention on the tokens (CLS excluded) of ``query``'s row(s), heads averaged.

    ``layer_map`` is one layer's (n, heads, 1+T, 1+T); ``described`` the tokenizer's
    ``describe_tokens``: the real tokens of each row, the queries a mean-pooling head reads
    beside CLS (padding and masked segments are not pooled).
    """
    heads = layer_map.mean(axis=1)
    if query == "cls":
        return heads[:, 0, 1:]
    read = np.empty((len(heads), heads.shape[-1] - 1), dtype=heads.dtype)
    for row, tokens in enumerate(described):
        queries = [0] + [1 + position for position, _, _ in tokens]
        read[row] = heads[row, queries, 1:].mean(axis=0)
    return read


def _layer_index(layer, n_layers: int, other: str) -> int:
    """``layer`` as a 0-based index into ``n_layers`` maps; a bool, a float or an index out of range is refused."""
    if isinstance(layer, (int, np.integer)) and not isinstance(layer, (bool, np.bool_)) and -n_layers <= layer < n_layers:
        return int(layer) % n_layers
    raise ValueError(f"layer must be {other!r} or an int in [{-n_layers}, {n_layers - 1}], got {layer!r}")


def _kind(tokenizer) -> str:
    return getattr(tokenizer, "kind", "table")


def _segment_kinds(tokenizer) -> dict:
    """``{sub-tokenizer name: "text" | "image" | "table"}`` of a fitted mixed tokenizer."""
    return {name: tokenizer.segment_kind(sub) for name, sub, _ in tokenizer.transformers_}


def _column_owners(tokenizer) -> dict:
    """``{column: sub-tokenizer name}`` for a mixed tokenizer's columns, named as ``describe_tokens`` names them."""
    if not hasattr(tokenizer, "segments_"):
        return {}
    kinds = _segment_kinds(tokenizer)
    owners = {}
    for name, sub, columns in tokenizer.transformers_:
        # A datetime column's tokens ('when.month_sin') are the column 'when' in explain's rows.
        labels = list(columns)
        if kinds[name] == "table":
            labels = list(sub.token_columns() if hasattr(sub, "token_columns") else sub.get_feature_names_out())
        owners.update(dict.fromkeys(labels, name))
    return owners


def modality_ablation(estimator, X, y) -> pd.DataFrame:
    """How much each modality of a mixed input matters: the score lost when it is masked.

    Every segment of the modality (each text or image column, or the table) is masked in
    every row, as a missing text or image is: the encoder does not see its tokens. The
    model is not refitted, so the drop measures what *this* model relies on, which may
    differ from what the data could offer (a modality the model learned to ignore shows
    a drop near 0 even if it is informative).

    Parameters
    ----------
    estimator : fitted tabformer classifier or regressor with a mixed tokenizer
    X : DataFrame of shape (n_samples, n_columns), or a Parquet path ``predict`` accepts
        Rows held out from training (a validation split), with their
    y : array-like of shape (n_samples,)
        true targets.

    Returns
    -------
    DataFrame with one row per modality
        ``modality`` (``"text"``, ``"image"``, ``"table"``; a sub-tokenizer's name when two
        share a kind), ``columns`` (the input columns masked), ``score`` (the estimator's
        ``score`` on ``(X, y)``), ``masked_score`` and ``drop`` (``score - masked_score``).

    Raises
    ------
    TypeError
        If the estimator's tokenizer is not a mixed one (one modality: nothing to compare).

    Examples
    --------
    >>> clf.modality_ablation(X_valid, y_valid)  # doctest: +SKIP
      modality    columns  score  masked_score   drop
    0     text     [name]  0.861         0.402  0.459
    1    image    [image]  0.861         0.790  0.071
    """
    check_is_fitted(estimator)
    return _ablation(estimator, estimator.tokenize(X), y)


def _ablation(estimator, tokens: dict, y) -> pd.DataFrame:
    """:func:`modality_ablation` on ``X``'s tokens."""
    tokenizer = estimator.tokenizer_
    if not hasattr(tokenizer, "segments_"):
        raise TypeError(f"modality_ablation needs mixed inputs (a MixedTokenizer), the estimator has {type(tokenizer).__name__}")
    n_rows = len(next(iter(tokens.values())))
    score = float(estimator.score(tokens, y))
    kinds = _segment_kinds(tokenizer)
    records = []
    for name, _, columns in tokenizer.transformers_:
        masked = dict(tokens)
        for key, segment_name, _ in tokenizer.segments_:
            if segment_name == name:
                masked[f"{key}/present"] = np.zeros(n_rows, dtype=bool)
        modality = kinds[name] if list(kinds.values()).count(kinds[name]) == 1 else name
        masked_score = float(estimator.score(masked, y))
        records.append((modality, list(columns), score, masked_score, score - masked_score))
    return pd.DataFrame.from_records(records, columns=["modality", "columns", "score", "masked_score", "drop"])


def attention_map(estimator, X, layer=-1, upsample=False, query="auto") -> np.ndarray:
    """The attention the head reads over the patches, as an image-shaped map to overlay.

    Parameters
    ----------
    estimator : fitted TabFormerClassifier or TabFormerRegressor
        One with a :class:`~tabformer.tokenizers.PatchTokenizer`.
    X : images accepted by ``estimator.predict``
        ``n_images`` images.
    layer : int or "mean", default=-1
        Encoder layer whose attention to read (heads averaged), or the mean over layers.
    upsample : bool, default=False
        Bilinearly resize the map to the size of the images in ``X`` (an array, or arrays or
        PIL images of one size), for overlaying on them; to the size the model sees them at
        (``image_size_``) when they differ or are files.
    query : {"auto", "cls", "mean"}, default="auto"
        Whose attention, as in :func:`explain`: the CLS query's, the mean over the queries
        of CLS and every patch, or (``"auto"``) the one the head reads.

    Returns
    -------
    ndarray of shape (n_images, h, w), or (n_images, H, W) with ``upsample``
        (``X``'s own image size even where the tokenizer resizes it)
        The query's attention on each patch (each map sums to at most 1; the rest is the
        attention to CLS); ``(h, w)`` is the tokenizer's ``grid_shape_``.

    Raises
    ------
    TypeError
        If the estimator's tokenizer is not an image tokenizer.
    ValueError
        If ``layer`` is neither ``"mean"`` nor an int in ``[-n_layers, n_layers - 1]``, or
        ``query`` is invalid.
    """
    check_is_fitted(estimator)
    tokenizer = estimator.tokenizer_
    if not hasattr(tokenizer, "grid_shape_"):
        raise TypeError(f"attention_map needs an image tokenizer, the estimator has {type(tokenizer).__name__}")
    query = _query(estimator, query)
    batch = estimator.tokenize(X)
    _, maps = estimator.forward_features(batch, return_attention=True)
    described = tokenizer.describe_tokens(batch) if query == "mean" else None
    if isinstance(layer, str) and layer == "mean":
        read = np.mean([_read_attention(m, described, query) for m in maps], axis=0)
    else:
        read = _read_attention(maps[_layer_index(layer, len(maps), "mean")], described, query)
    grid = read.reshape(len(read), *tokenizer.grid_shape_)
    if upsample:
        grid = torch.nn.functional.interpolate(
            torch.from_numpy(grid)[:, None], size=_shown_size(X, tokenizer.image_size_), mode="bilinear", align_corners=False
        )[:, 0].numpy()
    return grid


def _shown_size(X, model_size) -> tuple:
    """``(H, W)`` of the images in ``X`` when they share one (an array, arrays, PIL images), else the model's size."""
    if isinstance(X, np.ndarray) and X.dtype != object and X.ndim in (3, 4):
        return tuple(X.shape[1:3])
    items = X.tolist() if hasattr(X, "tolist") and not isinstance(X, np.ndarray) else X
    sizes = {_image_size(item) for item in items} if isinstance(items, (list, tuple, np.ndarray)) else {None}
    return sizes.pop() if len(sizes) == 1 and None not in sizes else tuple(model_size)


def _image_size(item):
    """``(H, W)`` of one image array or PIL image, else None (a path: read by the tokenizer only)."""
    if isinstance(item, np.ndarray) and item.ndim in (2, 3):
        return tuple(item.shape[:2])
    size = getattr(item, "size", None)  # PIL: (W, H)
    return (int(size[1]), int(size[0])) if isinstance(size, tuple) and len(size) == 2 else None


#: what opens a word in byte-level BPE (RoBERTa, GPT-2: "Ġ") and SentencePiece ("▁") pieces
WORD_START_MARKERS = ("\u0120", "\u2581")
#: special tokens, words of their own: [CLS] [SEP] [PAD] [MASK], <s> </s> <pad>
SPECIAL_LABEL = r"\[[A-Z]+\]|<[^<>\s]+>"


def aggregate_subwords(frame: pd.DataFrame) -> pd.DataFrame:
    """Merge ``explain`` rows of sub-words into whole words: WordPiece continuations (``##xx``)
    join the word before; in byte-level BPE and SentencePiece pieces a marker (``Ġ``, ``▁``) opens one.

    The pieces are read as BPE or SentencePiece where one carries a marker or the special tokens
    are ``<s>``-style (``</s>``), so a one-word text of a RoBERTa model (no marker) stays one word.

    Parameters
    ----------
    frame : DataFrame
        The ``level="token"`` output of :func:`explain` (or ``TabFormerClassifier.explain``)
        for an estimator with a text tokenizer.

    Returns
    -------
    words : DataFrame, one row per (row, layer, word)
        Columns ``row``, ``layer``, ``word`` (position of the word in the
        row), ``label`` (the word, its pieces joined without ``##`` or marker) and
        ``attention`` (sum over its sub-words); a special token ([SEP], ``</s>``) stays a
        word of its own.
    """
    frame = frame.sort_values(["row", "layer", "token"])
    labels = frame["label"].astype(str)
    special = labels.str.fullmatch(SPECIAL_LABEL)
    # Byte-level BPE or SentencePiece: a marker opens a word. Their separators are <s>-style (</s>), which tells
    # them from WordPiece also where no piece has a marker (BPE leaves it off the first word: one-word texts).
    if labels.str.startswith(WORD_START_MARKERS).any() or labels[special].str.startswith("<").any():
        first = frame.groupby(["row", "layer"]).cumcount() == 0
        starts = labels.str.startswith(WORD_START_MARKERS) | special | first
        shown = labels.str.lstrip("".join(WORD_START_MARKERS))
    else:
        starts, shown = ~labels.str.startswith("##"), labels.where(~labels.str.startswith("##"), labels.str[2:])
    starts = starts | special | special.groupby([frame["row"], frame["layer"]]).shift(fill_value=False)
    word = starts.astype(int).groupby([frame["row"], frame["layer"]]).cumsum() - 1
    grouped = frame.assign(word=word, shown=shown).groupby(["row", "layer", "word"], sort=True)
    out = grouped.agg(label=("shown", "".join), attention=("attention", "sum"))
    return out.reset_index()[["row", "layer", "word", "label", "attention"]]
