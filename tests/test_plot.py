"""tabformer.plot draws headless (Agg); the figures' contents are checked, not their pixels."""

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from conftest import make_table  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from skorch.callbacks import EarlyStopping  # noqa: E402

from tabformer import TabFormerClassifier, load, plot  # noqa: E402
from tabformer.inspection import aggregate_subwords  # noqa: E402

TINY = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=2, max_epochs=3, random_state=0, verbose=0)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_table_attention_is_one_bar_per_column():
    X, y = make_table(n=80)
    clf = TabFormerClassifier(**TINY).fit(X, y)
    ax = plot.attention(clf, X.iloc[[3]])
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels == list(X.columns) and len(ax.patches) == 4  # the table's order, top down (numbers came first)
    widths = {label: patch.get_width() for label, patch in zip(labels, ax.patches)}
    column = clf.explain(X.iloc[[3]], level="column").groupby("column")["attention"].mean()
    for name, width in widths.items():
        assert width == pytest.approx(column[name], rel=1e-5)
    assert "per column" in ax.get_title()
    # a Series (one row) works too, and more than one row is refused
    assert len(plot.attention(clf, X.iloc[3]).patches) == 4
    with pytest.raises(ValueError, match="one input row"):
        plot.attention(clf, X.iloc[:2])


def test_text_attention_colours_each_word_by_its_attention():
    texts = ["a good fun film", "a dull bad film", "good good fun", "bad dull boring"] * 10
    labels = ["pos", "neg", "pos", "neg"] * 10
    settings = dict(TINY, tokenizer__vocab_size=60, tokenizer__min_frequency=1)
    clf = TabFormerClassifier(**settings).fit(texts, labels)
    ax = plot.attention(clf, "a good fun film", layer=-1)
    words = [text.get_text() for text in ax.texts]
    assert words == ["a", "good", "fun", "film"]
    attention = aggregate_subwords(clf.explain(["a good fun film"], layer=-1)).set_index("label")["attention"]
    darkness = {t.get_text(): 1 - np.mean(to_rgb(t.get_bbox_patch().get_facecolor())) for t in ax.texts}
    most, least = attention.loc[words].idxmax(), attention.loc[words].idxmin()
    assert darkness[most] > darkness[least]
    assert "layer -1" in ax.get_title()


def test_image_attention_overlays_the_patch_map():
    digits = load_digits()
    images, y = digits.images[:200] / 16, digits.target[:200]
    clf = TabFormerClassifier(**TINY, tokenizer__patch_size=2).fit(images, y)
    ax = plot.attention(clf, images[0])
    assert len(ax.images) == 2 and ax.images[1].get_alpha() == 0.5
    assert ax.images[0].get_array().shape == (8, 8) and ax.images[1].get_array().shape == (8, 8)
    assert "per patch" in ax.get_title()


def test_history_draws_losses_best_epoch_and_accuracy():
    X, y = make_table(n=80)
    clf = TabFormerClassifier(**{**TINY, "max_epochs": 4, "validation_fraction": 0.25}).fit(X, y)
    fig, ax = plt.subplots()
    assert plot.history(clf, ax=ax) is ax
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"train_loss", "valid_loss"} <= set(lines)
    np.testing.assert_allclose(lines["train_loss"].get_ydata(), clf.history_[:, "train_loss"])
    assert any(label.startswith("best valid_loss") for label in lines)
    assert ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "valid_acc" in legend  # on the twin axis
    assert len(fig.axes) == 2


def test_history_without_validation_marks_the_last_epoch_and_multilabel_accuracy_is_named():
    X, y = make_table(n=80)
    clf = TabFormerClassifier(**{**TINY, "validation_fraction": None}).fit(X, y)
    labels = [line.get_label() for line in plot.history(clf).get_lines()]
    assert "last epoch, kept (epoch 3)" in labels  # promised by the docstring, drawn only with a holdout before
    Y = np.random.default_rng(0).integers(0, 2, (80, 3))
    multi = TabFormerClassifier(**{**TINY, "validation_fraction": 0.25}).fit(X, Y)
    assert plot.history(multi).figure.axes[-1].get_ylabel() == "validation subset accuracy"


def test_history_marks_the_epoch_a_users_early_stopping_restored(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "c": rng.normal(size=200)})
    y = np.where(X.a + rng.normal(size=200) > 0, "p", "n")
    stopping = EarlyStopping(patience=5, load_best=True)  # replaces the built-in "early_stopping"
    settings = dict(encoder__n_layers=1, max_epochs=5, batch_size=32, lr=0.5, ensemble_size=1, callbacks=[stopping])
    clf = TabFormerClassifier(**{**TINY, **settings}).fit(X, y)
    best = dict(clf.callbacks_)["EarlyStopping"].best_epoch_
    assert best < 5  # it restored an earlier epoch: the plot said "last epoch, kept (epoch 5)"
    assert f"best valid_loss (epoch {best})" in [line.get_label() for line in plot.history(clf).get_lines()]
    clf.save(tmp_path / "model")
    loaded = load(tmp_path / "model")  # its callbacks hold no best epoch: read from its history
    assert f"best valid_loss (epoch {best})" in [line.get_label() for line in plot.history(loaded).get_lines()]
