"""New table categories at a continued fit: refused (``new_categories="error"``) or learned (``"grow"``).

A continued fit (``partial_fit``, or ``fit`` with ``warm_start=True``) keeps the fitted
tokenizer, so a category the first fit never saw would be read as the column's "unseen"
id and trained as such: a silent change of meaning. The estimator's ``new_categories``
says what happens instead. Growing appends the new values to their columns' categories
(old ids unchanged), grows the embedding table (old rows copied exactly, new rows drawn
as at a fresh fit) and gives the optimizer the new table, with the old rows' AdamW
moments kept and the new rows' moments at zero.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch
from sklearn.utils._param_validation import StrOptions
from torch.utils.data import Dataset

from ..nn.embedders.tabular import TabularEmbedder
from ..tokenizers import UnseenCategoryWarning, UntrainedMissingWarning
from ..tokenizers._columns import ColumnWarnings, user_label
from ..tokenizers._datetimes import part_owners
from ..tokenizers.tabular import MISSING_ID, UNSEEN_ID, TabularTokenizer
from ._util import pretrained_step

__all__ = [
    "adopt_new_categories",
    "pretrained_tokens",
    "with_grown_categories",
    "NEW_CATEGORIES_CONSTRAINT",
    "NEW_CATEGORIES_PARAM_DOC",
    "continue_with_categories",
    "continued_tokens",
    "grow_for_new_categories",
    "missing_token_widths",
    "note_trained_missing",
    "refuse_unseen_categories",
    "unseen_category_columns",
]

NEW_CATEGORIES_CONSTRAINT = [StrOptions({"error", "grow"})]

NEW_CATEGORIES_PARAM_DOC = """    new_categories : {"error", "grow"}, default="error"
        What a continued fit (``partial_fit``, or ``fit`` with ``warm_start=True``) does
        with table categories the first fit never saw. ``"error"`` refuses them
        (``ValueError`` naming the columns). ``"grow"`` learns them: the fitted tokenizer
        appends them to their columns' categories (old ids unchanged), the categorical
        embedding grows (old rows copied exactly, new rows initialised as at a fresh fit)
        and the optimizer trains the new rows (old rows keep their AdamW moments), so
        rows of old categories predict exactly as before until training moves the
        weights. Table inputs only: a mixed model given new categories raises with
        ``"grow"`` too, and a streamed continued fit (rows read piece by piece) does not
        check them, so it reads them as "unseen". Fine-tuning from a pretrained table
        encoder (``encoder=``) treats the categories its pretraining never saw the same
        way: refused, or appended with fresh embeddings.
"""


def adopt_new_categories(estimator, tokenizer, X):
    """A pretrained encoder's table ``tokenizer`` (a copy) facing the fine-tuning rows ``X``: as a continued fit does.

    Categories its pretraining never saw are refused (``new_categories="error"``), or
    appended (``"grow"``; :func:`with_grown_categories` grows the copied embedder to
    match). Read as "unseen" they would all share one id, the one masked-cell
    pretraining masks with, silently. Other tokenizers, and tokens, pass unchanged.
    """
    if type(tokenizer) is not TabularTokenizer or isinstance(X, (dict, Dataset)):
        return tokenizer
    if getattr(estimator, "new_categories", "error") == "grow":
        added = pretrained_step(tokenizer, X, "add_categories")
        if getattr(estimator, "freeze_embedder", False):
            _refuse_frozen_growth(added)
        return tokenizer
    with warnings.catch_warnings():  # missing values this fit trains: see pretrained_tokens
        warnings.simplefilter("ignore", UntrainedMissingWarning)
        warnings.simplefilter("ignore", UnseenCategoryWarning)  # refused or grown just below
        # through pretrained_step: sentences given to a table encoder failed in numpy ("inhomogeneous shape")
        new = unseen_category_columns(tokenizer, pretrained_step(tokenizer, X, "transform"))
    if new:
        raise ValueError(
            f"X holds categories the pretrained encoder's tokenizer never saw, in column(s) {new}: they would all read "
            "as its one 'unseen' id. Set new_categories='grow' to learn them (their embeddings start fresh), or set "
            "those values to missing (None)"
        )
    return tokenizer


def _refuse_frozen_growth(added: dict) -> None:
    """Refuse categories ``new_categories="grow"`` would append under a frozen embedder: their fresh rows never train."""
    if added:
        raise ValueError(
            f"new_categories='grow' appends categories the model never saw ({added}), but freeze_embedder=True would "
            "keep their fresh embeddings random for good. Leave the embedder trainable (freeze_encoder=True alone still "
            "fixes the encoder), or set those values to missing (None)"
        )


def pretrained_tokens(tokenizer, X) -> dict:
    """The fine-tuning rows ``X`` through a pretrained encoder's (copied) ``tokenizer``.

    Missing values in a column that had none in pretraining are trained by this fit:
    no warning now, and the tokenizer records it, so predict does not warn either.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrainedMissingWarning)
        warnings.simplefilter("ignore", UnseenCategoryWarning)  # adopt_new_categories refused or grew them
        data = pretrained_step(tokenizer, X, "transform")
    note_trained_missing(tokenizer, data)
    return data


