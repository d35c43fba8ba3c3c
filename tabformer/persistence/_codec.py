"""Parameters and fitted state as JSON, no pickle (see :mod:`tabformer.persistence._format`).

Values become JSON as themselves (None, bool, int, finite float, str, list, dict with
str keys) or as tagged objects ``{"__type__": ..., ...}``: non-finite floats, numpy
scalars and arrays, tuples, other dicts, pandas indexes, tensors, devices, classes and
functions (by name) and objects rebuilt from their constructor arguments (sklearn
estimators with their fitted attributes, skorch callbacks). Numeric arrays of more than
:data:`INLINE_SIZE` values go to ``arrays.safetensors`` instead of the JSON.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
import inspect
import math

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from skorch.callbacks import ParamMapper

from ._files import Reader, Writer
from ._format import ALLOWED_FUNCTIONS, ARRAYS_FILE, CONFIG_FILE, PersistenceError, qualified_name, resolve

__all__ = ["encode", "decode", "fitted_attributes", "set_fitted", "INLINE_SIZE"]

#: numeric arrays with more values than this are stored in ARRAYS_FILE, not in the JSON
INLINE_SIZE = 64


def _tagged(kind: str, **fields) -> dict:
    return {"__type__": kind, **fields}


def _init_arguments(obj, where: str) -> dict:
    """The constructor arguments of ``obj``: ``get_params(deep=False)``, or attributes of the same names."""
    if hasattr(obj, "get_params"):  # skorch callbacks list their private attributes too
        arguments = {key: value for key, value in obj.get_params(deep=False).items() if not key.startswith("_")}
        return _param_mapper_arguments(obj, arguments, where) if isinstance(obj, ParamMapper) else arguments
    arguments = {}
    for name, parameter in inspect.signature(type(obj)).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if not hasattr(obj, name):
            raise PersistenceError(
                f"{where} = {obj!r} cannot be saved: its constructor argument {name!r} is not kept as an attribute"
            )
        arguments[name] = getattr(obj, name)
    return arguments


def _epoch_of(at):
    """The int epoch a ``ParamMapper``'s ``at`` was given as, where skorch's ``initialize`` wrapped it; else ``at``."""
    method = getattr(getattr(at, "func", None), "__func__", None)
    if not (isinstance(at, functools.partial) and method is ParamMapper._epoch_at):
        return at
    epoch = at.keywords.get("epoch")
    if at.args or set(at.keywords) != {"epoch"} or not isinstance(epoch, int) or isinstance(epoch, bool):
        return at
    return epoch


def _param_mapper_arguments(mapper, arguments: dict, where: str) -> dict:
    """A ``ParamMapper``'s (``Freezer``, ``Unfreezer``, ``Initializer``) arguments as given, undoing ``initialize``.

    skorch's ``initialize`` replaces an int ``at`` with ``partial(self._epoch_at, epoch=at)`` and ``schedule=None``
    with the bound ``self._default_schedule``: neither can be written by name, and both mean what the int and None
    say (``_epoch_at`` reads only the net's history; ``_default_schedule`` only ``at`` and ``fn``). ``clone`` copies
    the mapper they are bound to, so a copy's are recognised too.
    """
    arguments["at"] = _epoch_of(arguments.get("at"))
    schedule = arguments.get("schedule")
    if inspect.ismethod(schedule) and schedule.__func__ is ParamMapper._default_schedule:
        owner = schedule.__self__
        if owner is not mapper and (owner.fn is not mapper.fn or _epoch_of(owner.at) != arguments["at"]):
            raise PersistenceError(
                f"{where}['schedule'] = {schedule!r} cannot be saved: it is the schedule of another "
                f"{type(owner).__name__}, with another fn or at; pass schedule=None"
            )
        arguments["schedule"] = None
    return arguments


def fitted_attributes(obj) -> dict:
    """``obj``'s fitted state, by scikit-learn's convention: public attributes ending in ``_``."""
    return {k: v for k, v in vars(obj).items() if k.endswith("_") and not k.startswith("_")}


def set_fitted(instance, fitted: dict, where: str, reader: Reader) -> None:
    """Set the fitted attributes a config lists on ``instance``, after checking every name is one.

    Only names :func:`fitted_attributes` writes are set back: ending in ``_``, not starting with
    ``_``, neither a constructor parameter nor anything the class defines (a method, a property, a
    class attribute). A config that names another (``torch_load_kwargs``, ``predict_proba``) is
    refused: it would get round the checks on parameters or replace the class's code.

    Parameters
    ----------
    instance : object
        The estimator, tokenizer or sklearn object built from its saved parameters.
    fitted : dict
        Its decoded fitted attributes, by name.
    where : str
        Where they are in the config, for the error message.
    reader : Reader
        The folder being read (its config.json is named in the error).

    Raises
    ------
    PersistenceError naming the attribute and the config file.
    """
    cls = type(instance)
    parameters = set(instance.get_params(deep=False)) if hasattr(instance, "get_params") else set()
    try:
        parameters |= set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):  # a class without a readable signature: get_params names them
        pass
    for name in fitted:
        plain = isinstance(name, str) and name.isidentifier() and name.endswith("_") and not name.startswith("_")
        if plain and name not in parameters and not hasattr(cls, name):
            continue
        why = "a parameter or something its class defines" if plain else "not a fitted attribute's name (public, ending in '_')"
        raise PersistenceError(
            f"{reader.folder / CONFIG_FILE}: {where} lists {name!r} among {cls.__name__}'s fitted attributes, but it is "
            f"{why}; tabformer never writes it there, so the folder was not loaded (was the file edited?)"
        )
    for name, value in fitted.items():
        setattr(instance, name, value)


def _encode_array(array: np.ndarray, where: str, writer: Writer):
    shape = list(array.shape)
    if array.dtype == object:
        return _tagged(
            "ndarray", dtype="object", shape=shape, data=[encode(v, f"{where}[{i}]", writer) for i, v in enumerate(array.ravel())]
        )
    if array.dtype.kind in "US":
        return _tagged("ndarray", dtype=array.dtype.str, shape=shape, data=array.ravel().tolist())
    if array.dtype.kind not in "biuf":
        raise PersistenceError(f"{where} cannot be saved: arrays of dtype {array.dtype} are not supported")
    finite = array.dtype.kind != "f" or bool(np.isfinite(array).all())
    if array.size <= INLINE_SIZE and finite:
        return _tagged("ndarray", dtype=array.dtype.name, shape=shape, data=array.ravel().tolist())
    return _tagged("ndarray", dtype=array.dtype.name, shape=shape, file=ARRAYS_FILE, key=writer.array(where, array))


def _encode_value(value, where: str, writer: Writer):
    """Values a category may hold that JSON has no type for (``pd.cut`` bins, dates, decimals, bytes), or None."""
    if isinstance(value, datetime.datetime):  # pd.Timestamp too; before date, its base class
        stamp = pd.Timestamp(value)
        return _tagged("timestamp", value=stamp.isoformat(), tz=None if stamp.tz is None else str(stamp.tz))
    if isinstance(value, datetime.date):
        return _tagged("date", value=value.isoformat())
    if isinstance(value, datetime.timedelta):  # pd.Timedelta too
        return _tagged("timedelta", nanoseconds=int(pd.Timedelta(value).value))
    if isinstance(value, decimal.Decimal):
        return _tagged("decimal", value=str(value))
    if isinstance(value, pd.Period):  # a column fit reads as categories (what its error for a period dtype advises)
        return _tagged("period", value=str(value), freq=value.freqstr)
    if isinstance(value, pd.Interval):
        ends = [encode(value.left, where, writer), encode(value.right, where, writer)]
        return _tagged("interval", ends=ends, closed=value.closed)
    if isinstance(value, bytes):
        return _tagged("bytes", base64=base64.b64encode(value).decode("ascii"))
    return None


def _decode_value(obj, where: str, reader: Reader):
    kind = obj["__type__"]
    if kind == "timestamp":
        stamp = pd.Timestamp(obj["value"])
        try:  # the zone's name, where it is one (the ISO text keeps only its offset)
            return stamp.tz_convert(obj["tz"]) if obj["tz"] else stamp
        except (ValueError, TypeError, KeyError):
            return stamp
    if kind == "date":
        return datetime.date.fromisoformat(obj["value"])
    if kind == "timedelta":
        return pd.Timedelta(obj["nanoseconds"], unit="ns")
    if kind == "decimal":
        return decimal.Decimal(obj["value"])
    if kind == "period":
        return pd.Period(obj["value"], freq=obj["freq"])
    if kind == "interval":
        left, right = (decode(end, where, reader) for end in obj["ends"])
        return pd.Interval(left, right, closed=obj["closed"])
    return base64.b64decode(obj["base64"])


#: the tags of :func:`_encode_value`
VALUE_KINDS = frozenset({"timestamp", "date", "timedelta", "decimal", "interval", "bytes", "period"})


def encode(value, where: str, writer: Writer, hooks=()):
    """``value`` as JSON; ``hooks`` are ``fn(value, where) -> JSON or None`` tried first for objects.

    Raises
    ------
    PersistenceError naming ``where`` for anything that cannot be written without pickle.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, np.generic):
        return value
    if isinstance(value, float) and not isinstance(value, np.generic):
        return value if math.isfinite(value) else _tagged("float", value=repr(value))
    if isinstance(value, np.generic):
        if not isinstance(value, (np.bool_, np.integer, np.floating)):
            raise PersistenceError(f"{where} = {value!r} cannot be saved: numpy {value.dtype} scalars are not supported")
        return _tagged("scalar", dtype=value.dtype.name, value=encode(value.item(), where, writer))
    if isinstance(value, np.ndarray):
        return _encode_array(value, where, writer)
    if isinstance(value, torch.Tensor):
        return _tagged("tensor", array=_encode_array(value.detach().cpu().numpy(), where, writer))
    if isinstance(value, torch.device):
        return _tagged("device", value=str(value))
    if isinstance(value, list):
        return [encode(v, f"{where}[{i}]", writer, hooks) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return _tagged("tuple", items=[encode(v, f"{where}[{i}]", writer, hooks) for i, v in enumerate(value)])
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and "__type__" not in value:
            return {k: encode(v, f"{where}[{k!r}]", writer, hooks) for k, v in value.items()}
        return _tagged(
            "dict", items=[[encode(k, where, writer), encode(v, f"{where}[{k!r}]", writer, hooks)] for k, v in value.items()]
        )
    if isinstance(value, pd.Index):
        values = [encode(v, f"{where}[{i}]", writer) for i, v in enumerate(value.tolist())]
        return _tagged("index", dtype=str(value.dtype), values=values, name=encode(value.name, where, writer))
    value_state = _encode_value(value, where, writer)
    if value_state is not None:
        return value_state
    if isinstance(value, type):
        return _tagged("class", name=qualified_name(value, where))
    for hook in hooks:
        encoded = hook(value, where)
        if encoded is not None:
            return encoded
    if inspect.ismethod(value) or isinstance(value, functools.partial):
        raise PersistenceError(
            f"{where} = {value!r} cannot be saved: a {type(value).__name__} cannot be written as JSON. "
            "Use a class from tabformer, torch or skorch, or pickle the estimator instead"
        )
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        name = qualified_name(value, where)
        if not (name.startswith("tabformer") or name in ALLOWED_FUNCTIONS):
            raise PersistenceError(
                f"{where} = {value!r} cannot be saved: functions outside tabformer cannot be written as JSON "
                "(classes from tabformer, torch.nn, torch.optim, torch.utils.data, skorch and sklearn.preprocessing can). "
                "Pickle the estimator instead if you need it"
            )
        return _tagged("function", name=name)
    if isinstance(value, (pd.DataFrame, pd.Series, torch.nn.Module)):
        raise PersistenceError(f"{where} cannot be saved: a {type(value).__name__} is not a parameter value tabformer can write")
    name = qualified_name(type(value), where)
    arguments = encode(_init_arguments(value, where), where, writer, hooks)
    fitted = fitted_attributes(value) if isinstance(value, BaseEstimator) else {}
    return _tagged("object", cls=name, params=arguments, fitted=encode(fitted, where, writer, hooks))


def _decode_array(obj: dict, where: str, reader: Reader) -> np.ndarray:
    shape = tuple(obj["shape"])
    if obj["dtype"] == "object":
        array = np.empty(len(obj["data"]), dtype=object)
        array[:] = [decode(v, where, reader) for v in obj["data"]] if obj["data"] else []
        return array.reshape(shape)
    if "file" in obj:
        array = reader.array(obj["key"])
        if array.shape != shape or array.dtype != np.dtype(obj["dtype"]):
            raise PersistenceError(
                f"{where}: {ARRAYS_FILE}[{obj['key']!r}] is {array.dtype}{list(array.shape)}, "
                f"config.json says {obj['dtype']}{list(shape)}"
            )
        return array.copy()
    return np.asarray(obj["data"], dtype=np.dtype(obj["dtype"])).reshape(shape)


def decode(obj, where: str, reader: Reader, hooks=None):
    """The inverse of :func:`encode`; ``hooks`` maps extra ``__type__`` tags to ``fn(obj, where)``."""
    if isinstance(obj, list):
        return [decode(v, f"{where}[{i}]", reader, hooks) for i, v in enumerate(obj)]
    if not isinstance(obj, dict):
        return obj
    kind = obj.get("__type__")
    if kind is None:
        return {k: decode(v, f"{where}[{k!r}]", reader, hooks) for k, v in obj.items()}
    if hooks and kind in hooks:
        return hooks[kind](obj, where)
    if kind in VALUE_KINDS:
        return _decode_value(obj, where, reader)
    if kind == "float":
        return float(obj["value"])
    if kind == "scalar":
        return np.dtype(obj["dtype"]).type(obj["value"])
    if kind == "ndarray":
        return _decode_array(obj, where, reader)
    if kind == "tensor":
        return torch.from_numpy(_decode_array(obj["array"], where, reader))
    if kind == "device":
        return torch.device(obj["value"])
    if kind == "tuple":
        return tuple(decode(v, f"{where}[{i}]", reader, hooks) for i, v in enumerate(obj["items"]))
    if kind == "dict":
        return {decode(k, where, reader, hooks): decode(v, where, reader, hooks) for k, v in obj["items"]}
    if kind == "index":
        values = [decode(v, where, reader) for v in obj["values"]]
        dtype = obj["dtype"]
        if dtype == "object":
            return pd.Index(values, dtype=object, tupleize_cols=False, name=decode(obj["name"], where, reader))
        return pd.Index(values, dtype=dtype, name=decode(obj["name"], where, reader))
    if kind == "class":
        return resolve(obj["name"], where, reader.trusted)
    if kind == "function":
        return resolve(obj["name"], where, reader.trusted, kind="function")
    if kind == "object":
        cls = resolve(obj["cls"], where, reader.trusted)
        instance = cls(**decode(obj["params"], where, reader, hooks))
        set_fitted(instance, decode(obj["fitted"], where, reader, hooks), where, reader)
        return instance
    raise PersistenceError(f"{where}: unknown value type {kind!r} in config.json (written by a newer tabformer?)")
