"""The estimators' repr is scikit-learn's: the class and the settings that differ from its defaults."""

import numpy as np
import pytest

from tabformer import TabFormerClassifier, TabFormerPretrainer, TabFormerRegressor, TabFormerTagger

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread, restored after


def test_repr_names_the_settings_routed_ones_too():
    # skorch's repr was "<class '...TabFormerClassifier'>[uninitialized](module=...)": no setting shown
    clf = TabFormerClassifier(tokenizer="wordpiece", tokenizer__vocab_size=100, lr=1e-3)
    assert repr(clf) == "TabFormerClassifier(lr=0.001, tokenizer='wordpiece', tokenizer__vocab_size=100)"
    assert [repr(cls()) for cls in (TabFormerClassifier, TabFormerRegressor, TabFormerTagger, TabFormerPretrainer)] == [
        "TabFormerClassifier()",
        "TabFormerRegressor()",
        "TabFormerTagger()",
        "TabFormerPretrainer()",
    ]
    assert repr(TabFormerClassifier(classes=np.array([0, 1]))) == "TabFormerClassifier(classes=array([0, 1]))"


def test_a_fitted_estimator_shows_its_settings_not_its_module_tree(pos_neg_table):
    # after fit, a notebook printed the whole module (40 lines for five small members) for clf.fit(X, y)
    X, y = pos_neg_table
    settings = dict(encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, max_epochs=1, verbose=0, random_state=0)
    clf = TabFormerClassifier(**settings).fit(X, y)
    shown = " ".join(repr(clf).split())  # scikit-learn wraps long lines
    assert shown == "TabFormerClassifier(" + ", ".join(f"{k}={v!r}" for k, v in sorted(settings.items())) + ")"
    assert "<table" in clf._repr_html_() or "<div" in clf._repr_html_()  # the notebook's HTML view still renders


def test_an_estimator_inside_a_pipeline_or_search_shows_its_settings_alone():
    # scikit-learn's printer listed all forty parameters: __init__ takes skorch's through **kwargs
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    search = GridSearchCV(TabFormerClassifier(max_epochs=3), {"lr": [1e-3, 1e-2]})
    assert repr(search).startswith("GridSearchCV(estimator=TabFormerClassifier(max_epochs=3),\n")
    pipeline = repr(make_pipeline(StandardScaler(), TabFormerRegressor(lr=0.01)))
    assert "TabFormerRegressor(lr=0.01)" in pipeline and "batch_size" not in pipeline


def test_a_subclass_of_the_users_still_prints():
    class Needs(TabFormerClassifier):
        def __init__(self, width, **kwargs):
            super().__init__(**kwargs)
            self.width = width

    assert repr(Needs(8)).startswith("Needs(")  # every parameter (its __init__ is not declared whole), no error
