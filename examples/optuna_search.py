"""Hyper-parameter search with Optuna, pruning bad trials after each epoch.

Run with ``python examples/optuna_search.py`` (about a minute on a laptop CPU) after
``pip install optuna optuna-integration`` (the clone's ``[search]`` extra).

``objective`` builds a ``TabFormerClassifier`` from the trial's suggestions and hands it
optuna-integration's ``SkorchPruningCallback``: at the end of every epoch the callback
reports the validation loss (on the estimator's own ``validation_fraction`` holdout) to
the trial, and stops the fit when the study's pruner judges the trial hopeless. The
trial's value is the estimator's score on a separate validation split, so trials are
compared on rows none of them trained or early-stopped on. For a cluster, point several
processes at one study stored in a database (``optuna.create_study(storage=...)``).
"""

import argparse

import optuna
from optuna_integration import SkorchPruningCallback
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from tabformer import TabFormerClassifier


def objective(trial, X_train, y_train, X_valid, y_valid, max_epochs=10, **params):
    """Accuracy on ``(X_valid, y_valid)`` of a classifier with the trial's settings.

    Parameters
    ----------
    trial : optuna.trial.Trial
    X_train, y_train : the rows to fit on (10% of them held out for the per-epoch
        validation loss the pruner reads, even where ``patience=None`` turns early
        stopping off and with it the default holdout)
    X_valid, y_valid : the rows the trial is scored on
    max_epochs : int, default=10
    **params : further fixed estimator parameters

    Returns
    -------
    float
        Validation accuracy (higher is better: ``direction="maximize"``).
    """
    clf = TabFormerClassifier(
        lr=trial.suggest_float("lr", 1e-4, 1e-2, log=True),
        encoder__d_model=trial.suggest_categorical("d_model", [32, 64]),
        encoder__n_layers=trial.suggest_int("n_layers", 1, 3),
        max_epochs=max_epochs,
        callbacks=[("prune", SkorchPruningCallback(trial, "valid_loss"))],
        **{"random_state": 0, "verbose": 0, "validation_fraction": 0.1, **params},
    )
    clf.fit(X_train, y_train)
    return clf.score(X_valid, y_valid)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="Optuna trials to run (default: 8)")
    parser.add_argument("--max-epochs", type=int, default=10, help="epochs per trial, at most (default: 10)")
    args = parser.parse_args(argv)
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=2),
    )
    study.optimize(lambda trial: objective(trial, X_train, y_train, X_valid, y_valid, args.max_epochs), n_trials=args.trials)
    pruned = sum(trial.state == optuna.trial.TrialState.PRUNED for trial in study.trials)
    print(f"best accuracy {study.best_value:.3f} with {study.best_params}; {pruned} of {len(study.trials)} trials pruned")
    return study


if __name__ == "__main__":
    main()
