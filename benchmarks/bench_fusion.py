"""Fusion with default settings on four real multimodal datasets, against each modality
alone and the classic baselines.

    python benchmarks/bench_fusion.py                                # all four, 3 seeds
    python benchmarks/bench_fusion.py --dataset tweets --seeds 1
    python benchmarks/bench_fusion.py --dataset emoji --only early image
    python benchmarks/bench_fusion.py --dataset icons --split valid   # the split defaults are chosen on
    python benchmarks/bench_fusion.py --dataset icons --split valid --only "fusion='auto'" \
        --variant "narrow:encoder__d_model=64"                          # a candidate beside the defaults

- Rendered emoji (32x32 colour image + Unicode name) -> group (9 classes), accuracy.
- Desktop icons of the Oxygen and MATE themes (48x48 picture + hyphenated name) -> context
  (9 classes), accuracy; split on names, so a test name is never a training name.
- Trump's tweets, Android vs iPhone (text + hour, weekday, reaction counts, retweet and
  reply flags), accuracy: a table + text task where both halves carry part of the answer.
- Lending Club loans (50 table columns + ``emp_title`` job-title text) -> log annual
  income, R². The 23 rows with a zero income (joint applications whose income sits in the
  dropped joint column; log1p target 0, ~14 std below the mean) are left out of both
  splits so that a handful of points does not decide R²; the count is printed.

Every tabformer row uses the **defaults** (``random_state`` only, plus ``fusion`` for the
early, mid and late rows): what a user gets; the first row says what ``fusion="auto"``
resolved to. The classic rows are what a scikit-learn user would
build: logistic regression (or ridge) on TF-IDF, on frozen ImageNet EfficientNet-Lite0
features (global average pool, images at 64 px, as the default stem sees them), on
one-hot/standardised columns, and on all of them side by side (late fusion of frozen
features); HistGradientBoosting on the same. Fixed splits (``splits.py``, seed 0); the
tabformer rows report mean ± std over ``--seeds`` training seeds (3: seeds 0, 1, 2). The std
is the population one (``np.std``, ddof 0), as in every figure docs/mixed.md quotes from this
script; ``bench_defaults.py`` prints the sample std (ddof 1), larger by sqrt(n / (n - 1)).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression, RidgeCV  # noqa: E402
from sklearn.metrics import accuracy_score, r2_score  # noqa: E402
from sklearn.model_selection import StratifiedGroupKFold, train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler  # noqa: E402

from bench_defaults import parse_variant  # noqa: E402
from splits import bird_strikes_split, emoji_split, icons_split, lending_club_split, tweets_split  # noqa: E402
from tabformer import TabFormerClassifier, TabFormerRegressor  # noqa: E402


def lending_data(limit=None):
    X_train, X_test, y_train, y_test = lending_club_split()
    keep_train, keep_test = y_train > 0, y_test > 0
    dropped = int((~keep_train).sum() + (~keep_test).sum())
    X_train, y_train, X_test, y_test = X_train[keep_train], y_train[keep_train], X_test[keep_test], y_test[keep_test]
    print(f"  ({dropped} zero-income rows left out)", flush=True)
    return X_train, X_test, y_train, y_test


#: name -> (loader, task, {modality: columns}); the text column is named, the rest is the table
DATASETS = {
    "emoji": (emoji_split, "clf", {"image": ["image"], "text": ["name"]}),
    "icons": (icons_split, "clf", {"image": ["image"], "text": ["name"]}),
    "tweets": (tweets_split, "clf", {"text": ["text"], "table": None}),
    "lending": (lending_data, "reg", {"text": ["emp_title"], "table": None}),
    "birds": (bird_strikes_split, "clf", {"text": ["remarks"], "table": None}),
}


def _modalities(X, spec):
    named = [c for columns in spec.values() if columns for c in columns]
    return {name: columns if columns else [c for c in X.columns if c not in named] for name, columns in spec.items()}


def _selected(variants, only):
    """Variants whose label contains one of the ``--only`` words (all when None)."""
    return [v for v in variants if not only or any(word in v[0] for word in only)]


def tabformer_rows(task, variants, X_train, X_test, y_train, y_test, seeds, epochs):
    estimator_class, metric = (TabFormerClassifier, accuracy_score) if task == "clf" else (TabFormerRegressor, r2_score)
    rows = []
    for label, columns, extra, modality in variants:
        scores, seconds = [], []
        for seed in seeds:
            settings = dict(extra, **({"max_epochs": epochs} if epochs else {}))
            model = estimator_class(random_state=seed, verbose=0, **settings)
            start = time.perf_counter()
            model.fit(_as_input(X_train, columns, modality), y_train)
            seconds.append(time.perf_counter() - start)
            scores.append(metric(y_test, model.predict(_as_input(X_test, columns, modality))))
            label = label.format(fusion=model.resolved_params_.get("fusion"))  # what "auto" resolved to
            print(f"  {label:<34} seed {seed}: {scores[-1]:.4f} ({seconds[-1]:.0f} s, {len(model.history_)} epochs)", flush=True)
        rows.append((label, float(np.mean(scores)), float(np.std(scores)), len(scores), float(np.median(seconds))))
    return rows


def _as_input(X, columns, modality=None):
    """What a user would pass: a Series of texts or an array of images for one such column
    alone (so the text or image recipe applies), the DataFrame otherwise."""
    if modality == "image" and len(columns) == 1:
        return np.stack(X[columns[0]].to_list())
    if modality == "text" and len(columns) == 1:
        return X[columns[0]].fillna("")  # Lending Club's missing job titles as empty texts
    return X[columns]


_IMAGE_FEATURES = {}


def frozen_image_features(images, size=64):
    """Globally pooled ImageNet EfficientNet-Lite0 features (1280) of uint8 ``(H, W, 3)`` images."""
    import timm

    from tabformer.estimators._image_recipes import STEM
    from tabformer.nn.embedders.backbone import _package_weights

    if "model" not in _IMAGE_FEATURES:
        model = timm.create_model(STEM, num_classes=0)
        weights = {k: v for k, v in _package_weights(STEM).items() if not k.startswith("classifier")}
        model.load_state_dict(weights)
        _IMAGE_FEATURES["model"] = model.eval()
    model = _IMAGE_FEATURES["model"]
    mean = torch.tensor(model.pretrained_cfg["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(model.pretrained_cfg["std"]).view(1, 3, 1, 1)
    out = []
    with torch.no_grad():
        for start in range(0, len(images), 128):
            pixels = torch.from_numpy(np.stack(list(images[start : start + 128]))).permute(0, 3, 1, 2).float() / 255
            pixels = torch.nn.functional.interpolate(pixels, size=(size, size), mode="bilinear", antialias=True)
            out.append(model((pixels - mean) / std).numpy())
    return np.concatenate(out)


def _column_features(modalities, X_train):
    """ColumnTransformer parts for each modality: TF-IDF, frozen image features, one-hot/standardised columns."""
    parts = []
    for name, columns in modalities.items():
        if name == "text":
            for column in columns:
                tfidf = make_pipeline(FunctionTransformer(_texts_of), TfidfVectorizer(min_df=2, sublinear_tf=True))
                parts.append((f"tfidf_{column}", tfidf, [column]))
        elif name == "image":
            for column in columns:
                parts.append((f"cnn_{column}", make_pipeline(FunctionTransformer(_images_of), StandardScaler()), [column]))
        else:
            numeric = [c for c in columns if X_train[c].dtype.kind in "if"]
            categorical = [c for c in columns if c not in numeric]
            parts.append(("onehot", OneHotEncoder(handle_unknown="ignore", min_frequency=5), categorical))
            parts.append(("numeric", make_pipeline(FunctionTransformer(_signed_log), StandardScaler()), numeric))
    return parts


def _texts_of(frame):
    return frame.iloc[:, 0].fillna("").astype(str).to_list()  # a missing text is an empty one


def _images_of(frame):
    return frozen_image_features(frame.iloc[:, 0].to_list())


def _signed_log(values):
    values = np.asarray(values, dtype=float)
    return np.nan_to_num(np.sign(values) * np.log1p(np.abs(values)))


def classic_rows(task, modalities, X_train, X_test, y_train, y_test):
    """Linear models per modality and on all of them; gradient boosting on all of them."""
    metric = accuracy_score if task == "clf" else r2_score
    table_cols = modalities.get("table")
    if table_cols:  # strings as categories, missing as their own value, for the linear models
        X_train, X_test = X_train.copy(), X_test.copy()
        for frame in (X_train, X_test):
            for column in table_cols:
                if frame[column].dtype.kind not in "if":
                    frame[column] = frame[column].astype(str)
    rows = []
    subsets = [(f"{name} only", {name: cols}) for name, cols in modalities.items()] + [("all modalities", modalities)]
    for label, subset in subsets:
        linear = LogisticRegression(max_iter=3000, C=1.0) if task == "clf" else RidgeCV(alphas=np.logspace(-2, 3, 12))
        start = time.perf_counter()
        model = make_pipeline(ColumnTransformer(_column_features(subset, X_train)), linear).fit(X_train, y_train)
        score = metric(y_test, model.predict(X_test))
        name = "logistic regression" if task == "clf" else "ridge"
        rows.append((f"{name}, {label}", float(score), 0.0, 1, time.perf_counter() - start))
        print(f"  {rows[-1][0]:<34}: {score:.4f}", flush=True)
    gbm_class = HistGradientBoostingClassifier if task == "clf" else HistGradientBoostingRegressor
    start = time.perf_counter()
    dense = ColumnTransformer(_column_features(modalities, X_train), sparse_threshold=0)
    gbm = make_pipeline(dense, gbm_class(max_iter=300, random_state=0)).fit(X_train, y_train)
    rows.append(
        ("HistGradientBoosting, all modalities", float(metric(y_test, gbm.predict(X_test))), 0.0, 1, time.perf_counter() - start)
    )
    print(f"  {rows[-1][0]:<34}: {rows[-1][1]:.4f}", flush=True)
    return rows


def validation_split(dataset, X_train, y_train):
    """25% of the training rows held out, the split defaults are chosen on (never the test rows).

    Grouped on the name for icons (as the test split is), stratified for the classifiers,
    plain for Lending Club; seed 1 for icons (seed 0 is the test split's), 0 otherwise.
    """
    if dataset == "icons":
        fit, held = next(StratifiedGroupKFold(n_splits=4, shuffle=True, random_state=1).split(X_train, y_train, X_train["name"]))
    else:
        stratify = np.asarray(y_train) if DATASETS[dataset][1] == "clf" else None
        fit, held = train_test_split(np.arange(len(X_train)), test_size=0.25, stratify=stratify, random_state=0)
    y_train = np.asarray(y_train)
    return X_train.iloc[fit], X_train.iloc[held], y_train[fit], y_train[held]


def run(dataset, seeds, epochs, limit, only=None, classic=True, split="test", extra_variants=()):
    load, task, spec = DATASETS[dataset]
    X_train, X_test, y_train, y_test = load()
    if split == "valid":
        X_train, X_test, y_train, y_test = validation_split(dataset, X_train, y_train)
    if limit:
        X_train, y_train, X_test, y_test = X_train[:limit], y_train[:limit], X_test[: limit // 2], y_test[: limit // 2]
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    modalities = _modalities(X_train, spec)
    every = [c for cols in modalities.values() for c in cols]
    held_out = "validation" if split == "valid" else "test"
    print(f"{dataset}: {len(X_train)} train / {len(X_test)} {held_out} rows; modalities {list(modalities)}", flush=True)
    variants = [
        ("tabformer defaults (fusion='auto': {fusion})", every, {}, None),
        ("tabformer, early fusion (fusion='early')", every, {"fusion": "early"}, None),
        ("tabformer, mid fusion (fusion=1)", every, {"fusion": 1}, None),
        ("tabformer, late fusion (fusion='late')", every, {"fusion": "late"}, None),
    ] + [(f"tabformer defaults, {name} only", cols, {}, name) for name, cols in modalities.items()]
    variants = _selected(variants, only) + [(f"tabformer, {name}", every, params, None) for name, params in extra_variants]
    rows = tabformer_rows(task, variants, X_train, X_test, y_train, y_test, seeds, epochs)
    if classic:
        rows += classic_rows(task, modalities, X_train, X_test, y_train, y_test)
    return rows


def print_table(title, metric, rows):
    print(f"\n### {title}\n")
    print(f"| model | {metric} (mean ± std) | seeds | fit s (median) |")
    print("|---|---|---|---|")
    for label, mean, std, n, seconds in rows:
        print(f"| {label} | {mean:.4f} ± {std:.4f} | {n} | {seconds:.0f} |")


TITLES = {
    "emoji": ("Emoji group (9 classes) from image + name, test accuracy", "accuracy"),
    "icons": ("Desktop icon context (9 classes) from image + name, test accuracy", "accuracy"),
    "tweets": ("Tweets, Android vs iPhone, from text + table, test accuracy", "accuracy"),
    "lending": ("Lending Club log annual income from table + job title, test R²", "R²"),
    "birds": ("Bird strikes, flight phase (6 classes) from remarks + table, test accuracy", "accuracy"),
}


def _seed_list(text: str) -> list:
    return list(range(int(text))) if text.isdigit() else [int(seed) for seed in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--seeds", type=_seed_list, default="3", help="N (seeds 0..N-1) or a list such as 3,4,5")
    parser.add_argument("--epochs", type=int, default=None, help="override the default epochs (smoke runs only)")
    parser.add_argument("--limit", type=int, default=None, help="train rows (smoke runs)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-classic", action="store_true", help="skip the scikit-learn baselines")
    parser.add_argument("--split", choices=["test", "valid"], default="test", help="valid: score on 25%% of the training rows")
    parser.add_argument("--only", nargs="+", default=None, help="only the tabformer rows whose label holds one of these words")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help='an extra all-columns row, "name:key=value,key=value" (estimator settings; values read as JSON)',
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    names = list(DATASETS) if args.dataset == "all" else [args.dataset]
    results = []
    for name in names:
        rows = run(
            name,
            args.seeds,
            args.epochs,
            args.limit,
            args.only,
            classic=not args.no_classic,
            split=args.split,
            extra_variants=[parse_variant(text) for text in args.variant],
        )
        title, metric = TITLES[name]
        results.append((title.replace("test", "validation") if args.split == "valid" else title, metric, rows))
    for title, metric, rows in results:
        print_table(title, metric, rows)
    return results


if __name__ == "__main__":
    main()
