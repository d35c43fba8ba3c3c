"""The linear-probe recipe: a classifier over a frozen pretrained encoder (``freeze_encoder=True``).

Fine-tuning recipes move pretrained weights gently (5e-5 for BERT-family text, 3e-4 for
images); a probe trains a fresh head (and, unless ``freeze_embedder``, the embedder) over
fixed features, and at those rates the head barely leaves its initialisation: 0.25-0.59
validation accuracy where logistic regression on the same features reads 0.68-0.89. The
probe recipe raises the rate and trains on every row for the whole decay (a 10% holdout of
a few hundred labels is noisy to stop on, and a probe has little room to overfit).

Chosen on validation splits only (``benchmarks/probe_linear.py``; docs/defaults.md,
"Linear probes"): 500 labelled rows per dataset, both ``freeze_embedder`` settings.

- images (SimCLR encoders of digits, Fashion-MNIST and emoji pictures): lr 1e-2 and the
  mean of every token's output. 1e-2 was best or within 0.03 of the best of 1e-3 to 3e-2
  on all six runs; mean pooling gained 0.00 to 0.02 over the CLS output;
- texts (all-MiniLM-L6-v2 on Rotten Tomatoes, emoji names and icon names): lr 3e-3. Over
  the six runs 3e-3 and 1e-2 tie on average (0.809); 3e-3 is at most 0.03 behind the best
  rate where 1e-2 is 0.06 behind on Rotten Tomatoes. The head has no ReLU
  (``head__activation="identity"``): a linear probe. Over three seeds it gained 0.003 to
  0.022 on average on emoji and icon names and was level on Rotten Tomatoes;
- tables (a masked-cell encoder of Adult): the table recipe's 1e-3 already probes well
  (1e-2 lost 0.03 with a trained embedder), so tables keep it.

Regressors keep their recipes: no probe regression was measured.
"""

from __future__ import annotations

__all__ = ["probe_recipe"]

_IMAGE_PROBE = dict(lr=1e-2, lr_schedule="warmup_linear", patience=None, head__pooling="mean")
_TEXT_PROBE = dict(lr=3e-3, lr_schedule="warmup_linear", patience=None, head__activation="identity")


def probe_recipe(estimator, kind: str, pretrained: bool) -> dict:
    """What the probe recipe changes in the fine-tuning recipe of ``kind``; empty where none applies.

    Parameters
    ----------
    estimator : TabFormerNet
        Its ``freeze_encoder`` and role decide whether it probes: a classifier over a frozen
        pretrained encoder.
    kind : {"text", "image", "table", "mixed"}
        The input's kind; a frame of text columns only counts as ``"text"``.
    pretrained : bool
        Whether the encoder starts from pretrained weights.

    Returns
    -------
    dict
        Settings that replace the recipe's (``lr``, ``lr_schedule``, ``patience``, and
        ``head__pooling`` for images, ``head__activation`` for texts).
    """
    if not (pretrained and getattr(estimator, "freeze_encoder", False) and estimator._recipe_role == "classifier"):
        return {}
    return dict({"image": _IMAGE_PROBE, "text": _TEXT_PROBE}.get(kind, {}))
