"""The ```python blocks of the user guide pages run as a user copies them: in a fresh namespace,
in page order, with nothing bound beforehand.

``tests/test_snippets.py`` runs every block with placeholder names (``X``, ``texts``,
``X_other``...) bound to small data, which hides a block that uses a name its page never
defines or imports (``X_other``, ``optuna``, ``GridSearchCV`` were such names). Here:

* every block of ``PAGES`` is read for names it uses that no block of its page up to it binds
  (imports, assignments, definitions), builtins and the page's declared placeholders aside;
* the blocks in ``RUN`` are executed as written; only the data loaders they call return a
  stratified slice and ``max_epochs`` is capped at one epoch, so each page takes seconds;
* what the page says the code gives (columns of ``explain``, the files of a saved folder,
  the resolved recipe printed in a comment) is checked on the result;
* every other block is in ``SKIPPED`` with the reason, so a new block needs a decision.
"""

from __future__ import annotations

import ast
import builtins
import pathlib
import re

import numpy as np
import pytest

import tabformer.datasets
import tabformer.datasets.images
from tabformer.datasets import MissingDatasetError
from tabformer.estimators._recipes import RecipeMixin

pytestmark = pytest.mark.small_table_ensemble  # the default five members of a small table, as users get them

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [
    "docs/getting-started.md",
    "docs/pretrained.md",
    "docs/scale.md",
    "docs/text.md",
    "docs/architecture.md",
    "docs/images.md",
    "docs/reliability.md",
    "docs/defaults.md",
]
#: names a page uses for the user's own data, never defined on the page
PLACEHOLDERS = {
    "docs/text.md": {"texts", "labels", "unlabeled_texts", "few_texts", "few_labels", "sentences", "tags", "folder"},
    "docs/scale.md": {"X", "y", "X_train", "y_train", "X_valid", "y_valid", "list_of_image_paths", "labels"},
    "docs/architecture.md": {"X", "y", "X_unlabeled", "X_few", "y_few"},
}
#: page -> the block indices run here, in order (each page's blocks share one namespace)
RUN = {
    "docs/getting-started.md": (0, 2, 3, 4),
    "docs/images.md": (0,),
    "docs/defaults.md": (0,),
}
#: (page, block index, a phrase of the block) -> why it is not run here
SKIPPED = {
    ("docs/getting-started.md", 1, "GridSearchCV"): "37 fits; tests/test_snippets.py runs it on 80 rows",
    ("docs/pretrained.md", 0, "distilbert-folder/"): "needs Hugging Face and timm weight folders downloaded beforehand",
    ("docs/pretrained.md", 1, "AutoModel.from_pretrained"): "downloads from the Hugging Face Hub",
    ("docs/pretrained.md", 2, "distilbert-base-uncased"): "needs a filled Hugging Face cache",
    ("docs/scale.md", 0, 'device="cuda"'): "needs a CUDA GPU and the user's X, y",
    ("docs/scale.md", 1, "accelerator_.is_main_process"): "runs under `accelerate launch` with 4 processes",
    ("docs/scale.md", 2, "fit_sample_size"): "Parquet files, an s3 dataset and image folders that are not here",
    ("docs/scale.md", 3, "LocalCluster"): "a 4-worker Dask cluster; tests/test_dask_search.py runs the same search",
    ("docs/scale.md", 4, "SkorchPruningCallback"): "50 Optuna trials; tests/test_optuna_search.py runs the objective",
    ("docs/text.md", 0, "TabFormerTagger().fit"): "the user's texts; tests/test_snippets.py runs it on placeholder texts",
    ("docs/text.md", 1, "aggregate_subwords"): "needs a fitted text classifier; tests/test_snippets.py runs it",
    ("docs/text.md", 2, "KFold"): "the user's sentences; tests/test_snippets.py runs it on placeholder sentences",
    ("docs/text.md", 3, "PretrainedEncoder.load"): "needs a saved encoder folder; tests/test_snippets.py runs it",
    ("docs/text.md", 4, "warmup_linear"): "needs a local BERT folder; tests/test_snippets.py runs it",
    ("docs/architecture.md", 0, "register_tokenizer"): "the user's X, y; tests/test_docs_architecture.py runs it",
    ("docs/architecture.md", 1, "register_objective"): "the user's X, y; tests/test_docs_architecture.py runs it",
}


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


