"""When an embedder's train-time augmentations apply, apart from its training mode.

A model that freezes its embedder keeps it in eval mode, so that its dropout and its
BatchNorm statistics stay fixed; an embedder that read its augmentations from that mode
would lose them too (random shifts, token, category, sentence and segment dropout),
silently. They read :attr:`Augmented.augmenting` instead, which the model sets to its own
training flag while the embedder is frozen.
"""

from __future__ import annotations

__all__ = ["Augmented"]


class Augmented:
    """Mixin of the embedders with train-time augmentations.

    Attributes
    ----------
    augment : bool or None
        None (the default): augment in training mode. True or False: augment or not,
        whatever the mode; :class:`~tabformer.nn.models.TabFormerModel` sets it while its
        embedder is frozen.
    """

    augment = None

    @property
    def augmenting(self) -> bool:
        """Whether the augmentations apply now: ``augment`` when set, else training mode."""
        return self.training if self.augment is None else bool(self.augment)
