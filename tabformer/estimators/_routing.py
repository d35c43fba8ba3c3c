"""What a :class:`~tabformer.tokenizers.MixedTokenizer` will build on the training frame, read before ``fit`` by the recipes."""

from __future__ import annotations

__all__ = ["routed_kinds"]


def routed_kinds(tokenizer, X) -> list | None:
    """The kind of every segment ``tokenizer.fit(X)`` will build, before fitting.

    The recipes read the routing rather than the detection alone, so that columns the
    user routed (``transformers``, or a table template's ``categorical_columns`` /
    ``numeric_columns``) count as what they were routed to.

    Parameters
    ----------
    tokenizer : MixedTokenizer
        Unfitted, with the user's settings.
    X : DataFrame
        The training frame.

    Returns
    -------
    list of {"text", "image", "table"} or None
        One kind per sub-tokenizer, in routing order; ``None`` where ``fit`` will raise
        (it then names the column).
    """
    try:
        routing = tokenizer._routing(tokenizer._check_frame(X))
    except (TypeError, ValueError):
        return None
    return [tokenizer.segment_kind(sub) for _, sub, _ in routing]