def with_grown_categories(embedder, tokenizer):
    """``embedder`` (a pretrained one's copy) with room for the categories :func:`adopt_new_categories` appended."""
    if isinstance(embedder, TabularEmbedder) and type(tokenizer) is TabularTokenizer:
        cardinalities = tokenizer.embedder_spec()["cardinalities"]
        if embedder.n_categorical and sum(cardinalities) != embedder.category_embedding.num_embeddings:
            embedder.grow_categories(cardinalities)
    return embedder


def continued_tokens(estimator, X, y) -> tuple:
    """``(tokens, encoded target)`` of a continued fit: new categories handled, trained missing tokens noted.

    Parameters
    ----------
    estimator : fitted TabFormerNet
    X, y : the continued fit's input and target
    """
    gathered = ColumnWarnings()
    with warnings.catch_warnings():
        # This fit trains the missing tokens the warning is about; note_trained_missing records it.
        warnings.simplefilter("ignore", UntrainedMissingWarning)
        warnings.simplefilter("ignore", UnseenCategoryWarning)  # continue_with_categories refuses or grows them
        with gathered.gathering():
            data, y_encoded = estimator._continued_data(X, y)
        if getattr(estimator, "new_categories", "error") == "grow":
            gathered.unseen.clear()  # "no value is a category fit saw": growing is about to learn them
        gathered.warn()
    data = continue_with_categories(estimator, X, data)
    note_trained_missing(estimator.tokenizer_, data)
    return data, y_encoded


def continue_with_categories(estimator, X, data):
    """The tokens to continue training on: ``data``, or ``X`` re-tokenized after growing.

    Parameters
    ----------
    estimator : fitted TabFormerNet
        Its ``new_categories`` (default ``"error"``) decides.
    X : the raw input of the continued fit (or tokens)
    data : dict of ndarray or Dataset
        ``X`` tokenized by the fitted tokenizer.

    Returns
    -------
    data : dict of ndarray or Dataset
        ``data`` itself when nothing is new, else the tokens of ``X`` with the new ids.

    Raises
    ------
    ValueError
        With ``"error"``, if ``data`` holds categories the first fit never saw; with
        ``"grow"``, if they cannot be learned (not a table model, or ``X`` given as tokens).
    """
    if getattr(estimator, "new_categories", "error") != "grow" or not unseen_category_columns(estimator.tokenizer_, data):
        refuse_unseen_categories(estimator.tokenizer_, data)
        return data
    if isinstance(X, (dict, Dataset)):
        raise ValueError(
            "new_categories='grow' needs the raw rows to learn new categories from; X was given as tokens, "
            f"which hold the 'unseen' id ({UNSEEN_ID}) in place of the new values"
        )
    with estimator._seeded():
        grow_for_new_categories(estimator, X)
    return estimator.tokenizer_.transform(X)


def grow_for_new_categories(estimator, X) -> dict:
    """Teach a fitted table estimator the categories of ``X`` it has not seen (tokenizer, embedding, optimizer).

    Parameters
    ----------
    estimator : fitted TabFormerNet with a :class:`~tabformer.tokenizers.TabularTokenizer`
    X : DataFrame or array-like of shape (n_samples, n_features)

    Returns
    -------
    added : dict of str to list
        The new values of each column that got any (``TabularTokenizer.add_categories``).

    Raises
    ------
    ValueError
        If the estimator's tokenizer or embedder is not a table one.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabformer import TabFormerClassifier
    >>> X = pd.DataFrame({"city": ["a", "b"] * 10, "x": range(20)})
    >>> clf = TabFormerClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, [0, 1] * 10)
    >>> grow_for_new_categories(clf, X.assign(city="c"))
    {'city': ['c']}
    """
    tokenizer = estimator.tokenizer_
    members = getattr(estimator.module_, "members", [estimator.module_])  # an ensemble grows every member's embedder
    embedders = [getattr(member, "embedder", None) for member in members]
    if type(tokenizer) is not TabularTokenizer or not all(isinstance(embedder, TabularEmbedder) for embedder in embedders):
        raise ValueError(
            f"new_categories='grow' learns new categories of table inputs (TabularTokenizer); this model's tokenizer "
            f"is {type(tokenizer).__name__}. Refit with warm_start=False, or use new_categories='error'"
        )
    if getattr(estimator.module_, "freeze_embedder", False):
        _refuse_frozen_growth(copy.deepcopy(tokenizer).add_categories(X))  # before the tokenizer changes
    olds = [embedder.category_embedding.weight for embedder in embedders]
    added = tokenizer.add_categories(X)
    for old, embedder in zip(olds, embedders):
        positions = embedder.grow_categories(tokenizer.embedder_spec()["cardinalities"])
        _replace_in_optimizer(estimator.optimizer_, old, embedder.category_embedding.weight, positions)
    return added


