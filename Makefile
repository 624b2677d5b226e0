# Kernel Studio: setup, run, test, benchmark. Every target installs what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch lies on the development machines' disk; a GPU host overrides this.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.setup-stamp
GPU_PYTHON ?= python3

.PHONY: setup studio lint test test-gpu bench migrate clean

setup: $(STAMP)

$(STAMP): pyproject.toml package.json package-lock.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[test,embedded]"
	@# The browser tests drive Debian's Chromium (no browser download is possible); install it where we may.
	command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } || \
		echo "no Chromium: tests/e2e will skip (install Debian's chromium package)"
	npm ci --no-audit --no-fund --loglevel=error
	$(PY) -m studio.vendor
	touch $(STAMP)
# No migrate in setup: on a fresh machine PostgreSQL may not run until runstudio starts an embedded one (it migrates).

migrate:
	$(PY) manage.py ensuredb && $(PY) manage.py migrate --noinput

studio: setup
	$(PY) manage.py runstudio

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint docker/*.Dockerfile

# Parallel workers, a test file per worker at a time (module fixtures build once); the slowest tests listed last.
TEST_WORKERS ?= 2
test: setup lint
	$(PY) -m pytest tests --ignore=tests/gpu -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=40

# For a GPU machine: no virtual environment, the python that holds CUDA PyTorch.
# tests/gpu in GPU_WORKERS pytest-xdist workers where xdist is importable (carry its wheels to a lent machine),
# serially otherwise; then, alone, the tests that compare timings (gpu_quiet) and those that inject GPU faults.
# Exit 5 (none selected) is no failure.
GPU_WORKERS ?= 8
GPU_PYTEST = $(GPU_PYTHON) -m pytest tests/gpu -p no:cacheprovider -p no:django

test-gpu:
	$(GPU_PYTEST) -m "not (gpu_fault or gpu_quiet)" $$($(GPU_PYTHON) -c "import xdist" 2>/dev/null && echo "-n $(GPU_WORKERS) --dist load") || test $$? -eq 5
	$(GPU_PYTEST) -m "gpu_fault or gpu_quiet" || test $$? -eq 5

bench: setup
	$(PY) -m bench

clean:
	rm -rf $(VENV) node_modules static/vendor .cache
