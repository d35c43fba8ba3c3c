"""Pictures of a fitted estimator: what it attends to, and how its training went.

Needs matplotlib (``pip install matplotlib``, or the clone's ``[plot]`` extra). Both functions draw on ``ax`` (a new
figure's axes when ``None``) and return the axes, so they compose with the rest of a
matplotlib figure. The numbers come from :mod:`tabformer.inspection` (the attention the head reads,
heads averaged) and from the skorch ``history_``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import EarlyStopping

from . import inspection
from .callbacks import _restoring_early_stopping

try:
    import matplotlib.pyplot as plt
    from matplotlib import colormaps
    from matplotlib.ticker import MaxNLocator
except ImportError as error:  # an optional extra: say how to get it
    raise ImportError("tabformer.plot needs matplotlib; install it with:  pip install matplotlib") from error

__all__ = ["attention", "history"]

#: what stands for a word the vocabulary lacks: drawn as a word, unlike the other special tokens
_UNKNOWN_LABELS = ("[UNK]", "<unk>")
#: line height of the text view (axes fraction)
_LINE_HEIGHT = 0.12
_LEFT = 0.015


#: figure height per bar of the table view (inches): a 10-point tick label needs about 0.17
_BAR_HEIGHT = 0.22


def _axes(ax, bars=0):
    # constrained layout: long column names and the axis labels stay inside a figure drawn here.
    # A table view grows with its bars: at a fixed 3.5 inches, the 46 column names of a
    # Lending Club row were drawn on top of each other, unreadable.
    height = max(3.5, 1.2 + _BAR_HEIGHT * bars)
    return plt.subplots(figsize=(7, height), layout="constrained")[1] if ax is None else ax


def _one_row(estimator, X_row):
    """``X_row`` as a batch of one, in the form the estimator's tokenizer reads."""
    kind = estimator.tokenizer_.kind
    if kind == "text" and isinstance(X_row, str):
        return [X_row]
    if kind == "image" and isinstance(X_row, np.ndarray):
        single = X_row.ndim == 2 or (X_row.ndim == 3 and X_row.shape[-1] in (1, 3, 4) and X_row.shape[0] != 1)
        return X_row[None] if single else X_row
    if hasattr(X_row, "to_frame") and kind in ("table", "mixed"):  # a Series: one row of a DataFrame
        return X_row.to_frame().T.infer_objects()
    return X_row


def _check_one(batch) -> None:
    rows = len(next(iter(batch.values())))
    if rows != 1:
        raise ValueError(f"attention draws one input row; X_row holds {rows}")


def attention(estimator, X_row, layer="mean", ax=None, cmap="Reds"):
    """Draw what a fitted estimator attends to for one input.

    Text: the words, each on a background coloured by the attention the head reads on it
    (its sub-words summed; see :func:`tabformer.inspection.explain`). Image: the image with
    the patch attention overlaid. Table or mixed input: one horizontal bar per column (the
    attention summed over its tokens).

    Parameters
    ----------
    estimator : fitted TabFormerClassifier, TabFormerRegressor or TabFormerPretrainer
        One with a single token sequence (not ``fusion="late"``).
    X_row : one input
        A str (text), an image array of shape (H, W) or (H, W, C) (or a batch of one),
        or a DataFrame of one row / a Series (table, mixed).
    layer : "mean" or int, default="mean"
        The encoder layer whose attention is drawn, or the mean over layers.
    ax : matplotlib Axes or None, default=None
        Where to draw; a new figure when None (for a table, as tall as its columns need).
    cmap : str, default="Reds"
        Colour map of the attention.

    Returns
    -------
    ax : matplotlib Axes
        Its title names what is drawn; text: one ``ax.texts`` entry per word; image:
        two ``ax.images`` (the picture, the overlay); table: one bar per column with the
        column names as y tick labels.

    Raises
    ------
    ValueError
        If ``X_row`` holds more than one row.

    Examples
    --------
    >>> from tabformer.plot import attention                 # doctest: +SKIP
    >>> attention(clf, X_test.iloc[[0]]).figure.savefig("why.png")  # doctest: +SKIP
    """
    check_is_fitted(estimator)
    one = _one_row(estimator, X_row)
    batch = estimator.tokenize(one)
    _check_one(batch)
    kind = estimator.tokenizer_.kind
    where = "mean over layers" if layer == "mean" else f"layer {layer}"
    if kind == "image":
        return _image(estimator, one, batch, layer, _axes(ax), cmap, where)
    frame = inspection.explain(estimator, batch, layer="all" if layer == "mean" else layer, level="token")
    if kind == "text":
        return _text(frame, _axes(ax), cmap, where)
    columns = frame.groupby(["layer", "column"], sort=False)["attention"].sum().groupby(level="column", sort=False).mean()
    # The table's column order: the tokens come numbers first, then categories
    names = [name for name in np.asarray(getattr(estimator, "feature_names_in_", [])).tolist() if name in columns.index]
    columns = columns.reindex(names + [name for name in columns.index if name not in names])
    ax = _axes(ax, bars=len(columns))
    bars = ax.barh(np.arange(len(columns)), columns.to_numpy(), color=colormaps[cmap](0.6))
    ax.set_yticks(np.arange(len(columns)), [str(c) for c in columns.index])
    ax.invert_yaxis()  # first column on top, as in the table
    ax.set_xlabel("attention (summed over the column's tokens)")
    ax.set_title(f"attention per column ({where})")
    bars.set_label("attention")
    return ax


