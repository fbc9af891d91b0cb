# Set-up, the main job and the tests. `make run` and `make test` each set up .venv first.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch: a bare `torch` requirement pulls a multi-GB CUDA build on Linux.
# Elsewhere: make TORCH_INSTALL="torch --index-url https://download.pytorch.org/whl/cpu"
TORCH_INSTALL ?= torch==2.13.0

.PHONY: setup browser bytecode run test test-fast check docs ui benchmarks clean

setup: $(VENV)/.installed browser bytecode

# The project's own modules compiled ahead (an editable install leaves them as sources, and with
# PYTHONDONTWRITEBYTECODE set every command would compile them again); up-to-date files are skipped.
bytecode: $(VENV)/.installed
	@$(VENV)/bin/python -m compileall -q components flows plugins > /dev/null

# Debian's chromium for the attention explorer's browser tests, when missing (a no-op when present).
browser:
	@scripts/install-chromium.sh

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check $(TORCH_INSTALL)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

run: setup
	$(VENV)/bin/attnlab train

ui: setup
	$(VENV)/bin/attnlab ui

# The whole suite (what CI runs): 3 workers on 2 cores, as many tests wait on servers and
# subprocesses (on one tree: 3 took 10 min 15 s; 2 left the cores 12% idle, 11 min 22 s; 4 spent
# 11% more CPU, 10 min 56 s); a test file stays on one worker, so its module fixtures (a trained
# model, a server) are built once.
test: setup
	PYTHONUNBUFFERED=1 $(VENV)/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder

# The edit loop: unit tests only (no Prefect, no MLflow, no training beyond a few steps);
# tests/flows is not even collected.
test-fast: $(VENV)/.installed
	PYTHONUNBUFFERED=1 $(VENV)/bin/python -m pytest -m "not slow and not flows" -n 2 --ignore=tests/flows

# Lint, format, import contracts and types: zero findings. lint-imports checks the package map of
# docs/architecture.md ([tool.importlinter] in pyproject.toml), reading attnlab through typecheck/
# as mypy does (the editable install's import hook is not followed by either).
check: $(VENV)/.installed
	$(VENV)/bin/ruff check components flows plugins tests benchmarks scripts docs
	$(VENV)/bin/ruff format --check components flows plugins tests benchmarks scripts docs
	PYTHONPATH=typecheck $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

# The docs site (MkDocs, Material theme, mkdocstrings); --strict fails on a broken link or reference.
# The API pages read the source through build/api-src (docs/_griffe/hooks.py lays it out).
# NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2.0 is not a finding of this build.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

benchmarks: setup
	cd benchmarks && ../$(VENV)/bin/python bench_attention.py && ../$(VENV)/bin/python bench_decoding.py && ../$(VENV)/bin/python bench_training.py && ../$(VENV)/bin/python bench_cli_train.py

clean:
	rm -rf $(VENV) *.egg-info
