import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_table
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.validation import check_is_fitted

from tabformer import PretrainedEncoder, TabFormerClassifier, TabFormerRegressor


def test_fit_predict_with_string_labels(table, tiny):
    X, y = table
    clf = TabFormerClassifier(random_state=0, **tiny).fit(X, y)
    assert list(clf.classes_) == ["no", "yes"]
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(1), 1, atol=1e-5)
    assert set(clf.predict(X)) <= {"no", "yes"}
    assert clf.n_features_in_ == 4 and list(clf.feature_names_in_) == list(X.columns)
    assert 0 <= clf.score(X, y) <= 1


def test_learns_a_real_signal(table):
    X, y = make_table(n=600, seed=1)
    clf = TabFormerClassifier(
        random_state=0, max_epochs=30, verbose=0, encoder__d_model=32, encoder__n_heads=4, encoder__n_layers=1
    ).fit(X, y)
    X_test, y_test = make_table(n=300, seed=2)
    majority = max(np.mean(y_test == "yes"), np.mean(y_test == "no"))
    assert clf.score(X_test, y_test) > majority + 0.1


def test_multiclass_and_numpy_input(tiny):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3)).astype(np.float32)
    y = np.array([0, 1, 2] * 30)
    clf = TabFormerClassifier(**tiny).fit(X, y)
    assert clf.predict_proba(X).shape == (90, 3)
    assert not hasattr(clf, "feature_names_in_") and clf.n_features_in_ == 3


def test_regressor_1d_and_2d_targets(table, tiny):
    X, _ = table
    y = X["income"].to_numpy() / 1000
    reg = TabFormerRegressor(**tiny).fit(X, y)
    pred = reg.predict(X)
    assert pred.shape == (len(X),)
    # Standardised training, original scale on the way out.
    assert abs(np.mean(pred) - np.mean(y)) < 3 * np.std(y)
    Y = np.c_[y, -y]
    assert TabFormerRegressor(**tiny).fit(X, Y).predict(X).shape == (len(X), 2)


def test_random_state_makes_fits_reproducible(table, tiny):
    X, y = table
    a = TabFormerClassifier(random_state=3, **tiny).fit(X, y).predict_proba(X)
    b = TabFormerClassifier(random_state=3, **tiny).fit(X, y).predict_proba(X)
    c = TabFormerClassifier(random_state=4, **tiny).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_clone_gives_an_unfitted_twin(table, tiny):
    X, y = table
    clf = TabFormerClassifier(
        encoder__n_layers=2, tokenizer__numeric_embedding="linear", **{k: v for k, v in tiny.items() if k != "encoder__n_layers"}
    )
    clf.fit(X, y)
    twin = clone(clf)
    assert twin.get_params()["encoder__n_layers"] == 2
    assert twin.get_params()["tokenizer__numeric_embedding"] == "linear"
    with pytest.raises(NotFittedError):
        check_is_fitted(twin)
    with pytest.raises(NotFittedError):
        twin.predict(X)
    # Learned sizes never leak back into parameters.
    assert "tokenizer" in twin.get_params() and twin.tokenizer == "auto"


def test_routed_params_reach_the_parts(table, tiny):
    X, y = table
    clf = TabFormerClassifier(**{**tiny, "encoder__n_layers": 2}, tokenizer__numeric_embedding="linear", head__hidden=8).fit(X, y)
    assert len(clf.module_.encoder.layers) == 2
    assert clf.tokenizer_.numeric_embedding == "linear"
    assert isinstance(clf.module_.head.net[2], torch.nn.Linear) and clf.module_.head.net[2].out_features == 8
    with pytest.raises(ValueError, match="encoder__n_layerz"):
        TabFormerClassifier(encoder__n_layerz=2, verbose=0).fit(X, y)


def test_routed_settings_can_change_after_fit(table, tiny):
    # skorch raised "Something went wrong, please open an issue" for these on a fitted net.
    X, y = table
    clf = TabFormerClassifier(**tiny).fit(X, y)
    before = clf.predict_proba(X)
    sizes = []
    hook = clf.module_.register_forward_hook(lambda module, args, out: sizes.append(len(out)))
    clf.set_params(iterator_valid__batch_size=7)
    after = clf.predict_proba(X)
    hook.remove()
    assert max(sizes) == 7 and np.allclose(before, after, atol=1e-6)
    clf.set_params(encoder__n_layers=2).fit(X, y)  # read at the next fit
    assert len(clf.module_.encoder.layers) == 2


