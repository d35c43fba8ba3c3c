"""Walk-through: one DataFrame with an image column and a text column, one encoder.

Each rendered emoji (32x32 colour image) comes with its Unicode name ("grinning face",
"flag: Japan"...). We predict its group (Smileys & Emotion, Flags, ...) from both at
once: the name's sub-words and the image's patches become one token sequence, so they
attend to each other in the same Transformer (early fusion).

    python examples/mixed_emoji.py            # ~3 min on 2 CPU cores
    python examples/mixed_emoji.py --plot attention.png   # needs matplotlib (pip install -e ".[examples]")

Data: ``apt-get install -y fonts-noto-color-emoji unicode-data`` (``make data-apt``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn.model_selection import train_test_split  # noqa: E402

from tabformer import TabFormerClassifier  # noqa: E402
from tabformer.datasets import load_emoji  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30, help="max_epochs; early stopping may end sooner (default: 30)")
    parser.add_argument("--plot", default=None, help="write a PNG of the attention of one test emoji")
    args = parser.parse_args(argv)

    # 1. A DataFrame: "image" holds (32, 32, 3) uint8 arrays, "name" holds str.
    X, y = load_emoji()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    print(f"{len(X_train)} training emoji, {len(X_test)} test emoji; columns {list(X_train.columns)}")

    # 2. tokenizer="auto" (the default) detects each column's kind. Sub-tokenizer
    #    settings route by kind: tokenizer__image__*, tokenizer__text__*.
    #    fusion="early" puts both columns' tokens in one sequence and one encoder; the
    #    default, fusion="auto", would pick "late" here (an image beside another column:
    #    one encoder per modality, docs/mixed.md), where words and patches never meet.
    clf = TabFormerClassifier(
        fusion="early",
        encoder__d_model=64,
        encoder__n_layers=2,
        encoder__n_heads=4,
        encoder__dropout=0.1,
        # 16x16 patches: 4 image tokens beside ~6 name tokens. Smaller patches flood the
        # sequence with image tokens and did worse here (benchmarks/bench_fusion.py).
        tokenizer__image__patch_size=16,
        tokenizer__text__vocab_size=1500,
        max_epochs=args.epochs,
        batch_size=64,
        random_state=0,
        verbose=0,
    )
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    print(f"fitted in {time.perf_counter() - start:.0f} s ({len(clf.history_)} epochs)")
    print("what 'auto' chose:", clf.tokenizer_.column_kinds_)
    print(f"test accuracy: {clf.score(X_test, y_test):.4f}")

    # 3. Where does the CLS token look? Attention per column, then within the name per word.
    sample = X_test.iloc[:5]
    per_column = clf.explain(sample, layer=-1, level="column")
    table = per_column.pivot(index="row", columns="column", values="attention").round(3)
    table.columns = [f"attention on {c}" for c in table.columns]
    print("\nCLS attention per column (last layer):")
    print(table.assign(emoji_name=sample["name"].to_numpy(), predicted=clf.predict(sample)).to_string())
    words = clf.explain(sample.iloc[:1], layer=-1)
    print("\nfirst test emoji, last layer, name tokens:")
    print(words[words["column"] == "name"][["label", "attention"]].round(4).to_string(index=False))

    if args.plot:
        plot(clf, sample.iloc[:1], args.plot)


def plot(clf, row, path):
    """Image with its patch attention overlaid, next to a bar per name token."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib to draw the plot")
        return
    frame = clf.explain(row, layer=-1)
    grid = clf.tokenizer_.transformers_[[n for n, _, _ in clf.tokenizer_.transformers_].index("image")][1].grid_shape_
    patches = frame[frame["column"] == "image"]["attention"].to_numpy().reshape(grid)
    words = frame[frame["column"] == "name"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.imshow(row["image"].iloc[0])
    left.imshow(patches, cmap="magma", alpha=0.55, extent=(0, 32, 32, 0))
    left.set_title("CLS attention on patches")
    left.axis("off")
    right.barh(range(len(words)), words["attention"], color="tab:blue")
    right.set_yticks(range(len(words)), words["label"])
    right.invert_yaxis()
    right.set_title(f"... and on the name ({row['name'].iloc[0]})")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
