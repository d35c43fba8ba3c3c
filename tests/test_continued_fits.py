"""A fitted estimator trained on with ``partial_fit`` or a warm ``fit`` uses the parameters as they
are now (``set_params`` after a fit) and runs its learning-rate schedule from the peak each call
(both found by a review of scikit-learn habits)."""

import warnings

import numpy as np
import pytest
from conftest import TINY, make_table
from skorch.callbacks import Callback

from tabformer import TabFormerClassifier, TabFormerRegressor


class EpochRates(Callback):
    def initialize(self):
        self.rates = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.rates.append(net.optimizer_.param_groups[0]["lr"])


@pytest.fixture(scope="module")
def table():
    return make_table(n=120)


def _fitted(table, cls=TabFormerClassifier, **params):
    X, y = table
    target = y if cls is TabFormerClassifier else np.linspace(0.0, 1.0, len(y))
    rates = EpochRates()
    model = cls(
        **{**TINY, "max_epochs": 3, "random_state": 0, "validation_fraction": None, **params}, callbacks=[("rates", rates)]
    )
    return model.fit(X, target), X, target, rates


@pytest.mark.parametrize("cls", [TabFormerClassifier, TabFormerRegressor])
def test_set_params_after_a_fit_reaches_the_next_partial_fit_and_warm_fit(table, cls):
    model, X, y, _ = _fitted(table, cls)
    model.set_params(max_epochs=4, batch_size=60)
    model.partial_fit(X, y)
    assert len(model.history_) == 3 + 4 and len(model.history_[-1]["batches"]) == 2  # 120 rows / 60
    assert model.resolved_params_["max_epochs"] == 4 and model.get_params()["max_epochs"] == 4
    model.set_params(warm_start=True, max_epochs=2)
    model.fit(X, y)
    assert len(model.history_) == 3 + 4 + 2


def test_each_partial_fit_runs_the_cosine_from_the_peak_and_a_new_lr_is_that_peak(table):
    model, X, y, rates = _fitted(table)
    first = list(rates.rates)
    assert first[0] == pytest.approx(5e-4) and first[1] < first[0]  # a small table's classifier: half of 1e-3
    model.partial_fit(X, y)
    assert rates.rates[3:] == pytest.approx(first)  # it climbed past the peak before: 0.001, 0.00125, 0.00375
    model.set_params(lr=0.01)
    model.partial_fit(X, y)
    assert rates.rates[6:] == pytest.approx([20 * rate for rate in first])


def test_a_new_patience_and_holdout_after_a_fit_bring_early_stopping(table):
    model, X, y, _ = _fitted(table, lr_schedule=None)
    assert "early_stopping" not in dict(model.callbacks_)
    model.set_params(patience=1, validation_fraction=0.25, max_epochs=30)
    model.partial_fit(X, y)
    assert "early_stopping" in dict(model.callbacks_) and "valid_loss" in model.history_[-1]
    assert len(model.history_) < 3 + 30  # it stopped


def test_classes_declared_up_front_let_batches_lack_some_classes(table):
    X, y = table
    labels = np.array(["a", "b", "c"])[np.arange(len(X)) % 3]
    first = labels != "c"
    model = TabFormerClassifier(**TINY, random_state=0, validation_fraction=None)
    model.partial_fit(X[first], labels[first], classes=["a", "b", "c"])
    assert list(model.classes_) == ["a", "b", "c"] and model.predict_proba(X[:2]).shape == (2, 3)
    model.partial_fit(X[~first], labels[~first])  # refused before: 'c' not seen in fit
    one_class = TabFormerClassifier(**TINY, random_state=0, validation_fraction=None)
    one_class.partial_fit(X[y == "yes"], y[y == "yes"], classes=["no", "yes"])  # a first batch of one class
    assert list(one_class.classes_) == ["no", "yes"]
    built = TabFormerClassifier(**TINY, classes=["a", "b", "c"], validation_fraction=None).fit(X[first], labels[first])
    assert list(built.classes_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"y holds label\(s\) \['c'\] that classes=\['a', 'b'\] does not list"):
        TabFormerClassifier(**TINY, classes=["a", "b"]).fit(X, labels)
    with pytest.raises(ValueError, match=r"classes=\['a', 'b'\] differs from the classes the model was fitted with"):
        model.partial_fit(X[first], labels[first], classes=["a", "b"])