def _bound(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # `import a.b` binds `a`
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _used(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


@pytest.mark.parametrize("page", PAGES)
def test_every_name_a_block_uses_is_defined_on_its_page(page):
    placeholders = PLACEHOLDERS.get(page, set())
    bound, used_anywhere = set(), set()
    for index, code in enumerate(blocks(page)):
        tree = ast.parse(code, f"{page} block {index}")
        bound |= _bound(tree)
        used_anywhere |= _used(tree)
        undefined = _used(tree) - bound - set(dir(builtins)) - placeholders
        assert not undefined, f"{page} block {index} uses {sorted(undefined)}, which no block of the page defines or imports"
    stale = placeholders - used_anywhere
    assert not stale, f"PLACEHOLDERS of {page} lists {sorted(stale)}, which no block uses any more"


def test_every_block_is_run_or_skipped_with_a_reason():
    for (page, index, phrase), reason in SKIPPED.items():
        assert phrase in blocks(page)[index], f"SKIPPED entry {page} block {index} no longer matches its block ({reason})"
    skipped = {(page, index) for page, index, _ in SKIPPED}
    for page in PAGES:
        for index in range(len(blocks(page))):
            run = index in RUN.get(page, ())
            assert run != ((page, index) in skipped), f"{page} block {index} must be in exactly one of RUN and SKIPPED"


def _stratified_head(X, y, per_class):
    y = np.asarray(y)
    keep = np.sort(np.concatenate([np.flatnonzero(y == label)[:per_class] for label in np.unique(y)]))
    if isinstance(X, list):
        return [X[i] for i in keep], y[keep]
    return (X.iloc[keep] if hasattr(X, "iloc") else X[keep]), y[keep]


def _small(loader, per_class):
    def load(*args, **kwargs):
        try:
            X, y = loader(*args, **kwargs)
        except (MissingDatasetError, FileNotFoundError, OSError) as error:
            pytest.skip(f"the page's dataset is not installed here ({error})")
        return _stratified_head(X, y, per_class)

    return load


@pytest.fixture
def small_and_short(monkeypatch, tmp_path):
    """Stratified slices from the loaders, one epoch per fit, files written under tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tabformer.datasets, "load_adult", _small(tabformer.datasets.load_adult, 60))
    monkeypatch.setattr(tabformer.datasets, "load_rotten_tomatoes", _small(tabformer.datasets.load_rotten_tomatoes, 40))
    monkeypatch.setattr(tabformer.datasets.images, "load_fashion_mnist", _small(tabformer.datasets.images.load_fashion_mnist, 20))
    setting = RecipeMixin._setting

    def one_epoch(self, name):
        value = setting(self, name)
        return min(value, 1) if name == "max_epochs" and isinstance(value, int) else value

    monkeypatch.setattr(RecipeMixin, "_setting", one_epoch)


def run_page(page):
    scope = {"__name__": "__main__"}
    for index in RUN[page]:
        exec(compile(blocks(page)[index], f"{page} block {index}", "exec"), scope)
    return scope


def test_getting_started_runs_as_written(small_and_short, tmp_path):
    pytest.importorskip("onnx")
    scope = run_page("docs/getting-started.md")
    clf, X_test = scope["clf"], scope["X_test"]
    assert set(clf.predict(X_test)) <= {">50K", "<=50K"}  # labels in the type given
    assert clf.predict_proba(X_test).shape == (len(X_test), len(clf.classes_))
    # "a folder: config.json, model.safetensors, categories.json"; "identical predictions"
    assert {"config.json", "model.safetensors", "categories.json"} <= {p.name for p in (tmp_path / "adult-model").iterdir()}
    np.testing.assert_array_equal(scope["clf2"].predict_proba(X_test), clf.predict_proba(X_test))
    assert scope["warm"].initialized_ and (tmp_path / "encoder.pt").exists() and (tmp_path / "adult.onnx").exists()
    frame = clf.explain(X_test[:1])
    assert list(frame.columns) == ["row", "layer", "token", "column", "label", "attention"]
    small = scope["small"]  # the small-table tip: five members, their mean probability
    assert small.resolved_params_["ensemble_size"] == 5 and small.predict_proba(X_test[:3]).shape == (3, 2)


def test_images_page_runs_as_written(small_and_short):
    scope = run_page("docs/images.md")
    pre, images = scope["pre"], scope["images"]
    assert pre.transform(images[:3]).shape == (3, pre.encoder_.d_model)  # CLS embeddings, (n, d_model)
    assert scope["clf"].tokenizer_.n_tokens_ == 16  # "16 tokens of 7x7 patches"


def test_defaults_page_prints_the_recipe_it_shows(small_and_short):
    scope = run_page("docs/defaults.md")
    clf = scope["clf"]
    code = blocks("docs/defaults.md")[0]
    comment = "".join(re.findall(r"#\s*(.*)", code.split("clf.resolved_params_", 1)[1].split("clf.get_params")[0]))
    shown = {key: ast.literal_eval(value) for key, value in re.findall(r"'(\w+)': ('[^']*'|[\w.]+)", comment)}
    assert len(shown) >= 5
    assert {key: clf.resolved_params_[key] for key in shown} == shown
    assert clf.get_params()["lr"] == "auto"
