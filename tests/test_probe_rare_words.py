"""benchmarks/probe_rare_words.py: words are replaced by [UNK] at the rate their count gives (docs/defaults.md quotes it)."""

import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))


def _words(text):
    """A whitespace pre-tokenizer with offsets, as the backend's gives them."""
    out, start = [], 0
    for word in text.split(" "):
        out.append((word, (start, start + len(word))))
        start += len(word) + 1
    return text, out


def test_unseen_words_always_and_frequent_words_rarely_become_unk():
    from probe_rare_words import UNKNOWN, replaced

    counts = collections.Counter({"face": 1000, "cookie": 1})
    rng = np.random.default_rng(0)
    at_predict = replaced(["yawning face"] * 50, counts, lambda count: float(count == 0), _words, rng)
    assert set(at_predict) == {f"{UNKNOWN} face"}
    in_training = replaced(["cookie face"] * 2000, counts, lambda count: 0.25 / (0.25 + count), _words, rng)
    dropped = np.mean([text.startswith(UNKNOWN) for text in in_training])
    assert 0.17 < dropped < 0.23  # 0.25 / 1.25 for a word seen once
    assert np.mean([text.endswith(UNKNOWN) for text in in_training]) < 0.01  # 0.25 / 1000.25
