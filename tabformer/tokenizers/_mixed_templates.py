"""The ``text``, ``image`` and ``table`` templates of a :class:`~tabformer.tokenizers.MixedTokenizer`.

A template is a tokenizer, a registered name (``"wordpiece"``, as ``transformers`` accepts) or None (the
default one); these helpers turn any of them into a tokenizer, so nested settings such as
``text__vocab_size`` apply to a template given by name, and ``<name>__vocab_size`` to a tokenizer that
``transformers`` routes to by name.
"""

from __future__ import annotations

from sklearn.base import clone

from .base import TOKENIZERS, BaseTokenizer
from .image import PatchTokenizer
from .tabular import TabularTokenizer
from .text import WordPieceTokenizer

__all__ = ["SLOTS", "route_pairs", "routes_for", "template", "templates_for"]

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


def routes_for(transformers, params: dict):
    """``transformers`` with each tokenizer given by name that a nested setting reaches made that tokenizer.

    ``words__vocab_size=...`` sets a parameter of the tokenizer routed as ``"words"``, which must be a
    tokenizer by then: ``("words", "wordpiece", columns)`` becomes ``("words", WordPieceTokenizer(), columns)``.

    Parameters
    ----------
    transformers : list of (name, tokenizer, columns)
        A :class:`~tabformer.tokenizers.MixedTokenizer`'s routing; anything else is returned as is.
    params : dict
        The ``set_params`` arguments.

    Returns
    -------
    list or object
        ``transformers`` itself when no nested setting reaches a tokenizer given by name, else a new list.

    Raises
    ------
    ValueError
        If a nested setting reaches a name no tokenizer is registered under.
    """
    if not isinstance(transformers, (list, tuple)):
        return transformers
    routes, changed = list(transformers), False
    for i, entry in enumerate(routes):
        if not (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[1], str)):
            continue  # a tokenizer already, or a mistake fit names
        name, value, columns = entry
        if any(key.startswith(f"{name}__") for key in params):
            if value not in TOKENIZERS:
                raise ValueError(
                    f"transformer {name!r}: unknown tokenizer {value!r}; choose one of {sorted(TOKENIZERS)} "
                    "or pass a tokenizer instance"
                )
            routes[i], changed = (name, TOKENIZERS[value](), columns), True
    return routes if changed else transformers


def route_pairs(transformers) -> list:
    """``[(name, tokenizer)]`` of a routing, as scikit-learn's ``_BaseComposition`` reads it.

    Parameters
    ----------
    transformers : list of (name, tokenizer, columns) or object
        A :class:`~tabformer.tokenizers.MixedTokenizer`'s ``transformers``, valid or not.

    Returns
    -------
    list of (str, tokenizer or str)
        ``[]`` for None or anything but a list of triples, so that ``get_params`` and ``set_params``
        accept any value as scikit-learn asks (``fit`` names the mistake).
    """
    try:
        return [(name, tokenizer) for name, tokenizer, _ in (transformers or [])]
    except (TypeError, ValueError):
        return []