def test_grid_search_over_architecture(table, tiny):
    X, y = table
    tiny.pop("encoder__n_layers")
    tiny.pop("encoder__d_model")
    search = GridSearchCV(
        TabFormerClassifier(**tiny),
        {"encoder__n_layers": [1, 2], "encoder__d_model": [8, 16], "lr": [1e-3]},
        cv=2,
        error_score="raise",
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    assert search.best_estimator_.module_.encoder.d_model == search.best_params_["encoder__d_model"]


def test_pipeline_and_cross_val_score(table, tiny):
    X, y = table
    step = FunctionTransformer(lambda frame: frame.assign(age=frame["age"] / 10), feature_names_out="one-to-one")
    scores = cross_val_score(make_pipeline(step, TabFormerClassifier(**tiny)), X, y, cv=3, error_score="raise")
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))


def test_tokenizer_refit_per_fold_no_leak(tiny):
    X, y = make_table(60)
    first = TabFormerClassifier(**tiny).fit(X.iloc[:30], y[:30])
    second = clone(first).fit(X.iloc[30:].assign(city="madrid"), y[30:])
    assert "madrid" not in list(first.tokenizer_.categories_[0])
    assert list(second.tokenizer_.categories_[0]) == ["madrid"]


def test_pickle_round_trip_predicts_identically(table, tiny):
    X, y = table
    clf = TabFormerClassifier(random_state=0, **tiny).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict_proba(X), restored.predict_proba(X))
    np.testing.assert_array_equal(clf.predict(X), restored.predict(X))


def test_early_stopping_restores_best_weights(table):
    X, y = table
    clf = TabFormerClassifier(
        max_epochs=40,
        patience=2,
        lr=3e-2,
        verbose=0,
        encoder__d_model=16,
        encoder__n_heads=2,
        encoder__n_layers=1,
        random_state=0,
    ).fit(X, y)
    losses = clf.history[:, "valid_loss"]
    assert len(losses) < 40
    best = int(np.argmin(losses))
    assert len(losses) - 1 - best == 2  # stopped exactly `patience` epochs after the best


def test_no_validation_trains_all_epochs(table, tiny):
    X, y = table
    clf = TabFormerClassifier(validation_fraction=None, **tiny).fit(X, y)
    assert len(clf.history) == tiny["max_epochs"]
    assert "valid_loss" not in clf.history[-1]


def test_warm_start_from_encoder_module_and_file(table, tiny, tmp_path):
    X, y = table
    donor = TabFormerClassifier(random_state=0, **tiny).fit(X, y)
    encoder = donor.module_.encoder
    encoder.save(tmp_path / "encoder.pt")
    frozen = TabFormerClassifier(encoder=encoder, freeze_encoder=True, random_state=1, max_epochs=2, verbose=0).fit(X, y)
    for (name, before), after in zip(encoder.state_dict().items(), frozen.module_.encoder.state_dict().values()):
        torch.testing.assert_close(before, after, msg=name)  # carried over and kept frozen
    assert frozen.module_.encoder is not encoder  # the user's module is copied, not trained in place
    from_file = TabFormerClassifier(encoder=str(tmp_path / "encoder.pt"), max_epochs=1, verbose=0).fit(X, y)
    assert from_file.module_.encoder.d_model == 16
    with pytest.raises(ValueError, match="encoder__"):
        TabFormerClassifier(encoder=encoder, encoder__n_layers=3, verbose=0).fit(X, y)


def test_pretrained_encoder_reuses_its_tokenizer(table, tiny):
    X, y = table
    donor = TabFormerClassifier(**tiny).fit(X, y)
    bundle = PretrainedEncoder(donor.tokenizer_, donor.module_.embedder, donor.module_.encoder)
    clf = TabFormerClassifier(encoder=bundle, max_epochs=1, verbose=0).fit(X.iloc[:10], y[:10])
    # A fresh tokenizer fitted on 10 rows would know fewer categories than the donor's.
    assert [list(c) for c in clf.tokenizer_.categories_] == [list(c) for c in donor.tokenizer_.categories_]


