"""What ``tabformer predict`` writes: one frame per kind of model (classes, probabilities, tags, embeddings)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._cli_input import CLIError


def _words(cell) -> list:
    """A tagger's sentence: a cell of space-separated words, or a Parquet list of words (a dataset's ``tokens``)."""
    if isinstance(cell, (list, tuple, np.ndarray)):
        return list(cell)  # already split: str() made ["Alice"] the one word "['Alice']", and pd.isna raised on longer ones
    return [] if pd.isna(cell) else str(cell).split()  # a Parquet null: no words, not "nan"


def predictions(estimator, X, proba: bool) -> pd.DataFrame:
    """The frame ``tabformer predict`` writes for ``estimator`` on the rows ``X``.

    Parameters
    ----------
    estimator : a fitted classifier, regressor, tagger or pretrainer
    X : DataFrame or list
        The rows as the CLI read them (a tagger: one column of space-separated words, or of word lists).
    proba : bool
        ``--proba``: classifiers add a ``proba_<label>`` column per class; a tagger a
        ``proba_<tag>`` column per tag, each cell the sentence's per-word probabilities,
        space-separated like its words.

    Returns
    -------
    DataFrame of shape (n_rows, n_columns)
    """
    if proba and (hasattr(estimator, "objective_") or not hasattr(estimator, "classes_")):
        # A pretrainer writes embeddings: --proba was ignored for it, silently.
        raise CLIError(f"--proba needs a classifier or a tagger; {type(estimator).__name__} has no class probabilities")
    if hasattr(estimator, "objective_"):
        values = np.asarray(estimator.transform(X))  # a pretrainer saved after set_output(transform="pandas") answers a frame
        return pd.DataFrame(values, columns=[f"embedding{i}" for i in range(values.shape[1])])
    if hasattr(estimator, "default_tag_"):
        if isinstance(X, pd.DataFrame) and X.shape[1] != 1:
            raise CLIError(f"a tagger reads one column of space-separated words; the file has {list(X.columns)}")
        column = X.iloc[:, 0] if isinstance(X, pd.DataFrame) else pd.Series(X)
        sentences = [_words(cell) for cell in column]
        if not proba:
            return pd.DataFrame({"tags": [" ".join(tags) for tags in estimator.predict(sentences)]})
        per_word = estimator.predict_proba(sentences)  # predict is its argmax: one pass gives both
        out = pd.DataFrame({"tags": [" ".join(estimator.classes_[rows.argmax(axis=1)]) for rows in per_word]})
        for j, tag in enumerate(estimator.classes_):
            out[f"proba_{tag}"] = [" ".join(f"{value:.6g}" for value in rows[:, j]) for rows in per_word]
        return out
    if hasattr(estimator, "classes_") and proba:
        probabilities = estimator.predict_proba(X)
        if getattr(estimator, "multilabel_", False):  # one 0/1 column per label, not an argmax
            out = pd.DataFrame((probabilities >= 0.5).astype(int), columns=[f"prediction{j}" for j in estimator.classes_])
        else:
            out = pd.DataFrame({"prediction": estimator.classes_[probabilities.argmax(axis=1)]})
        for j, label in enumerate(estimator.classes_):
            out[f"proba_{label}"] = probabilities[:, j]
        return out
    values = np.asarray(estimator.predict(X))
    if values.ndim == 2:
        return pd.DataFrame(values, columns=[f"prediction{j}" for j in range(values.shape[1])])
    return pd.DataFrame({"prediction": values})
