"""The ``text``, ``image`` and ``table`` templates of a :class:`~tabformer.tokenizers.MixedTokenizer`.

A template is a tokenizer, a registered name (``"wordpiece"``, as ``transformers`` accepts) or None (the
default one); these helpers turn any of them into a tokenizer, so nested settings such as
``text__vocab_size`` apply to a template given by name.
"""

from __future__ import annotations

from sklearn.base import clone

from .base import TOKENIZERS, BaseTokenizer
from .image import PatchTokenizer
from .tabular import TabularTokenizer
from .text import WordPieceTokenizer

__all__ = ["SLOTS", "template", "templates_for"]

#: each template slot and the tokenizer it holds when None
SLOTS = {"text": WordPieceTokenizer, "image": PatchTokenizer, "table": TabularTokenizer}


def template(slot: str, value) -> BaseTokenizer:
    """An unfitted tokenizer for the template ``value`` of ``slot``.

    Parameters
    ----------
    slot : {"text", "image", "table"}
        The template's parameter name; errors name it.
    value : BaseTokenizer, str or None
        A tokenizer (cloned), a name in :data:`~tabformer.tokenizers.TOKENIZERS`, or None for the slot's
        default tokenizer.

    Returns
    -------
    BaseTokenizer
        A new, unfitted tokenizer.

    Raises
    ------
    ValueError
        If ``value`` is a name no tokenizer is registered under.
    TypeError
        If ``value`` is neither a tokenizer, a str nor None.
    """
    if value is None:
        return SLOTS[slot]()
    if isinstance(value, str):
        if value not in TOKENIZERS:
            raise ValueError(
                f"{slot}={value!r} names no tokenizer; choose one of {sorted(TOKENIZERS)} or pass a tokenizer instance"
            )
        return TOKENIZERS[value]()
    if not isinstance(value, BaseTokenizer):
        raise TypeError(f"{slot} must be a tabformer tokenizer, its name or None, got {type(value).__name__}")
    return clone(value)


def templates_for(tokenizer, params: dict) -> dict:
    """``params`` for ``tokenizer.set_params`` with the templates its nested settings need made tokenizers.

    ``text__vocab_size=...`` sets a parameter of the text template, which must be a tokenizer by then:
    a template given by name (in ``params`` or on ``tokenizer``) becomes the named tokenizer, and a None
    one the slot's default, before the nested settings apply.

    Parameters
    ----------
    tokenizer : MixedTokenizer
        The tokenizer whose ``set_params`` is called; its current templates are read.
    params : dict
        The ``set_params`` arguments.

    Returns
    -------
    dict
        ``params`` with a tokenizer for each slot a nested setting reads that is a name or None.
    """
    params = dict(params)
    for slot in SLOTS:
        value = params.get(slot, getattr(tokenizer, slot))
        nested = any(key.startswith(slot + "__") for key in params)
        if nested and not isinstance(value, BaseTokenizer):  # a name, None, or a mistake template() names
            params[slot] = template(slot, value)
    return params