def _replace_in_optimizer(optimizer: torch.optim.Optimizer, old, new, positions) -> None:
    """Put ``new`` where ``old`` was in ``optimizer``; per-row state moves to ``positions``, new rows start at 0."""
    for group in optimizer.param_groups:
        for index, param in enumerate(group["params"]):
            if param is old:
                group["params"][index] = new
    state = optimizer.state.pop(old, None)
    if state is None:
        return
    grown = {}
    for key, value in state.items():
        if torch.is_tensor(value) and value.shape == old.shape:
            value_new = value.new_zeros(new.shape)
            value_new[positions] = value
            value = value_new
        grown[key] = value
    optimizer.state[new] = grown


def _table_tokens(tokenizer, data) -> list:
    """``(table tokenizer, its token arrays)`` for each table part of ``tokenizer`` in ``data`` (tokens)."""
    if not isinstance(data, dict):
        return []
    if "cat_ids" in data or "num_missing" in data:
        return [(tokenizer, data)] if hasattr(tokenizer, "categorical_columns_") else []
    parts = []
    for name, table, _ in getattr(tokenizer, "transformers_", None) or []:
        if hasattr(table, "categorical_columns_"):
            prefix = f"{name}/"
            parts.append((table, {key[len(prefix) :]: value for key, value in data.items() if key.startswith(prefix)}))
    return parts


def missing_token_widths(tokenizer) -> dict:
    """The token arrays :func:`note_trained_missing` reads (``cat_ids`` and ``num_missing``, a mixed
    tokenizer's prefixed by its table part's name), each with its number of columns.

    Parameters
    ----------
    tokenizer : fitted tokenizer

    Returns
    -------
    dict of str to int
        Empty for a tokenizer without a table part.
    """
    if hasattr(tokenizer, "categorical_columns_"):
        parts = [("", tokenizer)]
    else:
        parts = [(f"{name}/", table) for name, table, _ in getattr(tokenizer, "transformers_", None) or []]
    return {
        f"{prefix}{key}": len(getattr(table, columns))
        for prefix, table in parts
        if hasattr(table, "categorical_columns_")
        for key, columns in (("cat_ids", "categorical_columns_"), ("num_missing", "numeric_columns_"))
    }


def note_trained_missing(tokenizer, data) -> None:
    """Mark the table columns whose missing token ``data`` (continued-fit tokens) trains.

    So predict stops warning (:class:`~tabformer.tokenizers._columns.UntrainedMissingWarning`)
    about missing values in a column that had none at the first fit but some in a
    continued one. A stream's tokens are noted through
    :class:`~tabformer.estimators._streaming.MissingNote` (in DataLoader workers too).

    Parameters
    ----------
    tokenizer : fitted TabularTokenizer, or a mixed tokenizer (its table parts are updated)
    data : dict of ndarray (tokens) or a dataset (nothing is noted)
    """
    for table, tokens in _table_tokens(tokenizer, data):
        had = getattr(table, "had_missing_", None)
        if had is None:
            continue
        owners = {}
        for j, column in enumerate(table.categorical_columns_):
            if "cat_ids" in tokens and (tokens["cat_ids"][:, j] == MISSING_ID).any():
                owners[column] = True
        parts = part_owners(getattr(table, "datetime_parts_", {}))  # a date's parts ("when.elapsed") are its column's
        for j, column in enumerate(table.numeric_columns_):
            if "num_missing" in tokens and tokens["num_missing"][:, j].any():
                owners[parts.get(column, column)] = True
        had.update({column: True for column in owners if column in had})


def unseen_category_columns(tokenizer, data) -> list:
    """The table columns whose tokens hold the "unseen" id (a category ``fit`` never saw), as the user labels them.

    Parameters
    ----------
    tokenizer : fitted TabularTokenizer, or a mixed tokenizer (its table parts are read)
    data : dict of ndarray (tokens: ``cat_ids``, or ``<segment>/cat_ids`` for mixed input) or a dataset

    Returns
    -------
    columns : list
        Their names, or a DataFrame's non-str labels (``0``, not the ``x0`` the tokenizer names it inside).
        Empty for a dataset (streamed rows are not checked) or when nothing is unseen.
    """
    new = []
    for table, tokens in _table_tokens(tokenizer, data):
        columns, ids, labels = table.categorical_columns_, tokens.get("cat_ids"), getattr(table, "column_labels_", None)
        if ids is not None:
            unseen = np.flatnonzero((ids == UNSEEN_ID).any(axis=0))
            new += [user_label(str(columns[j]), labels) if j < len(columns) else str(j) for j in unseen]
    return new


def refuse_unseen_categories(tokenizer, data) -> None:
    """Raise ``ValueError`` if continued training tokens hold categories the fitted tokenizer never saw.

    Parameters
    ----------
    tokenizer : fitted tokenizer (its ``categorical_columns_``, or its table parts', name the columns)
    data : dict of ndarray (tokens) or a dataset (not checked)
    """
    new = unseen_category_columns(tokenizer, data)
    if not new:
        return
    raise ValueError(
        f"X holds categories the first fit never saw, in column(s) {new}: a continued fit (partial_fit, or fit "
        "with warm_start=True) keeps the fitted tokenizer, whose categories are fixed, so they would be trained "
        "as 'unseen'. Refit with warm_start=False to learn them, set new_categories='grow' (table inputs), or "
        "set those values to missing (None)"
    )
