"""A first hour with tabformer: what the README and docs/getting-started.md lead a new user to run."""

import numpy as np
import pandas as pd
import pytest

from tabformer import TabFormerClassifier
from tabformer.cli import build_parser, main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.choice(["x", "y"], size=120)})
    y = np.where(X["a"] > 0, "hi", "lo")
    clf = TabFormerClassifier(max_epochs=2, encoder__d_model=16, encoder__n_heads=2, encoder__n_layers=1, verbose=0)
    folder = tmp_path_factory.mktemp("first_hour") / "model"
    clf.fit(X, y).save(folder)
    return folder, clf


def test_info_shows_what_the_auto_parameters_resolved_to(saved, capsys):
    # `parameters:` lists get_params (lr=auto, batch_size=auto); the values fit used were in
    # config.json but not in the summary, so `tabformer info` could not say which lr trained the model
    folder, clf = saved
    assert main(["info", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "lr=auto" in out and "batch_size=auto" in out
    resolved = out.split("  resolved:   ", 1)[1].split("  metrics:")[0]
    assert f"lr={clf.resolved_params_['lr']}," in resolved and f"batch_size={clf.resolved_params_['batch_size']}," in resolved


def test_every_cli_argument_has_help():
    parser = build_parser()
    commands = next(action for action in parser._actions if action.choices and "fit" in action.choices)
    missing = [
        f"{name} {action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if action.dest != "help" and not action.help
    ]
    assert not missing, f"arguments without help in `--help`: {missing}"


def test_skorch_progress_bar_runs_with_the_auto_batch_size(capsys):
    # skorch's ProgressBar() sized its bar from get_params()["batch_size"], the "auto" the user
    # passed: TypeError ('int' / 'str') at the first epoch
    from skorch.callbacks import ProgressBar

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=80), "b": rng.choice(["x", "y"], size=80)})
    y = (X["a"] > 0).astype(int)
    bar = ProgressBar()
    clf = TabFormerClassifier(max_epochs=2, encoder__d_model=16, encoder__n_heads=2, verbose=0, callbacks=[bar])
    clf.fit(X, y)
    assert len(clf.history_) == 2
    assert bar.batches_per_epoch == "auto"  # the instance passed in is left as it was
    assert "it/s" in capsys.readouterr().err  # the bar was drawn
