"""Real data, default settings: 8x8 digits beat logistic regression on the pixels.

Before the conv stem, the defaults read 0.9267 on this kind of split (the upscaled ImageNet
stem) and 0.89-0.91 with plain 2x2 patches, below logistic regression's 0.96 (docs/defaults.md).
"""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tabformer import TabFormerClassifier


def test_default_digits_beat_logistic_regression_on_pixels():
    digits = load_digits()
    train, test = train_test_split(np.arange(len(digits.target)), test_size=0.25, random_state=0, stratify=digits.target)
    images, labels = digits.images, digits.target
    clf = TabFormerClassifier(verbose=0, random_state=0).fit(images[train], labels[train])
    assert clf.tokenizer_.conv_stem == (32, 64)  # grey and under 16 px
    linear = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    linear.fit(images[train].reshape(len(train), -1), labels[train])
    baseline = linear.score(images[test].reshape(len(test), -1), labels[test])
    accuracy = clf.score(images[test], labels[test])
    print(f"defaults {accuracy:.4f}, logistic regression {baseline:.4f}")
    assert accuracy > baseline > 0.9, (accuracy, baseline)