def _image(estimator, one, batch, layer, ax, cmap, where):
    pixels = batch["pixels"][0].transpose(1, 2, 0)  # as the model saw it: resized, in [0, 1]
    grid = inspection.attention_map(estimator, one, layer=layer, upsample=True)[0]  # at the size of the image given
    # One extent for both: the model may see the image resized (image_size), the map has the image's own size.
    extent = (-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5)
    grey = pixels.shape[-1] == 1
    ax.imshow(pixels[..., 0] if grey else pixels, cmap="gray" if grey else None, extent=extent)
    ax.imshow(grid, cmap=cmap, alpha=0.5, extent=extent)
    ax.set_axis_off()
    ax.set_title(f"attention per patch ({where})")
    return ax


def _text(frame, ax, cmap, where):
    words = (
        inspection.aggregate_subwords(frame)
        .groupby("word", sort=True)
        .agg(label=("label", "first"), attention=("attention", "mean"))
    )
    # Separators and padding are not words; an unknown word ([UNK], <unk>) is one, with its own attention.
    words = words[~words["label"].str.fullmatch(inspection.SPECIAL_LABEL) | words["label"].isin(_UNKNOWN_LABELS)]
    peak = max(float(words["attention"].max()), 1e-12)
    colours = colormaps[cmap]
    renderer = ax.figure.canvas.get_renderer()
    to_axes = ax.transAxes.inverted()
    # A word's box pads past its text: start a little in, or the first word is cut at the figure's edge.
    x, y = _LEFT, 1.0 - _LINE_HEIGHT
    for label, weight in zip(words["label"], words["attention"]):
        text = ax.text(
            x, y, label, fontsize=11, transform=ax.transAxes, bbox=dict(facecolor=colours(0.85 * weight / peak), edgecolor="none")
        )
        # lay words out as they measure on this figure: wrap when one runs past the right edge
        (left, _), (right, _) = to_axes.transform(text.get_window_extent(renderer).get_points())
        if x > _LEFT and right > 1:
            x, y = _LEFT, y - _LINE_HEIGHT
            text.set_position((x, y))
        x += (right - left) + 0.015
    ax.set_axis_off()
    ax.set_title(f"attention per word ({where}; darker: more)")
    return ax


def _loads_best(callback) -> bool:
    return isinstance(callback, EarlyStopping) and bool(callback.load_best)


