"""Validation probe: mixup for sentence classification (Guo, Mao & Zhang 2019) on the text-from-scratch recipe.

    python benchmarks/probe_mixup.py --task emoji --seeds 0,1 --variants none,sen0.2,sen0.4,sen1.0,sen2.0,word0.2,word1.0
    python benchmarks/probe_mixup.py --seeds 2,3 --variants none,sen1.0

senMixup: the input of the head's final Linear (LayerNorm -> ReLU of the mean-pooled encoder output)
is mixed per training batch, lam ~ Beta(a, a), with a permutation of the batch; the loss is
lam * CE(logits, y) + (1 - lam) * CE(logits, y[perm]).
wordMixup: the embedder's output tokens (B, T, D) are mixed position by position (padded),
the mask is the union of the two masks; same loss.
Eval/predict are unchanged (the hooks only act while the module is in training mode).
The test split is never scored. 1 torch thread. The figures are in docs/defaults.md
("Text from scratch: mixup").
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import torch

from bench_defaults import three_way
from suites import _emoji_names, _rt
from tabformer import TabFormerClassifier
from tabformer.estimators._weights import SAMPLE_WEIGHT

LOADERS = {"emoji": _emoji_names, "rt": _rt}


class MixupClassifier(TabFormerClassifier):
    """TabFormerClassifier with senMixup / wordMixup in training (a probe, not for the library)."""

    def __init__(self, *args, mixup_kind="none", mixup_alpha=0.2, **kwargs):
        super().__init__(*args, **kwargs)
        self.mixup_kind = mixup_kind
        self.mixup_alpha = mixup_alpha

    def initialize_module(self):
        out = super().initialize_module()
        self._mix_state = None
        # separate generator: the model's own random draws (init, dropout, shuffling) stay as in the control
        self._mix_rng = np.random.default_rng(12345 + int(self.random_state or 0))
        module = self.module_
        if self.mixup_kind == "sen":
            final = module.head.net[-1]
            assert isinstance(final, torch.nn.Linear), module.head
            final.register_forward_pre_hook(self._sen_hook)
        elif self.mixup_kind == "word":
            module.embedder.register_forward_hook(self._word_hook)
        return out

    def _draw(self, batch_size, device):
        lam = float(self._mix_rng.beta(self.mixup_alpha, self.mixup_alpha))
        perm = torch.as_tensor(self._mix_rng.permutation(batch_size), device=device)
        self._mix_state = (lam, perm)
        return lam, perm

    def _sen_hook(self, linear, inputs):
        if not linear.training:
            return None
        (h,) = inputs
        lam, perm = self._draw(h.shape[0], h.device)
        return (lam * h + (1 - lam) * h[perm],)

    def _word_hook(self, embedder, inputs, output):
        if not self.module_.training:
            return None
        tokens, mask = output
        lam, perm = self._draw(tokens.shape[0], tokens.device)
        tokens = lam * tokens + (1 - lam) * tokens[perm]
        if mask is not None:
            mask = mask | mask[perm]
        return tokens, mask

    def get_loss(self, y_pred, y_true, X=None, training=False):
        state, self._mix_state = getattr(self, "_mix_state", None), None
        if not training or state is None:
            return super().get_loss(y_pred, y_true, X=X, training=training)
        lam, perm = state
        y_perm = y_true[perm.to(y_true.device)] if torch.is_tensor(y_true) else y_true[perm.cpu().numpy()]
        X_perm = X
        if isinstance(X, dict) and SAMPLE_WEIGHT in X:
            X_perm = dict(X, **{SAMPLE_WEIGHT: X[SAMPLE_WEIGHT][perm.to(X[SAMPLE_WEIGHT].device)]})
        a = super().get_loss(y_pred, y_true, X=X, training=training)
        b = super().get_loss(y_pred, y_perm, X=X_perm, training=training)
        self.mix_calls_ = getattr(self, "mix_calls_", 0) + 1
        return lam * a + (1 - lam) * b


def parse(variant):
    """``"none"``, ``"sen<alpha>"`` or ``"word<alpha>"`` as ``(kind, alpha)``."""
    if variant == "none":
        return "none", 0.0
    kind = "sen" if variant.startswith("sen") else "word"
    return kind, float(variant[len(kind) :])


def run(task, variant, seed):
    """Validation accuracy, fit seconds and the model of one fit (the suite's split, seed 0)."""
    X, y = LOADERS[task](False)
    X_train, X_valid, _, y_train, y_valid, _ = three_way(X, y, 0)
    kind, alpha = parse(variant)
    model = MixupClassifier(tokenizer="wordpiece", random_state=seed, verbose=0, mixup_kind=kind, mixup_alpha=alpha)
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    fit_s = time.time() - start
    accuracy = float((model.predict(X_valid) == np.asarray(y_valid)).mean())
    return accuracy, fit_s, model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="emoji", choices=sorted(LOADERS))
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--variants", default="none,sen0.2,sen0.4")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"| {args.task} (validation) | seed | accuracy | fit s | mixed batches |\n|---|---|---|---|---|", flush=True)
    for variant in args.variants.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            accuracy, fit_s, model = run(args.task, variant, seed)
            calls = getattr(model, "mix_calls_", 0)
            print(f"| {variant} | {seed} | {accuracy:.4f} | {fit_s:.0f} | {calls} |", flush=True)
            if variant == "none" and seed == 0:
                print("  head:", model.module_.head, "criterion:", model.criterion_, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
