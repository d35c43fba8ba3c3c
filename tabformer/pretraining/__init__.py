"""Self-supervised objectives for :class:`~tabformer.TabFormerPretrainer`.

An objective is a class registered in :data:`OBJECTIVES` under its name
(``TabFormerPretrainer(objective=name)``). Its protocol, so that the pretrainer stays
generic over modalities:

``make_dataset(batch, tokenizer, random_state) -> torch Dataset``
    ``batch`` is the tokenizer's output for the unlabeled rows (dict of numpy arrays);
    the dataset yields ``(inputs_dict, dummy_target)`` and may draw fresh random views
    or masks on every access (SimCLR augmentations, MLM masking), so every epoch sees
    new ones.
``build_module(tokenizer, embedder, encoder) -> nn.Module``
    A module whose ``forward(**inputs)`` returns the scalar loss; it owns any extra
    heads (projection head, masked-token head) and shares ``embedder``/``encoder``.
"""

OBJECTIVES: dict = {}


def register_objective(name: str):
    """Class decorator adding a pretraining objective to :data:`OBJECTIVES`."""

    def decorate(cls):
        OBJECTIVES[name] = cls
        return cls

    return decorate
