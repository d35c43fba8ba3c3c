"""
A quick tour in pictures
========================

Fit small models on a table, on texts and on images, and look at what they attend to and
how their training went with :mod:`tabformer.plot`. Settings are tiny so that this page
builds in seconds; the user guides train real models.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

from tabformer import TabFormerClassifier, plot

SMALL = dict(encoder__d_model=32, encoder__n_heads=2, encoder__n_layers=2, random_state=0, verbose=0)

# %%
# A table
# -------
# The label depends on ``age`` and ``city``; ``noise`` carries nothing.
rng = np.random.default_rng(0)
X = pd.DataFrame(
    {"age": rng.normal(40, 10, 400), "city": rng.choice(["paris", "rome", "oslo"], 400), "noise": rng.normal(size=400)}
)
y = np.where((X["age"] > 40) ^ (X["city"] == "rome"), "yes", "no")
table = TabFormerClassifier(max_epochs=15, **SMALL).fit(X, y)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
plot.attention(table, X.iloc[[0]], ax=left)
plot.history(table, ax=right)
fig.tight_layout()

# %%
# Texts
# -----
# Each word's background says how much the CLS token attends to it.
texts = ["a warm and funny film", "a dull and boring film", "funny warm and touching", "boring dull and slow"] * 20
labels = ["good", "bad", "good", "bad"] * 20
text = TabFormerClassifier(max_epochs=10, tokenizer__vocab_size=80, tokenizer__min_frequency=1, **SMALL).fit(texts, labels)
plot.attention(text, "a warm film, funny but slow")

# %%
# Images
# ------
# The patch attention of a digit classifier, overlaid on the digit.
digits = load_digits()
images = TabFormerClassifier(max_epochs=10, tokenizer__patch_size=2, **SMALL).fit(digits.images[:600] / 16, digits.target[:600])
plot.attention(images, digits.images[700] / 16)
plt.show()
