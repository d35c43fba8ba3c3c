"""Self-supervised objectives for :class:`~tabformer.TabFormerPretrainer`.

An objective is a class registered in :data:`OBJECTIVES` under its name
(``TabFormerPretrainer(objective=name)``), built from the ``objective__*`` parameters.
Its protocol keeps the pretrainer generic over modalities:

``make_dataset(batch, tokenizer, random_state) -> torch Dataset``
    ``batch`` is the tokenizer's output for the unlabeled rows (dict of numpy arrays);
    the dataset yields ``(inputs_dict, dummy_target)`` and draws fresh random views or
    masks on every access (:mod:`tabformer.pretraining.views`).
``build_head(tokenizer, embedder, d_model) -> nn.Module``
    The objective's own layers (projection head, masked-token head). Its
    ``forward(embedder, encoder, **inputs)`` receives the shared embedder and encoder
    as arguments, so :class:`~tabformer.nn.models.PretrainingModel` owns them once.
``loss(predictions) -> scalar Tensor``
    What the head predicted, scored (:mod:`tabformer.pretraining.losses`); the
    pretrainer's ``get_loss`` calls it.
``loss_sum(predictions) -> (scalar Tensor, int)`` (optional)
    The summed loss and the number of terms it sums (hidden cells, masked tokens):
    ``score`` divides the sum over all batches by the count over all batches. Without it,
    ``score`` averages ``loss`` over the batches weighted by their rows.
``seed_rows`` (optional attribute of the dataset)
    ``score`` sets it to True on a dataset that has it: each row's masks then depend on
    the row's index, not on its batch (:mod:`tabformer.pretraining._draws`).
``drop_last`` (optional class attribute)
    ``True`` asks the training loader to drop the last, smaller batch.
``min_batch_rows`` (optional class attribute, default 1)
    The rows a batch needs (SimCLR: 2, the other rows being the negatives); the pretrainer
    refuses a holdout or training set that would leave a batch with fewer.
"""

from . import cells, mlm, simclr  # noqa: F401  (register objective="masked_cells", "mlm" and "simclr")
from .registry import AUTO_OBJECTIVES, OBJECTIVES, get_objective, register_objective, resolve_objective

__all__ = ["OBJECTIVES", "AUTO_OBJECTIVES", "register_objective", "get_objective", "resolve_objective"]