def test_weights_that_leave_one_class_warn(table):
    # A warning, as scikit-learn's classifiers fit such weights: BaggingClassifier's bootstrap counts leave out every
    # row of a rare class in some draws, and a refusal failed the whole ensemble
    from sklearn.ensemble import BaggingClassifier

    X, y = table
    with pytest.warns(UserWarning, match=r"sample_weight leaves only class 'yes' with any weight .* learn that class only"):
        TabFormerClassifier(**TINY).fit(X, y, sample_weight=np.where(y == "yes", 1.0, 0.0))
    rare = np.zeros(len(y), dtype=int)
    rare[[3, 17]] = 1
    bagged = BaggingClassifier(TabFormerClassifier(**TINY, ensemble_size=1), n_estimators=4, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bagged.fit(X, rare).predict_proba(X).shape == (len(y), 2)


def test_components_set_after_a_fit_are_stored_for_the_next_fit(table):
    from tabformer import TabFormerPretrainer

    model, X, y, _ = _fitted(table)
    model.set_params(tokenizer="table", encoder=None)  # skorch raised "Something went wrong" for these
    assert model.get_params()["tokenizer"] == "table"
    texts = ["the cat sat on the mat", "a dog ran in the park", "birds fly high"] * 10
    pretrainer = TabFormerPretrainer(**TINY, tokenizer__vocab_size=60).fit(texts)
    pretrainer.set_params(objective="masked_cells", objective__mask_prob=0.2)
    assert pretrainer.get_params()["objective"] == "masked_cells"
    with pytest.raises(TypeError, match=r"objective='simclr' augments images and needs a fitted PatchTokenizer"):
        TabFormerPretrainer(**TINY, objective="simclr").fit(texts)  # KeyError 'pixels' before


def test_freezing_set_after_a_fit_takes_effect_at_the_next_partial_fit(table):
    import torch

    from tabformer import TabFormerPretrainer

    X, y = table
    encoder = TabFormerPretrainer(**TINY, random_state=0).fit(X).encoder_
    model = TabFormerClassifier(**TINY, encoder=encoder, freeze_encoder=True, lr=0.05, random_state=0).fit(X, y)

    def encoder_weights():
        return {k: v.clone() for k, v in model.module_.encoder.state_dict().items()}

    before = encoder_weights()
    model.set_params(freeze_encoder=False)  # the linear probe, unfrozen for fine-tuning
    model.partial_fit(X, y)
    assert any(not torch.equal(v, before[k]) for k, v in encoder_weights().items())
    before = encoder_weights()
    model.set_params(freeze_encoder=True)
    model.partial_fit(X, y)
    assert all(torch.equal(v, before[k]) for k, v in encoder_weights().items())
    assert model.module_.freeze_encoder and not any(p.requires_grad for p in model.module_.encoder.parameters())


def test_simclr_never_scores_a_batch_of_one_image():
    # It failed after a whole training epoch ("NT-Xent needs at least 2 images per batch").
    from tabformer import TabFormerPretrainer

    images = np.random.default_rng(0).integers(0, 256, (10, 8, 8)).astype(np.uint8)
    simclr = dict(TINY, objective="simclr", tokenizer__patch_size=4, random_state=0)
    with pytest.raises(ValueError, match=r"objective='simclr' needs at least 2 rows in the validation holdout.* leaves 1 there"):
        TabFormerPretrainer(**simclr).fit(images)
    pretrainer = TabFormerPretrainer(**{**simclr, "batch_size": 4}, validation_fraction=None).fit(images)
    pretrainer.set_params(iterator_valid__batch_size=4)
    assert np.isfinite(pretrainer.score(np.concatenate([images, images[:3]])))  # 13 rows: batches of 5, 5, 3


class EpochDraws(Callback):
    """The torch RNG's first draw of each epoch: what the shuffle and dropout of that epoch start from."""

    def initialize(self):
        self.draws = getattr(self, "draws", [])
        return self

    def on_epoch_begin(self, net, **kwargs):
        import torch

        self.draws.append(float(torch.rand(1)))


@pytest.mark.parametrize("how", ["partial_fit", "warm_start"])
def test_each_continued_fit_draws_afresh_and_the_same_calls_draw_the_same(table, how):
    # Seeded by random_state alone, every partial_fit replayed the first call's shuffle and
    # dropout masks: a loop of partial_fit calls trained one epoch's order over and over.
    X, y = table

    def draws():
        probe = EpochDraws()
        clf = TabFormerClassifier(**dict(TINY, max_epochs=1), random_state=0, callbacks=[("draws", probe)])
        clf.fit(X, y)
        for _ in range(2):
            clf.partial_fit(X, y) if how == "partial_fit" else clf.set_params(warm_start=True).fit(X, y)
        return probe.draws

    first = draws()
    assert len(first) == 3 and len(set(first)) == 3, first
    assert draws() == first
