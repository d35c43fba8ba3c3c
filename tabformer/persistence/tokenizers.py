"""Fitted tokenizers as JSON plus their own files, rebuilt without pickle.

A tokenizer's state is its class, its parameters (``get_params(deep=False)``) and its
fitted attributes (scikit-learn's convention: public attributes ending in ``_``), all
encoded by :func:`~tabformer.persistence._format.encode`, so a tokenizer registered by a
user round-trips without code here. A few built-in attributes get files of their own,
readable without tabformer:

- :class:`~tabformer.tokenizers.WordPieceTokenizer`: ``tokenizer.json`` (the Hugging Face
  ``tokenizers`` model, exact: it is what ``tokenizer_json_`` holds) and ``vocab.txt``
  (one token per line in id order, as BERT ships it; ``WordPieceTokenizer(vocab_file=folder)``
  reads it);
- :class:`~tabformer.tokenizers.TabularTokenizer`: ``categories.json`` (each categorical
  column's categories in id order; its fitted quantile or standard scaler is stored as
  arrays);
- :class:`~tabformer.tokenizers.MixedTokenizer`: each fitted sub-tokenizer's files in a
  subfolder named after it (``text/vocab.txt``, ``table/categories.json``).

A tokenizer that is a *parameter* (a template such as ``MixedTokenizer(text=...)``, or an
estimator's ``tokenizer=WordPieceTokenizer(...)``) is saved unfitted, as ``clone`` would
give it to ``fit``.
"""

from __future__ import annotations

from ..tokenizers import BaseTokenizer, MixedTokenizer, TabularTokenizer, WordPieceTokenizer
from ._codec import decode, encode, fitted_attributes, set_fitted
from ._files import Reader, Writer
from ._format import PersistenceError, qualified_name, resolve

__all__ = ["tokenizer_to_json", "tokenizer_from_json", "register_tokenizer_files"]

#: tokenizer class -> (save, load); ``save(tokenizer, fitted, writer, where)`` pops the
#: attributes it stores itself from ``fitted`` and returns JSON describing them;
#: ``load(tokenizer, special, reader, where)`` sets them back.
_FILES: dict = {}


def register_tokenizer_files(cls, save, load) -> None:
    """Give tokenizers of class ``cls`` (and subclasses) files of their own; see :data:`_FILES`."""
    _FILES[cls] = (save, load)


def _handler(cls):
    for base in cls.__mro__:  # the most derived class with a handler
        if base in _FILES:
            return _FILES[base]
    return None


def _param_hook(writer: Writer):
    def hook(value, where):
        if isinstance(value, BaseTokenizer):
            return tokenizer_to_json(value, writer, where, fitted=False)
        return None

    return (hook,)


def tokenizer_to_json(tokenizer, writer: Writer, where: str = "tokenizer_", fitted: bool = True) -> dict:
    """The JSON state of ``tokenizer``; its files are written through ``writer``.

    Parameters
    ----------
    tokenizer : BaseTokenizer
    writer : Writer
        Where its files go (a subfolder writer for sub-tokenizers).
    where : str
        Its name in error messages.
    fitted : bool, default=True
        Also store the fitted attributes (``False``: parameters only).
    """
    state = {
        "__type__": "tokenizer",
        "class": qualified_name(type(tokenizer), where),
        "params": encode(tokenizer.get_params(deep=False), f"{where}.params", writer, _param_hook(writer)),
    }
    if fitted:
        attributes = fitted_attributes(tokenizer)
        handler = _handler(type(tokenizer))
        state["special"] = handler[0](tokenizer, attributes, writer, where) if handler else {}
        state["fitted"] = encode(attributes, where, writer, _param_hook(writer))
    return state


