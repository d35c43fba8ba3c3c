"""Numpydoc docstrings on every public class and function (the redesign issue's rule).

Public means: every class and function named in a module's ``__all__`` (for a module
without ``__all__``, every class and function it defines without a leading underscore),
plus the public methods and properties of those classes, including the ones they inherit
from tabformer classes (``BaseTokenizer.describe_tokens`` counts once, on the class that
defines it). Checks:

1. every module has a module docstring;
2. every public class, function, method and property has a docstring;
3. a class or function whose signature has parameters (``self``, ``cls`` and
   ``**kwargs`` aside) has a numpydoc ``Parameters`` section, except the methods of
   :data:`EXEMPT`, whose contract is their sklearn/skorch/torch base class's;
4. the ``forward`` of every ``nn.Module`` names its shapes (a tuple such as ``(B, T, D)``);
5. every registered tokenizer documents its fitted ``Attributes`` and has ``Examples``.

Names outside this test's owners' files (estimators, ``nn/models.py``, ``hub.py``) that
still fail are listed in :data:`KNOWN_FAILURES` and marked xfail until documented there.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest
from torch import nn

from tabformer.tokenizers import TOKENIZERS

MODULES = [
    "tabformer",
    "tabformer._data",
    "tabformer._validation",
    "tabformer._targets",
    "tabformer.callbacks",
    "tabformer.datasets",
    "tabformer.datasets._files",
    "tabformer.datasets.images",
    "tabformer.datasets.multimodal",
    "tabformer.datasets.tabular",
    "tabformer.datasets.text",
    "tabformer.inspection",
    "tabformer.metrics",
    "tabformer.nn",
    "tabformer.nn.attention",
    "tabformer.nn.embedders",
    "tabformer.nn.embedders.backbone",
    "tabformer.nn.embedders.image",
    "tabformer.nn.embedders.mixed",
    "tabformer.nn.embedders.tabular",
    "tabformer.nn.embedders.text",
    "tabformer.nn.encoder",
    "tabformer.nn.heads",
    "tabformer.nn.positions",
    "tabformer.plot",
    "tabformer.pretraining",
    "tabformer.pretraining.cells",
    "tabformer.pretraining.losses",
    "tabformer.pretraining.mlm",
    "tabformer.pretraining.registry",
    "tabformer.pretraining.simclr",
    "tabformer.pretraining.views",
    "tabformer.tokenizers",
    "tabformer.tokenizers.base",
    "tabformer.tokenizers.detect",
    "tabformer.tokenizers.image",
    "tabformer.tokenizers.mixed",
    "tabformer.tokenizers.registry",
    "tabformer.tokenizers.tabular",
    "tabformer.tokenizers.text",
    # read here, documented by the estimators' owners
    "tabformer.estimators",
    "tabformer.nn.models",
    "tabformer.hub",
]

#: methods that need a docstring but no Parameters section: their contract is the base class's
EXEMPT = {
    "fit": "sklearn's fit(X, y); the class docstring says what X holds",
    "transform": "sklearn's transform(X); the docstring says the output's shapes",
    "partial_fit": "skorch's partial_fit(X, y)",
    "predict": "sklearn's predict(X)",
    "predict_proba": "sklearn's predict_proba(X)",
    "score": "sklearn's score(X, y)",
    "get_params": "sklearn's get_params(deep)",
    "set_params": "sklearn's set_params(**params)",
    "get_feature_names_out": "sklearn's get_feature_names_out(input_features)",
    "forward": "torch's forward; the docstring must name the shapes instead (test_forward_names_shapes)",
    "train": "torch's Module.train(mode)",
    "initialize": "skorch's initialize() of a net or callback",
    "on_train_begin": "skorch callback hook",
    "on_train_end": "skorch callback hook",
    "on_epoch_begin": "skorch callback hook",
    "on_batch_begin": "skorch callback hook",
    "on_batch_end": "skorch callback hook",
    "on_epoch_end": "skorch callback hook",
    "on_grad_computed": "skorch callback hook",
    "get_loss": "skorch's get_loss(y_pred, y_true, X, training)",
    "infer": "skorch's infer(x, **fit_params)",
    "get_iterator": "skorch's get_iterator(dataset, training)",
    "initialize_module": "skorch's initialize_module()",
    "initialize_criterion": "skorch's initialize_criterion()",
    "check_data": "skorch's check_data(X, y)",
    "get_split_datasets": "skorch's get_split_datasets(X, y, **fit_params)",
    "get_default_callbacks": "skorch's get_default_callbacks()",
    "get_params_for": "skorch's get_params_for(prefix)",
    "fit_loop": "skorch's fit_loop(X, y, epochs, **fit_params)",
}

#: names outside this test's owners' files that fail a check (``docstring``: test_has_docstring,
#: ``parameters``: test_parameters_section, ``shapes``: test_forward_names_shapes); xfail, not strict,
#: so each one passes quietly once documented (then drop it from here)
KNOWN_FAILURES: dict[str, set[str]] = {
    "docstring": set(),
    "parameters": set(),
    "shapes": set(),
}
XFAIL_REASON = "being documented in estimators/ by the redesign"

PARAMETERS = re.compile(r"^Parameters\n-{3,}$", re.MULTILINE)
SECTION = "^{}\n-{{3,}}$"
SHAPE = re.compile(r"\((?:\.\.\.|\d*[A-Za-z_][\w']*(?:\*\w+)?)(?:,\s*[^(),]+)+\)")


def _defined_in_tabformer(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("tabformer")


def _public_names(module) -> list[str]:
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module.__name__
    ]


def _collect():
    """``{qualified name: (object, kind, method name or None, owner class or None)}``, each object once."""
    items = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            obj = getattr(module, name)
            if inspect.isfunction(obj) and _defined_in_tabformer(obj):
                items.setdefault(f"{obj.__module__}.{obj.__qualname__}", (obj, "function", None, None))
            elif inspect.isclass(obj) and _defined_in_tabformer(obj):
                items.setdefault(f"{obj.__module__}.{obj.__qualname__}", (obj, "class", None, None))
                for klass in obj.__mro__:  # inherited tabformer methods count, on the class defining them
                    if not _defined_in_tabformer(klass):
                        continue
                    for attr, value in vars(klass).items():
                        if attr.startswith("_"):
                            continue
                        if isinstance(value, property):
                            kind, function = "property", value.fget
                        elif isinstance(value, (staticmethod, classmethod)):
                            kind, function = "method", value.__func__
                        elif inspect.isfunction(value):
                            kind, function = "method", value
                        else:
                            continue
                        items.setdefault(f"{klass.__module__}.{klass.__qualname__}.{attr}", (function, kind, attr, klass))
    return items


ITEMS = _collect()


def _params(obj) -> list[str]:
    """Named parameters of a function's or class's signature (``self``, ``cls``, ``**kwargs`` aside).

    A class whose constructor is inherited from outside tabformer (``nn.Module``'s
    ``*args``, ``BaseEstimator``'s) has none of its own.
    """
    if inspect.isclass(obj):
        init = next(vars(klass)["__init__"] for klass in obj.__mro__ if "__init__" in vars(klass))
        if not _defined_in_tabformer(init):
            return []
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in signature.parameters.values() if p.name not in ("self", "cls") and p.kind is not p.VAR_KEYWORD]


def _doc(obj, kind) -> str:
    raw = vars(obj).get("__doc__") if kind == "class" else obj.__doc__
    return inspect.cleandoc(raw) if raw else ""


def _names(check: str, predicate=lambda item: True):
    """The names ``predicate`` selects, as parameters; known failures of ``check`` marked xfail."""
    xfail = pytest.mark.xfail(reason=XFAIL_REASON, strict=False)
    return [
        pytest.param(name, id=name, marks=[xfail] if name in KNOWN_FAILURES[check] else [])
        for name, item in ITEMS.items()
        if predicate(item)
    ]


def _needs_parameters(item) -> bool:
    obj, kind, method, _ = item
    return kind in ("class", "function", "method") and method not in EXEMPT and bool(_params(obj))


def _is_module_forward(item) -> bool:
    _, _, method, owner = item
    return method == "forward" and owner is not None and issubclass(owner, nn.Module)


@pytest.mark.parametrize("module_name", MODULES)
def test_module_docstring(module_name):
    module = importlib.import_module(module_name)
    assert (module.__doc__ or "").strip(), f"module {module_name} has no docstring"


def test_something_is_checked():
    kinds = {kind for _, kind, _, _ in ITEMS.values()}
    assert len(ITEMS) > 150 and kinds == {"class", "function", "method", "property"}
    assert "tabformer.tokenizers.base.BaseTokenizer.describe_tokens" in ITEMS
    assert "tabformer.nn.encoder.TransformerEncoder.forward" in ITEMS


@pytest.mark.parametrize("name", _names("docstring"))
def test_has_docstring(name):
    obj, kind, method, owner = ITEMS[name]
    doc = _doc(obj, kind)
    if not doc and kind == "property" and method.endswith("_"):
        # A fitted attribute may be documented in the Attributes section of its class instead.
        attributes = [_doc(klass, "class") for klass in owner.__mro__ if _defined_in_tabformer(klass)]
        assert any(re.search(rf"^{re.escape(method)}\b", doc, re.MULTILINE) for doc in attributes), (
            f"fitted attribute {name} has neither a docstring nor an entry in its class's Attributes"
        )
        return
    assert doc, f"{kind} {name} has no docstring"
    assert doc.splitlines()[0].strip(), f"{name}: the docstring does not open with a summary line"


@pytest.mark.parametrize("name", _names("parameters", _needs_parameters))
def test_parameters_section(name):
    obj, kind, _, _ = ITEMS[name]
    doc = _doc(obj, kind)
    assert PARAMETERS.search(doc), (
        f"{name}{inspect.signature(obj)} has parameters {_params(obj)} but no numpydoc Parameters section"
    )


@pytest.mark.parametrize("name", _names("shapes", _is_module_forward))
def test_forward_names_shapes(name):
    obj, kind, _, _ = ITEMS[name]
    doc = _doc(obj, kind)
    assert SHAPE.search(doc), f"{name}: an nn.Module's forward must say its input and output shapes, e.g. (B, T, D)"


@pytest.mark.parametrize(
    "tokenizer", sorted({cls.__name__: cls for cls in TOKENIZERS.values()}.items()), ids=lambda item: item[0]
)
def test_tokenizers_document_attributes_and_examples(tokenizer):
    name, cls = tokenizer
    doc = _doc(cls, "class")
    for section in ("Parameters", "Attributes", "Examples"):
        assert re.search(SECTION.format(section), doc, re.MULTILINE), f"{name} has no {section} section"


def test_exemptions_have_reasons():
    assert all(reason.strip() for reason in EXEMPT.values())


def test_known_failures_are_outside_the_documented_files():
    outside = ("tabformer.estimators.", "tabformer.nn.models.", "tabformer.hub.")
    assert set(KNOWN_FAILURES) == {"docstring", "parameters", "shapes"}
    assert all(name.startswith(outside) for names in KNOWN_FAILURES.values() for name in names)
