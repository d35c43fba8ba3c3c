"""scikit-learn's ``repr`` for the estimators: the class and the settings that differ from its defaults.

skorch's ``repr`` was ``<class '...TabFormerClassifier'>[uninitialized](module=...)`` before ``fit``, hiding
every setting (``lr``, ``tokenizer__vocab_size``), and after it the whole module tree, which a notebook
printed for every ``clf.fit(X, y)`` (40 lines for five small members). The module stays at ``module_``.

scikit-learn's printer (``BaseEstimator.__repr__``, and the one that prints an estimator inside a
``Pipeline`` or ``GridSearchCV``) shows the parameters that differ from the defaults of ``__init__``'s
signature. The estimators take skorch's parameters through ``**kwargs``, so it listed all forty: the
signature is declared whole here, each parameter with a default instance's value.
"""

from __future__ import annotations

import inspect

__all__ = ["declare_parameters"]


def declare_parameters(cls) -> None:
    """Give ``cls.__init__`` the signature of every parameter ``cls()`` has, each with its default value.

    Parameters
    ----------
    cls : type
        An estimator class that defines its own ``__init__`` (a shared one would take another class's
        defaults) and builds with no arguments.
    """
    own = inspect.signature(cls.__init__)
    defaults = cls().get_params(deep=False)
    named = [parameter for parameter in own.parameters.values() if parameter.kind != parameter.VAR_KEYWORD]
    taken = {parameter.name for parameter in named}
    skorchs = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value)
        for name, value in sorted(defaults.items())
        if name not in taken
    ]
    cls.__init__.__signature__ = own.replace(parameters=named + skorchs)
