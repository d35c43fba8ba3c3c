"""Entity-level scores for BIO tags, with the CoNLL-2000 ``conlleval`` chunk rules."""

from __future__ import annotations

__all__ = ["bio_entities", "entity_f1", "is_bio_tag"]


# ------------------------------------------------------------------ metric
def _split_tag(tag: str) -> tuple[str, str]:
    if tag == "O":
        return "O", ""
    prefix, dash, kind = str(tag).partition("-")
    if not dash or prefix not in ("B", "I"):
        raise ValueError(f"tag {tag!r} is not BIO: expected 'O', 'B-<type>' or 'I-<type>'")
    return prefix, kind


def is_bio_tag(tag) -> bool:
    """Whether ``tag`` is ``"O"``, ``"B-<type>"`` or ``"I-<type>"`` (what :func:`entity_f1` reads).

    Parameters
    ----------
    tag : object
        One tag.

    Returns
    -------
    bool
    """
    try:
        _split_tag(tag)
    except ValueError:
        return False
    return True


def bio_entities(tags) -> list[tuple[int, int, str]]:
    """Entities in one sentence's tags as ``(start, end_exclusive, type)``.

    CoNLL rules (``conlleval``): an entity starts at ``B-X``, at ``I-X`` after ``O``, or
    at ``I-X`` after a tag of another type; it ends before ``B``, ``O`` or a type change.
    So both IOB2 and IOB1 sequences are read the way the shared-task scorer reads them.

    Parameters
    ----------
    tags : sequence of str
        One sentence's tags: ``"O"``, ``"B-<type>"`` or ``"I-<type>"``.

    Returns
    -------
    entities : list of (int, int, str)
        ``(start, end_exclusive, type)`` in order of ``start``.

    Raises
    ------
    ValueError
        If a tag is not BIO.

    Examples
    --------
    >>> bio_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [(0, 2, 'PER'), (3, 4, 'LOC'), (4, 5, 'LOC'), (5, 6, 'ORG')]
    """
    entities, start, previous, previous_kind = [], None, "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _split_tag(tag)
        ends = previous != "O" and (prefix in ("B", "O") or kind != previous_kind)
        if ends and start is not None:
            entities.append((start, i, previous_kind))
            start = None
        if prefix == "B" or (prefix == "I" and (previous == "O" or kind != previous_kind)):
            start = i
        previous, previous_kind = prefix, kind
    return entities


def entity_f1(y_true, y_pred, return_precision_recall: bool = False):
    """Micro-averaged entity-level F1 over sentences (exact span and type match).

    Parameters
    ----------
    y_true, y_pred : list of n lists of str
        BIO tags per sentence; sentence ``i`` has equal length in both.
    return_precision_recall : bool, default=False
        Return ``(precision, recall, f1)`` instead of ``f1``.

    Returns
    -------
    f1 : float in [0, 1], or tuple of three floats
        0 when there is no entity in either (as ``conlleval`` prints).

    Raises
    ------
    ValueError
        If the two lists, or a sentence's tags, differ in length, or a tag is not BIO.

    Examples
    --------
    >>> entity_f1([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]], return_precision_recall=True)
    (1.0, 0.5, 0.6666666666666666)
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sentences but y_pred has {len(y_pred)}")
    n_true = n_pred = n_correct = 0
    for i, (true, pred) in enumerate(zip(y_true, y_pred)):
        if len(true) != len(pred):
            raise ValueError(f"sentence {i}: {len(true)} true tags but {len(pred)} predicted")
        gold, guess = set(bio_entities(true)), set(bio_entities(pred))
        n_true, n_pred, n_correct = n_true + len(gold), n_pred + len(guess), n_correct + len(gold & guess)
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return (precision, recall, f1) if return_precision_recall else f1