def test_explain_returns_tidy_attention(table, tiny):
    X, y = table
    clf = TabFormerClassifier(**tiny).fit(X, y)
    frame = clf.explain(X.iloc[:3])
    assert list(frame.columns) == ["row", "layer", "token", "column", "label", "attention"]
    assert (frame["column"] == frame["label"]).all()  # a table token is its column
    assert set(frame["label"]) == set(X.columns)
    sums = frame.groupby(["row", "layer"])["attention"].sum()
    assert np.all((sums > 0) & (sums <= 1 + 1e-6))


# ----------------------------------------------------------------- bad input
@pytest.fixture
def fitted(table, tiny):
    X, y = table
    return TabFormerClassifier(**tiny).fit(X, y), X, y


def test_predict_with_missing_renamed_or_extra_columns(fitted):
    clf, X, _ = fitted
    with pytest.raises(ValueError, match=r"missing column\(s\) \['income'\]"):
        clf.predict(X.drop(columns="income"))
    with pytest.raises(ValueError, match=r"unexpected column\(s\) \['bonus'\]"):
        clf.predict(X.assign(bonus=1.0))
    with pytest.raises(ValueError, match="'city'.*'town'"):
        clf.predict(X.rename(columns={"city": "town"}))


def test_column_kind_change_is_named(fitted):
    clf, X, _ = fitted
    with pytest.raises(ValueError, match="'income' changed kind"):
        clf.predict(X.assign(income=X["income"].astype(str)))


@pytest.mark.parametrize(
    "make_y, message",
    [
        (lambda y: y[:-1], "X has 120 samples but y has 119"),
        (lambda y: np.full(len(y), "only"), "only 1 class"),
        (lambda y: np.where(np.arange(len(y)) == 5, None, y), "missing label"),
    ],
)
def test_bad_labels(table, tiny, make_y, message):
    X, y = table
    with pytest.raises(ValueError, match=message):
        TabFormerClassifier(**tiny).fit(X, make_y(y))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_in_regression_target(table, tiny, bad):
    X, _ = table
    y = np.arange(len(X), dtype=float)
    y[7] = bad
    with pytest.raises(ValueError, match="row 7"):
        TabFormerRegressor(**tiny).fit(X, y)


def test_empty_X(tiny):
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        TabFormerClassifier(**tiny).fit(pd.DataFrame({"a": pd.Series([], dtype=float)}), [])


def test_unknown_tokenizer_and_encoder_types(table, tiny):
    X, y = table
    with pytest.raises(ValueError, match="unknown tokenizer 'nope'"):
        TabFormerClassifier(tokenizer="nope", **tiny).fit(X, y)
    with pytest.raises(TypeError, match="'encoder' parameter of TabFormerClassifier must be None"):
        TabFormerClassifier(encoder=42, **tiny).fit(X, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.cuda
def test_cuda_fit_predict(table, tiny):
    X, y = table
    clf = TabFormerClassifier(device="cuda", **tiny).fit(X, y)
    assert next(clf.module_.parameters()).is_cuda
    assert clf.predict_proba(X).shape == (len(X), 2)


def test_regressor_has_no_predict_proba(table, tiny):
    X, _ = table
    reg = TabFormerRegressor(**tiny).fit(X, np.arange(len(X), dtype=float))
    assert not hasattr(reg, "predict_proba")


def test_validation_accuracy_reuses_the_validation_pass(table, tiny):
    # skorch's valid_acc replays the validation pass's logits; predict_proba used to run a
    # second forward pass over the validation rows every epoch.
    from skorch.callbacks import Callback

    class Recompute(Callback):  # the accuracy of a fresh forward pass, at each epoch end
        def initialize(self):
            self.scores = []
            return self

        def on_epoch_end(self, net, dataset_valid=None, **kwargs):
            logits = net.collect(dataset_valid, lambda inputs: net.module_(**inputs).float().numpy())
            y = np.array([int(dataset_valid[i][1]) for i in range(len(dataset_valid))])
            self.scores.append(float(np.mean(logits.argmax(1) == y)))

    X, y = table
    recompute = Recompute()
    clf = TabFormerClassifier(ensemble_size=1, callbacks=[("recompute", recompute)], **tiny).fit(X, y)
    assert clf.history[:, "valid_acc"] == pytest.approx(recompute.scores)
    plain, rows = TabFormerClassifier(ensemble_size=1, **tiny).fit(X, y), []
    plain.module_.register_forward_hook(lambda module, args, out: rows.append(len(out)))
    plain.partial_fit(X, y)
    assert sum(rows) == plain.resolved_params_["max_epochs"] * len(X)  # each row once per epoch