def _mark_kept_epoch(estimator, rows, epochs, ax) -> None:
    """A dotted line at the epoch whose weights the estimator kept, when a validation score was recorded."""
    # Early stopping restores the best epoch of what it watched (valid_acc for some recipes); without it
    # (patience=None) the model ends with its last epoch, however much lower an earlier valid_loss was.
    stopping = _restoring_early_stopping(estimator)  # the built-in's, or a user's EarlyStopping that replaced it
    if stopping is None:
        # a loaded model's callbacks are fresh (no best epoch, no weights): the last that would have restored
        fresh = [
            cb for _, cb in getattr(estimator, "callbacks_", None) or [] if _loads_best(cb) and not hasattr(cb, "best_epoch_")
        ]
        stopping = fresh[-1] if fresh else None
    # skorch's own EarlyStopping has no lower_is_better_ (tabformer's resolves "auto" into it)
    lower = getattr(stopping, "lower_is_better_", getattr(stopping, "lower_is_better", True))
    monitor = getattr(stopping, "monitor", "valid_loss")
    if not all(isinstance(row.get(monitor), (int, float)) for row in rows):
        monitor, lower = "valid_loss", True
    if not all(monitor in row for row in rows):
        # No validation (patience=None, or no holdout): the fit ends with its last epoch's weights
        ax.axvline(epochs[-1], color="grey", linestyle=":", label=f"last epoch, kept (epoch {epochs[-1]})")
        return
    if stopping is None:
        ax.axvline(epochs[-1], color="grey", linestyle=":", label=f"last epoch, kept (epoch {epochs[-1]})")
        return
    best = getattr(stopping, "best_epoch_", None)  # what it restored; a loaded model no longer holds it
    if best is None or monitor != stopping.monitor:
        scores = [row[monitor] for row in rows]
        best = epochs[int(np.argmin(scores) if lower else np.argmax(scores))]
    ax.axvline(best, color="grey", linestyle=":", label=f"best {monitor} (epoch {best})")


def history(estimator, ax=None):
    """Draw the training curves of a fitted estimator: losses per epoch, accuracy if recorded.

    Parameters
    ----------
    estimator : fitted tabformer estimator
        Its skorch ``history_`` holds ``train_loss`` and, with a validation split,
        ``valid_loss`` (and ``valid_acc`` for classifiers).
    ax : matplotlib Axes or None, default=None
        Where to draw the losses; ``valid_acc`` goes on a twin axis on the right.

    Returns
    -------
    ax : matplotlib Axes
        With one line per recorded loss (labels ``"train_loss"``, ``"valid_loss"``), a
        dotted vertical line at the epoch whose weights the estimator kept: the best epoch
        of what early stopping watched (its ``monitor``: ``valid_loss``, or ``valid_acc``),
        or the last epoch when no early stopping restored one (``patience=None``); and a legend.

    Examples
    --------
    >>> from tabformer.plot import history     # doctest: +SKIP
    >>> history(clf).figure.savefig("curves.png")  # doctest: +SKIP
    """
    check_is_fitted(estimator)
    rows = estimator.history_.to_list()
    if not rows:
        raise ValueError(f"{type(estimator).__name__} has an empty history: nothing to draw")
    ax = _axes(ax)
    epochs = np.array([row["epoch"] for row in rows])
    lines = []
    for key in ("train_loss", "valid_loss"):
        if all(key in row for row in rows):
            lines += ax.plot(epochs, [row[key] for row in rows], marker="o", markersize=3, label=key)
    _mark_kept_epoch(estimator, rows, epochs, ax)
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs 1, 2, 3, not 1.25, 1.5...
    ax.set_ylabel("loss")
    if all(isinstance(row.get("valid_acc"), (int, float)) for row in rows):
        twin = ax.twinx()
        lines += twin.plot(epochs, [row["valid_acc"] for row in rows], color="tab:green", linestyle="--", label="valid_acc")
        # a multi-label model's accuracy is the share of rows with every label right
        twin.set_ylabel("validation subset accuracy" if getattr(estimator, "multilabel_", False) else "validation accuracy")
    handles = lines + [line for line in ax.get_lines() if line not in lines]
    ax.legend(handles=handles, labels=[h.get_label() for h in handles], loc="best")
    ax.set_title(f"{type(estimator).__name__} training")
    return ax
