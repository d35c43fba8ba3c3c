"""``ensemble_size``: members trained side by side on folds of the rows, predictions averaged."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TINY, make_table
from skorch.callbacks import Callback, Freezer, GradientNormClipping

from tabformer import TabFormerClassifier, TabFormerRegressor, load
from tabformer.estimators._ensemble import SMALL_TABLE_MEMBERS, auto_ensemble_size
from tabformer.nn.ensemble import FOLD, EnsembleModel
from tabformer.nn.models import TabFormerModel

pytestmark = pytest.mark.small_table_ensemble  # the default five members of a small table, as users get them

FEW = TINY


class _Fixed(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = torch.nn.Parameter(torch.as_tensor(value, dtype=torch.float32))

    def forward(self, x):
        return self.value.expand(len(x), *self.value.shape)


def test_combined_prediction_is_the_members_mean_probability():
    members = [_Fixed([2.0, 0.0, -1.0]), _Fixed([-1.0, 1.0, 0.5]), _Fixed([0.0, 0.0, 3.0])]
    x = torch.zeros(4, 1)
    expected = torch.stack([torch.softmax(m(x), -1) for m in members]).mean(0)
    softmax = EnsembleModel(members, "softmax").eval()
    torch.testing.assert_close(torch.softmax(softmax(x=x), -1), expected)
    sigmoid = EnsembleModel(members, "sigmoid").eval()
    torch.testing.assert_close(torch.sigmoid(sigmoid(x=x)), torch.stack([torch.sigmoid(m(x)) for m in members]).mean(0))
    mean = EnsembleModel(members, "mean").eval()
    torch.testing.assert_close(mean(x=x), torch.stack([m(x) for m in members]).mean(0))


def test_training_mode_stacks_the_members_and_a_fold_picks_each_rows_member():
    members = [_Fixed([float(k), 0.0]) for k in range(3)]
    ensemble = EnsembleModel(members, "softmax")
    assert ensemble(x=torch.zeros(5, 1)).shape == (3, 5, 2)
    ensemble.eval()
    out = ensemble(x=torch.zeros(4, 1), **{FOLD: torch.tensor([2, 0, 1, 2])})
    assert out[:, 0].tolist() == [2.0, 0.0, 1.0, 2.0]  # each row's own member's logits, not the mean


def test_an_ensemble_needs_two_members_and_a_known_combination():
    with pytest.raises(ValueError, match="at least 2 members"):
        EnsembleModel([_Fixed([0.0])], "mean")
    with pytest.raises(ValueError, match="combine must be one of"):
        EnsembleModel([_Fixed([0.0]), _Fixed([1.0])], "median")


def test_auto_resolves_to_five_members_for_a_small_table_from_scratch_only():
    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, **FEW).fit(X, y)
    assert clf.resolved_params_["ensemble_size"] == SMALL_TABLE_MEMBERS and clf.resolved_params_["out_of_fold"]
    assert isinstance(clf.module_, EnsembleModel) and len(clf.module_.members) == SMALL_TABLE_MEMBERS
    assert clf.get_params()["ensemble_size"] == "auto"  # clone resolves afresh
    # Members start from their own random weights.
    first, second = (m.head.state_dict() for m in clf.module_.members[:2])
    assert any(not torch.equal(first[key], second[key]) for key in first)
    # Larger tables, and streamed fits, keep one model.
    assert auto_ensemble_size(clf, clf.tokenizer_, 2048, streamed=False) == 1
    assert auto_ensemble_size(clf, clf.tokenizer_, 500, streamed=True) == 1
    single = TabFormerClassifier(random_state=0, ensemble_size=1, **FEW).fit(X, y)
    assert type(single.module_) is TabFormerModel and single.resolved_params_["ensemble_size"] == 1


def test_predict_proba_averages_the_members_probabilities():
    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, ensemble_size=3, **FEW).fit(X, y)
    members = clf.module_.members
    each = [clf.collect(X, lambda inputs, m=m: torch.softmax(m(**inputs), -1).double().numpy()) for m in members]
    np.testing.assert_allclose(clf.predict_proba(X), np.mean(each, axis=0), atol=1e-5)
    assert not np.allclose(each[0], each[1], atol=1e-3)  # the members differ: averaging does something


def test_each_member_learns_nothing_from_its_own_fold():
    X, y = make_table(n=60)
    clf = TabFormerClassifier(random_state=0, ensemble_size=3, **FEW).fit(X, y)
    tokens = clf.tokenize(X[:8])
    batch = {key: torch.as_tensor(value) for key, value in tokens.items()}
    batch[FOLD] = torch.ones(8, dtype=torch.int64)  # every row in member 1's fold
    clf.module_.train()
    clf.module_.zero_grad()
    y_pred = clf.infer(batch)
    clf.get_loss(y_pred, torch.as_tensor(clf._encode_target(y[:8])), X=batch, training=True).backward()
    grads = [sum(p.grad.abs().sum() for p in m.parameters() if p.grad is not None) for m in clf.module_.members]
    assert grads[1] == 0 and grads[0] > 0 and grads[2] > 0


def test_early_stopping_reads_every_row_out_of_fold():
    X, y = make_table(n=90)
    clf = TabFormerClassifier(random_state=0, ensemble_size=3, **FEW).fit(X, y)
    # No holdout left out of training: validation scores all 90 rows, each by the member that did not train on it.
    assert clf.history_[-1, "batches", -1, "valid_batch_size"] > 0
    assert sum(b["valid_batch_size"] for b in clf.history_[-1, "batches"] if "valid_batch_size" in b) == 90
    assert sum(b["train_batch_size"] for b in clf.history_[-1, "batches"] if "train_batch_size" in b) == 90


def test_too_few_rows_for_the_folds_say_what_to_do():
    X, y = make_table(n=8)
    with pytest.raises(ValueError, match="ensemble_size=5 .* 8 rows are too few"):
        TabFormerClassifier(random_state=0, ensemble_size=5, **FEW).fit(X, y)
    # Without early stopping every member trains on every row.
    clf = TabFormerClassifier(random_state=0, ensemble_size=5, validation_fraction=None, **FEW).fit(X, y)
    assert len(clf.module_.members) == 5 and clf.predict(X).shape == (8,)


def test_auto_keeps_tiny_tables_fitting():
    X, y = make_table(n=9)
    clf = TabFormerClassifier(random_state=0, **FEW).fit(X, y)  # too few rows for 5 folds: one model
    assert clf.resolved_params_["ensemble_size"] == 1


def test_regressor_and_weights_and_save_round_trip(tmp_path):
    X, y = make_table(n=100)
    target = X["income"].rank().to_numpy()
    weights = np.where(np.arange(100) % 2, 1.0, 3.0)
    reg = TabFormerRegressor(random_state=0, **FEW).fit(X.drop(columns="income"), target, sample_weight=weights)
    assert isinstance(reg.module_, EnsembleModel) and reg.module_.combine == "mean"
    predictions = reg.predict(X.drop(columns="income"))
    assert np.isfinite(predictions).all() and predictions.std() > 0
    reg.save(tmp_path / "reg")
    loaded = load(tmp_path / "reg")
    np.testing.assert_allclose(loaded.predict(X.drop(columns="income")), predictions, rtol=1e-6, atol=1e-6)
    assert isinstance(loaded.module_, EnsembleModel)


def test_multilabel_members_average_each_labels_probability():
    X, _ = make_table(n=100)
    Y = np.stack([(X["age"].fillna(40) > 40), X["member"]], axis=1).astype(int)
    clf = TabFormerClassifier(random_state=0, ensemble_size=2, **FEW).fit(X, Y)
    assert clf.module_.combine == "sigmoid"
    each = [clf.collect(X, lambda inputs, m=m: torch.sigmoid(m(**inputs)).double().numpy()) for m in clf.module_.members]
    np.testing.assert_allclose(clf.predict_proba(X), np.mean(each, axis=0), atol=1e-5)


def test_features_side_by_side_and_new_categories_grow_in_every_member():
    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, ensemble_size=2, new_categories="grow", **FEW).fit(X, y)
    assert clf.forward_features(X[:5]).shape == (5, 2 * 16)
    assert set(clf.explain(X[:2])["column"]) >= {"age", "city"}
    before = clf.module_.members[0].embedder.category_embedding.weight.shape[0]
    grown = X.assign(city=np.where(np.arange(100) % 2, "lima", X["city"]))
    clf.partial_fit(grown, y)
    sizes = {m.embedder.category_embedding.weight.shape for m in clf.module_.members}
    assert len(sizes) == 1 and next(iter(sizes))[0] == before + 1  # 'lima' in every member
    assert clf.predict(grown[:4]).shape == (4,)


def test_a_member_whose_training_folds_weigh_nothing_is_refused():
    X, _ = make_table(n=60)
    weights = np.zeros(len(X))
    weights[7] = 1.0  # one weighted row: the member whose fold holds it trains on rows of weight 0
    with pytest.raises(ValueError, match=r"training rows of ensemble member \d \(every fold but its own, 48 rows\)"):
        TabFormerRegressor(**FEW, ensemble_size=5).fit(X, np.linspace(0.0, 1.0, 60), sample_weight=weights)


def test_a_saved_ensemble_warm_starts_from_its_first_member(tmp_path):
    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, ensemble_size=2, **FEW).fit(X, y)
    clf.save(tmp_path / "ensemble")
    warm = TabFormerClassifier.from_pretrained(tmp_path / "ensemble", **FEW)
    first = clf.module_.members[0].encoder.state_dict()
    started = warm._pretrained().encoder.state_dict()
    assert all(torch.equal(first[key], started[key]) for key in first)
    assert warm.fit(X, y).predict(X[:3]).shape == (3,)


def test_freezing_an_ensemble_is_refused():
    X, y = make_table(n=60)
    clf = TabFormerClassifier(random_state=0, ensemble_size=2, **FEW).fit(X, y)
    with pytest.raises(ValueError, match="ensemble_size=1"):
        clf.set_params(freeze_encoder=True)


def test_the_collapse_advice_names_the_out_of_fold_rows():
    from tabformer.estimators._collapse import early_stopping_advice

    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, ensemble_size=5, patience=1, lr=3e-2, **dict(FEW, max_epochs=20)).fit(X, y)
    advice = early_stopping_advice(clf)
    if advice is None:
        pytest.skip("early stopping kept the last epoch: nothing to advise")
    assert "out-of-fold predictions of 100 rows" in advice and "held-out" not in advice


def test_a_collapsed_ensemble_still_warns():
    # Out of fold, each row is answered by another member: five constant members differ, their mean does not.
    from sklearn.exceptions import ConvergenceWarning

    X = pd.DataFrame({"constant": np.ones(100)})
    with pytest.warns(ConvergenceWarning, match="predicts one class"):
        clf = TabFormerClassifier(random_state=0, **TINY).fit(X, np.array(["a", "b"] * 50))
    assert isinstance(clf.module_, EnsembleModel)


def test_an_ensemble_exports_to_onnx_with_its_mean_probability(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from tabformer.export import onnx_inputs

    X, y = make_table(n=100)
    clf = TabFormerClassifier(random_state=0, ensemble_size=3, **TINY).fit(X, y)
    clf.export_onnx(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, onnx_inputs(clf, X[:13]))[0], clf.predict_proba(X[:13]), atol=1e-4)


def test_a_checkpointed_ensemble_refuses_to_resume_on_other_folds(tmp_path):
    # The folds are the ensemble's split: a random_state=None fit draws others, and resuming would leak rows.
    from test_checkpoint import Crash, _data

    from tabformer.callbacks import TrainingCheckpoint

    X, y = _data()

    def make(*extra):
        checkpoint = ("checkpoint", TrainingCheckpoint(tmp_path / "run"))
        return TabFormerClassifier(ensemble_size=3, random_state=None, callbacks=[checkpoint, *extra], **TINY)

    with pytest.raises(RuntimeError):
        make(("crash", Crash(2))).fit(X, y)
    for _ in range(3):  # one draw in 3 could repeat the folds by chance; three in a row cannot (practically)
        try:
            make().fit(X, y)
        except ValueError as error:
            assert "another train/validation split" in str(error)
            return
    pytest.fail("other folds were accepted")


def test_the_memory_check_counts_every_member(monkeypatch):
    from tabformer.estimators import _params

    monkeypatch.setattr(_params, "training_bytes", lambda settings, n_tokens, batch_size: 2.0**30)  # 1 GiB a model
    X, y = make_table(n=60)
    TabFormerClassifier(**FEW, ensemble_size=2, memory_limit=3).fit(X, y)
    with pytest.raises(MemoryError, match=r"training 5 members of an encoder .* about 5\.0 GiB, over the memory_limit of 3\.0"):
        TabFormerClassifier(**FEW, ensemble_size=5, memory_limit=3).fit(X, y)


def test_a_late_fused_ensemble_saves_and_loads(tmp_path):
    X, y = make_table(n=80)
    words = np.array(["good", "bad", "film", "plot", "the", "was", "very", "dull", "fine", "cast"])
    X = X.assign(note=[" ".join(row) for row in np.random.default_rng(0).choice(words, (80, 6))])
    clf = TabFormerClassifier(ensemble_size=2, fusion="late", random_state=0, **FEW).fit(X, y)
    assert len(clf.module_.encoders) == 2 * 2  # a table and a text encoder per member
    clf.save(tmp_path / "late")  # raised: a late-fused member has no `encoder`
    np.testing.assert_allclose(load(tmp_path / "late").predict_proba(X), clf.predict_proba(X), atol=1e-6)


def test_partial_fit_reads_a_chunk_as_one_model_and_a_short_chunk_continues_an_ensemble():
    X, y = make_table(n=120)
    streamed = TabFormerClassifier(random_state=0, **FEW).partial_fit(X[:100], y[:100], classes=["no", "yes"])
    assert streamed.resolved_params_["ensemble_size"] == 1  # a chunk of a stream, not the table
    clf = TabFormerClassifier(random_state=0, **FEW).fit(X[:100], y[:100])
    assert clf.resolved_params_["ensemble_size"] == SMALL_TABLE_MEMBERS
    epochs = len(clf.history)
    clf.partial_fit(X[100:107], y[100:107])  # 7 rows: too few for five folds, refused before
    assert len(clf.history) == epochs + FEW["max_epochs"] and np.isfinite(clf.history[-1, "valid_loss"])


def test_a_poisson_ensemble_averages_the_members_counts_not_their_log_rates():
    X, _ = make_table(n=100)
    counts = np.random.default_rng(0).poisson(np.exp(1 + (X["city"] == "rome")), 100).astype(float)
    reg = TabFormerRegressor(
        ensemble_size=3, criterion=torch.nn.PoissonNLLLoss, standardize_target=False, random_state=0, **FEW
    ).fit(X, counts)
    batch = {key: torch.as_tensor(value) for key, value in reg.tokenize(X).items()}
    with torch.no_grad():
        rates = torch.stack([member.eval()(**batch).exp() for member in reg.module_.members]).mean(0)
    np.testing.assert_allclose(reg.predict(X), rates.squeeze(-1).double().numpy(), rtol=1e-5)


def test_folds_are_stratified_whatever_the_holdout_fraction():
    X, _ = make_table(n=100)
    y = np.repeat(np.arange(20), 5)
    for fraction in (0.1, 0.3):
        clf = TabFormerClassifier(ensemble_size=5, validation_fraction=fraction, random_state=0, **FEW).fit(X, y)
        folds = clf._folds(len(y), clf._encode_target(y))
        assert all(sorted(y[folds == fold]) == list(range(20)) for fold in range(5))  # one row of each class a fold


@pytest.mark.parametrize("random_state", [None, np.random.RandomState(0)])
def test_a_continued_fit_keeps_the_folds_of_the_fit(random_state):
    X, y = make_table(n=100)
    clf = TabFormerClassifier(ensemble_size=3, random_state=random_state, **FEW).fit(X, y)
    encoded = clf._encode_target(y)
    before = clf._folds(len(y), encoded)
    clf.partial_fit(X, y)  # drew new folds before: most rows were then scored by a member that had trained on them
    np.testing.assert_array_equal(clf._folds(len(y), encoded), before)
    again = TabFormerClassifier(ensemble_size=3, random_state=random_state, **FEW).fit(X, y)
    assert not np.array_equal(again._folds(len(y), encoded), before)  # a new fit draws new folds


def test_parameter_patterns_keep_auto_to_one_model_and_a_pattern_naming_nothing_warns():
    # A review: ensemble_size="auto" resolved to 5 on a small table, renaming every parameter members.<k>.encoder...,
    # so Freezer("encoder.*") froze 0 of 135 parameters and optimizer__param_groups matched nothing, silently.
    X, y = make_table(n=100)
    settings = dict(FEW, max_epochs=1, random_state=0)
    fitted = []
    for given in ({"callbacks": [Freezer("encoder.*")]}, {"optimizer__param_groups": [("encoder.*", {"lr": 0.0})]}):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*matches none of the")
            fitted.append(TabFormerClassifier(**given, **settings).fit(X, y))
        assert fitted[-1].resolved_params_["ensemble_size"] == 1 and type(fitted[-1].module_) is TabFormerModel
    frozen, grouped = fitted
    assert not any(p.requires_grad for n, p in frozen.module_.named_parameters() if n.startswith("encoder."))
    assert grouped.optimizer_.param_groups[0]["lr"] == 0.0 and len(grouped.optimizer_.param_groups) == 2
    assert TabFormerClassifier(**settings).fit(X, y).resolved_params_["ensemble_size"] == SMALL_TABLE_MEMBERS
    # an explicit ensemble, or a pattern naming nothing, is named with the parameters' actual names
    clf = TabFormerClassifier(ensemble_size=2, callbacks=[("freeze", Freezer("encoder.*"))], **settings)
    with pytest.warns(UserWarning, match=r"callback 'freeze' \(Freezer\): the pattern 'encoder\.\*' matches none.*"
                      r"2 ensemble members.*'members\.0\.embedder"):  # fmt: skip
        clf.fit(X, y)
    clf = TabFormerClassifier(ensemble_size=1, optimizer__param_groups=[("encodr.*", {"lr": 0.0})], **settings)
    with pytest.warns(UserWarning, match=r"optimizer__param_groups: the pattern 'encodr\.\*' matches none.*'embedder\."):
        clf.fit(X, y)


class _MemberNorms(Callback):
    """Each member's own-loss gradient norm at every step: its gradient, times the members (the loss is their mean)."""

    def initialize(self):
        self.norms = []
        return self

    def on_grad_computed(self, net, named_parameters, **kwargs):
        members = net.module_.members if isinstance(net.module_, EnsembleModel) else [net.module_]
        squares = [sum(float(p.grad.norm()) ** 2 for p in m.parameters() if p.grad is not None) for m in members]
        self.norms.append([len(members) * s**0.5 for s in squares])


@pytest.mark.parametrize("members", [1, 3])
def test_gradient_norm_clipping_clips_each_member_as_a_model_alone(members):
    # skorch's clipped all members' gradients together, each 1/ensemble_size of its own loss's (the loss is their mean):
    # members went unclipped well past max_norm, where one model alone was clipped to it.
    X, y = make_table(60)
    before, after = _MemberNorms(), _MemberNorms()
    callbacks = [("before", before), ("clip", GradientNormClipping(0.05)), ("after", after)]
    TabFormerClassifier(**{**FEW, "max_epochs": 1}, random_state=0, ensemble_size=members, callbacks=callbacks).fit(X, y)
    assert np.min(before.norms) > 0.05  # every member's gradient exceeds the bound: each is clipped to it
    assert np.allclose(after.norms, 0.05, atol=1e-4)
    loose, untouched = _MemberNorms(), _MemberNorms()
    callbacks = [("before", loose), ("clip", GradientNormClipping(1e6)), ("after", untouched)]
    TabFormerClassifier(**{**FEW, "max_epochs": 1}, random_state=0, ensemble_size=members, callbacks=callbacks).fit(X, y)
    assert np.allclose(untouched.norms, loose.norms)
