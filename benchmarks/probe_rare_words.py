"""Validation probe: rare training words read as ``[UNK]``, as words fit never saw are at predict.

    python benchmarks/probe_rare_words.py [--task emoji] [--seeds 0,1] [--alpha 0.25]

Frequency-aware word dropout (Kiperwasser & Goldberg, 2016): each training word is replaced
by ``[UNK]`` with probability ``alpha / (alpha + count)``, ``count`` its number of training
occurrences, so a word seen once is dropped most often. At predict, a word no training text
holds (count 0, probability 1) reads as ``[UNK]`` too, where WordPiece would split it into
pieces. The point: TF-IDF + LR puts names of unknown words into the class whose names are
mostly unique words (the emoji names' *Objects*); the network could learn the same from
``[UNK]``. The random replacement is drawn once per copy of the training texts (5 copies,
3 epochs: the recipe's 15 epochs of steps), with the vocabulary fitted on the texts as they
are. Variants: ``plain`` (5 copies, nothing replaced: the control) and ``unk`` (replaced in
training and at predict). The test split is never read. 1 torch thread. The figures are in
docs/defaults.md ("Text from scratch: rare words").
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from bench_defaults import three_way
from suites import _emoji_names, _fortunes, _rt
from tabformer import TabFormerClassifier
from tabformer.tokenizers.text import WordPieceTokenizer

COPIES = 5
UNKNOWN = " § "  # a character no vocabulary of these sets holds: WordPiece reads it as one [UNK]
LOADERS = {"emoji": _emoji_names, "rt": _rt, "fortunes": _fortunes}


def replaced(texts, counts, probability, words, rng) -> list:
    """``texts`` with each word replaced by ``UNKNOWN`` with ``probability(count of the word)``."""
    out = []
    for text in texts:
        normalized, pieces = words(text)
        parts, last = [], 0
        for word, (start, end) in pieces:
            parts += [normalized[last:start], UNKNOWN if rng.random() < probability(counts[word]) else word]
            last = end
        out.append("".join(parts + [normalized[last:]]))
    return out


def run(task: str, variant: str, seed: int, alpha: float, folder: Path) -> float:
    X, y = LOADERS[task](False)
    X_train, X_valid, _, y_train, y_valid, _ = three_way(X, y, 0)
    X_train, X_valid = list(X_train), list(X_valid)
    vocabulary = WordPieceTokenizer(vocab_size=30000).fit(X_train)
    vocab_file = vocabulary.save_vocabulary(folder / f"{task}.txt")
    backend = vocabulary._backend()

    def words(text):
        normalized = backend.normalizer.normalize_str(text)
        return normalized, backend.pre_tokenizer.pre_tokenize_str(normalized)

    counts = collections.Counter(word for text in X_train for word, _ in words(text)[1])
    rng = np.random.default_rng(seed)
    unk = variant == "unk"
    in_training = (lambda count: alpha / (alpha + count)) if unk else (lambda count: 0.0)
    at_predict = (lambda count: float(count == 0)) if unk else (lambda count: 0.0)
    X_fit = [text for _ in range(COPIES) for text in replaced(X_train, counts, in_training, words, rng)]
    model = TabFormerClassifier(
        tokenizer="wordpiece", tokenizer__vocab_file=vocab_file, max_epochs=15 // COPIES, verbose=0, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the [UNK] share warning: intended here
        model.fit(X_fit, np.concatenate([np.asarray(y_train)] * COPIES))
        predicted = model.predict(replaced(X_valid, counts, at_predict, words, rng))
    return float((predicted == np.asarray(y_valid)).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="emoji", choices=sorted(LOADERS))
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--alpha", type=float, default=0.25)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"| {args.task} (validation) | seed | accuracy | fit s |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for variant in ("plain", "unk"):
            for seed in (int(s) for s in args.seeds.split(",")):
                start = time.time()
                accuracy = run(args.task, variant, seed, args.alpha, Path(folder))
                print(f"| {variant} (alpha {args.alpha}) | {seed} | {accuracy:.4f} | {time.time() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
