"""The registry of pretraining objectives: ``TabFormerPretrainer(objective=name)`` looks
``name`` up here. Built-in objectives register when :mod:`tabformer.pretraining` is imported."""

from __future__ import annotations

__all__ = ["OBJECTIVES", "AUTO_OBJECTIVES", "register_objective", "get_objective", "resolve_objective"]

#: name -> objective class
OBJECTIVES: dict = {}


def register_objective(name: str):
    """Class decorator adding a pretraining objective to :data:`OBJECTIVES`.

    Parameters
    ----------
    name : str
        What ``TabFormerPretrainer(objective=name)`` calls it.

    Returns
    -------
    decorate : callable
        Registers the class in :data:`OBJECTIVES` and returns it unchanged.
    """

    def decorate(cls):
        OBJECTIVES[name] = cls
        return cls

    return decorate


def get_objective(name):
    """The objective class registered as ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`OBJECTIVES`, e.g. ``"mlm"`` or ``"simclr"``.

    Returns
    -------
    objective : type
        The class; build it with the ``objective__*`` parameters.

    Raises
    ------
    TypeError
        If ``name`` is not a str.
    ValueError
        Naming the registered objectives, if ``name`` is unknown.
    """
    if not isinstance(name, str):
        raise TypeError(f"objective must be a registered name, got {type(name).__name__}")
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; registered objectives: {sorted(OBJECTIVES)}")
    return OBJECTIVES[name]


#: what ``objective="auto"`` picks, by the fitted tokenizer's ``kind``
AUTO_OBJECTIVES = {"table": "masked_cells", "text": "mlm", "image": "simclr", "mixed": "mlm"}


def resolve_objective(name, tokenizer) -> str:
    """The objective ``name`` stands for: itself, or for ``"auto"`` the one for the tokenizer's input.

    Parameters
    ----------
    name : str
        ``"auto"`` or a key of :data:`OBJECTIVES`.
    tokenizer : BaseTokenizer
        The fitted tokenizer; its ``kind`` (``"table"``, ``"text"``, ``"image"``,
        ``"mixed"``) picks from :data:`AUTO_OBJECTIVES`: masked cells for a table,
        masked tokens for text and mixed rows, SimCLR for images and for mixed rows
        without a text or categorical column (nothing to mask).

    Returns
    -------
    name : str
        A registered objective's name.

    Raises
    ------
    ValueError
        If ``"auto"`` meets a tokenizer of a kind without a default objective.

    Examples
    --------
    >>> from tabformer.tokenizers import TabularTokenizer
    >>> resolve_objective("auto", TabularTokenizer())
    'masked_cells'
    """
    if name != "auto":
        return name
    kind = getattr(tokenizer, "kind", None)
    if kind not in AUTO_OBJECTIVES:
        raise ValueError(
            f"objective='auto' has no default for {type(tokenizer).__name__} ({kind!r} input); name one of {sorted(OBJECTIVES)}"
        )
    kinds = set(getattr(tokenizer, "column_kinds_", {}).values()) if kind == "mixed" else set()
    if kinds and not kinds & {"text", "categorical"}:  # mixed rows with nothing to mask: images (and numbers)
        return "simclr"
    return AUTO_OBJECTIVES[kind]
