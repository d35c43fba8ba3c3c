"""The README's ```python blocks run as written, so the quickstart cannot rot.

(```py blocks are sketches with placeholder names and are not run.)
"""

import importlib.util
import pathlib
import re

import pytest

pytestmark = pytest.mark.small_table_ensemble  # the default five members of a small table, as users get them

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_the_two_commands_first():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert "make demo" in first_block and "make test" in first_block
    assert text.index("make demo") < text.index("```python")


def test_readme_quickstart_runs():
    if importlib.util.find_spec("mglearn") is None:  # the data package; importing it needs matplotlib
        pytest.skip("mglearn (Adult data) is not installed; `make test` installs it")
    namespace = {}
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), namespace)
    # it learns: clearly above the majority class's share of the test rows (a constant
    # predictor scores exactly that share, 0.75 here)
    y_test = namespace["y_test"]
    majority = (y_test == y_test.mode()[0]).mean()
    assert namespace["clf"].score(namespace["X_test"], y_test) >= majority + 0.04
    # the GridSearchCV block is fitted, not only built: 4 candidates, the best one refitted
    search = namespace["search"]
    assert len(search.cv_results_["params"]) == 4 and search.best_params_["encoder__n_layers"] in (1, 2)
    assert search.best_estimator_.predict(namespace["X_test"][:5]).shape == (5,)


def test_demo_prints_progress_eta_and_the_results_table(capsys):
    if importlib.util.find_spec("mglearn") is None:
        pytest.skip("mglearn (Adult data) is not installed; `make test` installs it")
    spec = importlib.util.spec_from_file_location("adult_demo", README.parent / "examples" / "adult_demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    table = demo.main(["--rows", "400"])
    out = capsys.readouterr().out
    assert "first epoch:" in out and "more (about" in out  # how long the rest can take
    assert "train_loss" in out  # skorch's per-epoch progress lines
    assert list(table.index) == ["tabformer (defaults)", "HistGradientBoosting", "LogisticRegression (one-hot)"]
