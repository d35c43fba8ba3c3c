"""Entity-level scores for BIO, BIOES (IOBES) and BILOU tags, with the CoNLL-2000 ``conlleval`` chunk rules."""

from __future__ import annotations

__all__ = ["bio_entities", "entity_f1", "is_bio_tag", "tag_scheme"]


#: BILOU's Last and Unit are BIOES's End and Single under other letters
_BILOU = {"L": "E", "U": "S"}


# ------------------------------------------------------------------ metric
def _split_tag(tag) -> tuple[str, str]:
    if tag == "O":
        return "O", ""
    prefix, dash, kind = str(tag).partition("-")
    if not dash or prefix not in ("B", "I", "E", "S", "L", "U"):
        raise ValueError(
            f"tag {tag!r} is not BIO nor BIOES: expected 'O', 'B-<type>', 'I-<type>' (and for BIOES 'E-<type>', 'S-<type>'; "
            "BILOU's 'L-<type>', 'U-<type>')"
        )
    if not kind:  # "B-" would be an entity of no type, which no scorer counts
        raise ValueError(f"tag {tag!r} has no entity type after {prefix + '-'!r}")
    return _BILOU.get(prefix, prefix), kind


def is_bio_tag(tag) -> bool:
    """Whether ``tag`` is ``"O"``, ``"B-<type>"`` or ``"I-<type>"`` with a non-empty type.

    Parameters
    ----------
    tag : object
        One tag.

    Returns
    -------
    bool
    """
    try:
        return _split_tag(tag)[0] in ("O", "B", "I")
    except ValueError:
        return False


def tag_scheme(tags) -> str | None:
    """The entity scheme a tag set follows: ``"BIO"``, ``"BIOES"`` (also called IOBES), ``"BILOU"``, or None.

    Parameters
    ----------
    tags : iterable of object
        A tag set, e.g. a tagger's ``classes_``.

    Returns
    -------
    str or None
        ``"BIO"`` when every tag is ``"O"``, ``"B-<type>"`` or ``"I-<type>"``; ``"BIOES"`` when
        ``"E-<type>"`` or ``"S-<type>"`` are among them too; ``"BILOU"`` with ``"L-<type>"`` or
        ``"U-<type>"`` (read as BIOES's ``E`` and ``S``); None when a tag is none of these (POS tags).
        Prefixes and ``"O"`` are case-sensitive, and a type must follow the dash.

    Examples
    --------
    >>> tag_scheme(["O", "B-PER", "I-PER"]), tag_scheme(["O", "S-PER", "E-PER"]), tag_scheme(["NN", "VB"])
    ('BIO', 'BIOES', None)
    """
    tags = list(tags)
    try:
        prefixes = {_split_tag(tag)[0] for tag in tags}
    except ValueError:
        return None
    if any(str(tag)[:2] in ("L-", "U-") for tag in tags):
        return "BILOU"
    return "BIO" if prefixes <= {"O", "B", "I"} else "BIOES"


def bio_entities(tags) -> list[tuple[int, int, str]]:
    """Entities in one sentence's tags as ``(start, end_exclusive, type)``.

    CoNLL rules (``conlleval``): an entity starts at ``B-X``, at ``I-X`` after ``O``, or
    at ``I-X`` after a tag of another type; it ends before ``B``, ``O`` or a type change.
    So both IOB2 and IOB1 sequences are read the way the shared-task scorer reads them.
    BIOES (IOBES) tags are read as seqeval's default (lenient) mode reads them: ``S-X`` is an
    entity of one word, an entity ends after ``E-X`` or ``S-X``, and ``I-X`` or ``E-X`` after ``O``,
    ``E``, ``S`` or another type starts one (as ``I-X`` after ``O`` does in BIO). BILOU's ``L-X``
    and ``U-X`` are read as ``E-X`` and ``S-X``.

    Parameters
    ----------
    tags : sequence of str
        One sentence's tags: ``"O"``, ``"B-<type>"``, ``"I-<type>"``, ``"E-<type>"`` or ``"S-<type>"``.

    Returns
    -------
    entities : list of (int, int, str)
        ``(start, end_exclusive, type)`` in order of ``start``.

    Raises
    ------
    ValueError
        If a tag is neither BIO nor BIOES.

    Examples
    --------
    >>> bio_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [(0, 2, 'PER'), (3, 4, 'LOC'), (4, 5, 'LOC'), (5, 6, 'ORG')]
    >>> bio_entities(["S-PER", "B-LOC", "E-LOC", "O", "E-ORG"])
    [(0, 1, 'PER'), (1, 3, 'LOC'), (4, 5, 'ORG')]
    """
    entities, start, previous, previous_kind = [], None, "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _split_tag(tag)
        ends = previous != "O" and (previous in ("E", "S") or prefix in ("B", "S", "O") or kind != previous_kind)
        if ends and start is not None:
            entities.append((start, i, previous_kind))
            start = None
        inside = prefix in ("I", "E")  # continues an open entity of its type; else starts one (conlleval's I-X after O)
        if prefix in ("B", "S") or (inside and (previous in ("O", "E", "S") or kind != previous_kind)):
            start = i
        previous, previous_kind = prefix, kind
    return entities


def entity_f1(y_true, y_pred, return_precision_recall: bool = False):
    """Micro-averaged entity-level F1 over sentences (exact span and type match).

    Parameters
    ----------
    y_true, y_pred : list of n lists of str
        BIO or BIOES tags per sentence (read by :func:`bio_entities`); sentence ``i`` has equal length in both.
    return_precision_recall : bool, default=False
        Return ``(precision, recall, f1)`` instead of ``f1``.

    Returns
    -------
    f1 : float in [0, 1], or tuple of three floats
        0 when there is no entity in either (as ``conlleval`` prints).

    Raises
    ------
    ValueError
        If the two lists, or a sentence's tags, differ in length, or a tag is neither BIO nor BIOES.

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
