"""A data scientist's project on the Lending Club loans table, start to ship (a review in this release).

Each test reproduces, on a small synthetic frame, what went wrong on the real 10,000 x 55 table.
"""

import numpy as np
import pandas as pd
import pytest

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, random_state=0, verbose=0)


def test_table_attention_plot_of_many_columns_keeps_every_name_readable():
    # Lending Club has 46 feature columns: on the fixed 7 x 3.5 inch figure their names were
    # drawn on top of each other (about 0.05 inch a bar for a 0.14 inch label)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tabformer import TabFormerClassifier, plot

    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"num_accounts_{i}": rng.normal(size=60) for i in range(46)})
    y = np.where(X.iloc[:, 0] > 0, "A", "B")
    clf = TabFormerClassifier(**TINY).fit(X, y)
    try:
        ax = plot.attention(clf, X.iloc[[0]])
        ax.figure.canvas.draw()
        boxes = sorted((label.get_window_extent() for label in ax.get_yticklabels()), key=lambda box: box.y0)
        assert len(boxes) == 46
        for lower, upper in zip(boxes, boxes[1:]):
            assert lower.y1 <= upper.y0 + 0.5, "two column names overlap"
    finally:
        plt.close("all")
