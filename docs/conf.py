"""Sphinx configuration of the tabformer documentation site (``make docs``).

The user guides are the Markdown pages of this folder (read by MyST), the API reference
lists every name in the public modules' ``__all__`` (``api.rst`` is written from them at
each build, so a new public name cannot be missed), and the gallery executes the
``examples/plot_*.py`` scripts (small, fast settings) and shows their figures; the other
examples train for minutes and stay out of it.
"""

import importlib
import os
import sys

import matplotlib

matplotlib.use("Agg")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import tabformer  # noqa: E402

project = "tabformer"
author = "the tabformer developers"
copyright = "2026, the tabformer developers"
release = version = tabformer.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "generated/*.examples", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
templates_path = ["_templates"]
html_theme = "pydata_sphinx_theme"
html_title = f"tabformer {version}"
html_theme_options = {"navigation_with_keys": False}

autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
numpydoc_show_class_members = False  # the estimators inherit dozens of skorch methods
numpydoc_validation_checks = set()
myst_heading_anchors = 3
intersphinx_mapping = {}  # offline builds: no inventories fetched

sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(HERE), "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # the other examples train on full datasets for minutes: linked from the README, not in the gallery
    "ignore_pattern": r"(?:^|/)(?!plot_)[^/]+\.py$",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

#: the modules whose ``__all__`` the API reference lists, with a heading each
API_MODULES = {
    "tabformer": "Estimators, models, tokenizers, loading",
    "tabformer.tokenizers": "Tokenizers",
    "tabformer.datasets": "Datasets (offline)",
    "tabformer.inspection": "Inspection",
    "tabformer.plot": "Plots",
    "tabformer.metrics": "Metrics",
    "tabformer.callbacks": "Callbacks",
    "tabformer.pretraining": "Pretraining objectives",
    "tabformer.hub": "Pretrained weights",
    "tabformer.export": "ONNX export",
}


def write_api_reference():
    lines = ["API reference", "=============", "", "Every public name, by module.", ""]
    seen = set()
    for module_name, title in API_MODULES.items():
        module = importlib.import_module(module_name)
        names = [name for name in module.__all__ if not name.startswith("__") and id(getattr(module, name)) not in seen]
        seen.update(id(getattr(module, name)) for name in names)
        if not names:
            continue
        lines += [title, "-" * len(title), "", f".. currentmodule:: {module_name}", ""]
        lines += [".. autosummary::", "   :toctree: generated/", ""]
        lines += [f"   {name}" for name in names] + [""]
    text = "\n".join(lines)
    path = os.path.join(HERE, "api.rst")
    old = None
    if os.path.exists(path):
        with open(path) as handle:
            old = handle.read()
    if old != text:  # rewriting an unchanged file would make Sphinx rebuild every page
        with open(path, "w") as handle:
            handle.write(text)


write_api_reference()
