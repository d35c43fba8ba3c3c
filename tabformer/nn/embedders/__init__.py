"""Embedders: the torch half of each tokenizer.

Every embedder's ``forward(**batch)`` returns ``(tokens (B, T, D), mask (B, T) bool or
None)``, ``True`` marking real tokens. A fitted tokenizer *describes* the embedder it
needs as a JSON-able dict (``tokenizer.embedder_spec()``: ``{"kind": name, **sizes}``);
:func:`build_embedder` looks ``kind`` up in :data:`EMBEDDERS` and builds it, so the
torch layer never needs to know the tokenizer classes.
"""

from __future__ import annotations

from torch import nn

from .image import HybridEmbedder, PatchEmbedder
from .mixed import MixedEmbedder
from .sentence import SentenceEmbedder
from .tabular import TabularEmbedder
from .text import TextEmbedder

__all__ = ["EMBEDDERS", "register_embedder", "build_embedder"]

#: spec kind -> embedder class; a class with a ``from_spec(spec, d_model, build)``
#: classmethod builds itself (sub-embedders, pretrained stems), others get ``**spec``.
EMBEDDERS: dict = {
    "tabular": TabularEmbedder,
    "text": TextEmbedder,
    "patch": PatchEmbedder,
    "hybrid": HybridEmbedder,
    "mixed": MixedEmbedder,
    "sentence": SentenceEmbedder,
}


def register_embedder(kind: str):
    """Class decorator: ``build_embedder`` builds this class for specs of this ``kind``.

    Parameters
    ----------
    kind : str
        The ``"kind"`` a tokenizer's ``embedder_spec()`` names.

    Returns
    -------
    decorate : callable
        Registers the class in :data:`EMBEDDERS` and returns it unchanged.

    Examples
    --------
    >>> from torch import nn
    >>> @register_embedder("my-kind")  # doctest: +SKIP
    ... class MyEmbedder(nn.Module): ...
    """

    def decorate(cls):
        EMBEDDERS[kind] = cls
        return cls

    return decorate


def build_embedder(spec: dict, d_model: int) -> nn.Module:
    """The embedder a tokenizer's ``embedder_spec()`` describes, with ``d_model`` wide tokens.

    Parameters
    ----------
    spec : dict
        ``{"kind": name, **arguments}``, JSON-able.
    d_model : int
        Token width ``D`` of the embedder's output.

    Returns
    -------
    embedder : nn.Module
        ``embedder(**batch)`` returns ``(tokens (B, T, D), mask (B, T) bool or None)``.

    Raises
    ------
    ValueError
        If ``spec["kind"]`` is missing or not in :data:`EMBEDDERS`.
    """
    spec = dict(spec)
    kind = spec.pop("kind", None)
    if kind not in EMBEDDERS:
        raise ValueError(f"unknown embedder kind {kind!r}; known kinds: {sorted(EMBEDDERS)}")
    cls = EMBEDDERS[kind]
    if hasattr(cls, "from_spec"):
        return cls.from_spec(spec, d_model, build_embedder)
    return cls(d_model=d_model, **spec)