def tokenizer_from_json(state: dict, reader: Reader, where: str = "tokenizer_"):
    """Rebuild a tokenizer from :func:`tokenizer_to_json`'s state; its files come from ``reader``."""
    if not isinstance(state, dict) or state.get("__type__") != "tokenizer":
        raise PersistenceError(f"{where}: config.json holds no tokenizer state here")
    cls = resolve(state["class"], where, reader.trusted)
    if not issubclass(cls, BaseTokenizer):
        raise PersistenceError(f"{where}: {cls.__name__} is not a tabformer tokenizer")
    hooks = {"tokenizer": lambda obj, w: tokenizer_from_json(obj, reader, w)}
    tokenizer = cls(**decode(state["params"], f"{where}.params", reader, hooks))
    if "fitted" in state:
        set_fitted(tokenizer, decode(state["fitted"], where, reader, hooks), where, reader)
        handler = _handler(cls)
        if handler:
            handler[1](tokenizer, state.get("special", {}), reader, where)
    return tokenizer


# ----------------------------------------------------------------------------- WordPiece
def _save_wordpiece(tokenizer, fitted, writer, where):
    tokens = tokenizer.convert_ids_to_tokens(range(tokenizer.vocab_size_))
    vocabulary = writer.text("vocab.txt", "".join(token + "\n" for token in tokens))
    return {"tokenizer_json_": writer.text("tokenizer.json", fitted.pop("tokenizer_json_")), "vocabulary": vocabulary}


def _load_wordpiece(tokenizer, special, reader, where):
    tokenizer.tokenizer_json_ = reader.text(special["tokenizer_json_"])
    try:
        size = tokenizer._backend().get_vocab_size()
    except Exception as error:  # the tokenizers library raises its own exception type
        raise PersistenceError(f"{reader.path(special['tokenizer_json_'])} is not a tokenizers JSON file ({error})") from None
    if size != tokenizer.vocab_size_:
        raise PersistenceError(
            f"{reader.path(special['tokenizer_json_'])} holds {size} tokens, config.json says vocab_size_={tokenizer.vocab_size_}"
        )


# ----------------------------------------------------------------------------- table
def _save_tabular(tokenizer, fitted, writer, where):
    columns = []
    for column, categories in zip(tokenizer.categorical_columns_, fitted.pop("categories_")):
        encoded = encode(categories, f"{where}.categories_[{column!r}]", writer)
        columns.append({"column": encode(column, where, writer), "dtype": encoded["dtype"], "categories": encoded["values"]})
    return {"categories_": writer.json("categories.json", {"columns": columns})}


def _load_tabular(tokenizer, special, reader, where):
    table = reader.json(special["categories_"])
    names = [decode(entry["column"], where, reader) for entry in table["columns"]]
    if names != list(tokenizer.categorical_columns_):
        raise PersistenceError(
            f"{reader.path(special['categories_'])} lists columns {names}, config.json has categorical columns "
            f"{list(tokenizer.categorical_columns_)}"
        )
    tokenizer.categories_ = [
        decode({"__type__": "index", "dtype": entry["dtype"], "values": entry["categories"], "name": None}, where, reader)
        for entry in table["columns"]
    ]


# ----------------------------------------------------------------------------- mixed
def _save_mixed(tokenizer, fitted, writer, where):
    transformers = []
    for name, sub, columns in fitted.pop("transformers_"):
        state = tokenizer_to_json(sub, writer.sub(f"{name}/"), f"{where}.transformers_[{name!r}]")
        transformers.append([name, state, encode(columns, where, writer)])
    return {"transformers_": transformers}


def _load_mixed(tokenizer, special, reader, where):
    tokenizer.transformers_ = [
        (name, tokenizer_from_json(state, reader, f"{where}.transformers_[{name!r}]"), decode(columns, where, reader))
        for name, state, columns in special["transformers_"]
    ]


register_tokenizer_files(WordPieceTokenizer, _save_wordpiece, _load_wordpiece)
register_tokenizer_files(TabularTokenizer, _save_tabular, _load_tabular)
register_tokenizer_files(MixedTokenizer, _save_mixed, _load_mixed)
