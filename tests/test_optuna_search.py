"""Optuna with skorch's pruning callback (optuna-integration) on a tabformer estimator: examples/optuna_search.py."""

import importlib.util
import os

import optuna
from conftest import make_table

HERE = os.path.dirname(__file__)


def load_example():
    spec = importlib.util.spec_from_file_location("optuna_search", os.path.join(HERE, "..", "examples", "optuna_search.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


class PruneLaterTrials(optuna.pruners.BasePruner):
    """Prune every trial but the first once it has reported two epochs: a pruner whose decision is known."""

    def prune(self, study, trial):
        return trial.number > 0 and trial.last_step is not None and trial.last_step >= 1


def test_the_objective_reports_each_epoch_and_a_pruned_trial_stops_its_fit():
    X, y = make_table(160)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=PruneLaterTrials())
    objective = load_example().objective
    settings = dict(max_epochs=4, batch_size=32, encoder__n_heads=2, patience=None)
    study.optimize(lambda trial: objective(trial, X[:120], y[:120], X[120:], y[120:], **settings), n_trials=2)
    complete, pruned = study.trials
    assert complete.state == optuna.trial.TrialState.COMPLETE and 0 <= complete.value <= 1
    assert sorted(complete.intermediate_values) == [0, 1, 2, 3]  # valid_loss reported at every epoch
    assert pruned.state == optuna.trial.TrialState.PRUNED
    assert sorted(pruned.intermediate_values) == [0, 1]  # the fit stopped at the pruned epoch
    assert set(complete.params) == {"lr", "d_model", "n_layers"}
