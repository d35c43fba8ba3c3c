"""How a classifier or regressor fine-tunes a pretrained text encoder: how long, and at what rate.

Two kinds of pretrained text encoder reach ``fit``:

- **weights from elsewhere** (BERT family: all-MiniLM-L6-v2 by default, ``load_bert``,
  ``from_pretrained``): BERT's fine-tuning recipe (``_TEXT_PRETRAINED`` in ``_recipes``), 3
  epochs, more on small data (:func:`pretrained_text_epochs`);
- **tabformer's own** (a ``TabFormerPretrainer``'s masked-token encoder, or a saved model's,
  whose sub-word vocabulary was learned from texts by tabformer): a small encoder from
  few epochs of masked tokens, not a converged 22M-parameter BERT. BERT's lr of 5e-5 barely
  moves it: with 500 labels it read 0.575 validation accuracy on Rotten Tomatoes and 0.525 on
  four fortune topics, below no pretraining at all (0.620, 0.647), and 0.636 / 0.675 with lr
  5e-4, 15 epochs, no early stopping (2 seeds; docs/defaults.md, "Text encoders pretrained by
  tabformer").

The two are told apart by the tokenizer: imported vocabularies keep ``source_ids_`` (the
rows of the imported embedding table), a vocabulary tabformer learned has none.
"""

from __future__ import annotations

import math
import numbers

from ._split import DEFAULT_VALIDATION_FRACTION

__all__ = ["MIN_FINE_TUNING_STEPS", "OWN_TEXT_ENCODER", "pretrained_text_epochs", "text_finetune_recipe"]

#: the fewest optimizer steps a fine-tune of pretrained text weights takes by default (3 to 10 epochs)
MIN_FINE_TUNING_STEPS = 300
#: BERT's fine-tuning epochs (Devlin et al., 2019), the least :func:`pretrained_text_epochs` gives
BERT_EPOCHS = 3
#: a classifier fine-tuning tabformer's own pretrained text encoder: validation, 500 labels, 2 seeds
#: (docs/defaults.md): RT 0.575 / fortunes 0.525 with BERT's recipe, 0.636 / 0.675 with this one. 15 epochs decayed
#: to 0 and kept, as the from-scratch text recipe: a holdout of 50 rows decides nothing.
OWN_TEXT_ENCODER = dict(lr=5e-4, max_epochs=15, patience=None, head__dropout=0.1)


def pretrained_text_epochs(n_rows: int, batch_size: int) -> int:
    """BERT's 3 epochs, or more on small data: enough for ``MIN_FINE_TUNING_STEPS`` steps, at most 10.

    On 930 icon names, 3 epochs (81 steps) read 0.797 validation accuracy, below the
    from-scratch recipe's 0.839, and 10 epochs 0.871 (docs/defaults.md). Few-sample
    fine-tuning wants more steps, not more epochs of a large set (Zhang et al., 2021).

    Parameters
    ----------
    n_rows : int
        Training rows, the holdout included.
    batch_size : int
        Rows a step; ``-1`` (skorch: every row in one step) gives BERT's 3 epochs.

    Returns
    -------
    int
    """
    if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:  # -1: the whole set in one step
        return BERT_EPOCHS
    steps = math.ceil(n_rows * (1 - DEFAULT_VALIDATION_FRACTION) / batch_size)
    return int(min(10, max(BERT_EPOCHS, math.ceil(MIN_FINE_TUNING_STEPS / max(steps, 1)))))


def text_finetune_recipe(tokenizer, role: str, n_rows: int, batch_size) -> dict:
    """What a pretrained text encoder's fine-tune changes in the pretrained text recipe.

    Parameters
    ----------
    tokenizer : fitted tokenizer
        The pretrained encoder's.
    role : str
        ``"classifier"`` or ``"regressor"``.
    n_rows : int
        Training rows.
    batch_size : int
        The resolved training batch.

    Returns
    -------
    dict
        :data:`OWN_TEXT_ENCODER` for a classifier of tabformer's own encoder (regressors were
        not measured, and keep BERT's recipe), else ``max_epochs`` by :func:`pretrained_text_epochs`.
    """
    if role == "classifier" and getattr(tokenizer, "source_ids_", ()) is None:
        return dict(OWN_TEXT_ENCODER)
    return {"max_epochs": pretrained_text_epochs(n_rows, batch_size)}
