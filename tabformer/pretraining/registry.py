"""The registry of pretraining objectives: ``TabFormerPretrainer(objective=name)`` looks
``name`` up here. Built-in objectives register when :mod:`tabformer.pretraining` is imported."""

from __future__ import annotations

__all__ = ["OBJECTIVES", "register_objective", "get_objective"]

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
