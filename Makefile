# olakit: `make paper` runs the main job, `make test` the tests. Both create .venv and install when needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: paper test test-fast mutants lint setup data browser redis clean model-1.5b
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian's apt-get, waiting (up to 10 min) for another apt-get or dpkg that holds the package lock instead of failing
APT_GET := $(SUDO) apt-get -o DPkg::Lock::Timeout=600

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# the CPU build of torch first, so sentence-transformers does not pull a multi-GB CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[live,cluster,lab,test,interop]'
	# Every Eval Ever's package declares Python >= 3.12 and its converters' dependencies; the two modules olakit uses
	# (its instance-level pydantic models and schema version) need only pydantic and run on 3.11 (olakit.data.eee)
	$(BIN)/python -m pip install -q --no-deps --ignore-requires-python every-eval-ever==0.3.0
	touch $(STAMP)

# Use ../shared/data, $$OLAKIT_DATA_DIR or data/raw when present; otherwise download (pinned, sha256-checked).
data: $(STAMP)
	@$(BIN)/python -c "from olakit.data.loaders import resolve_data_dir as r; print('data:', r())" 2>/dev/null \
		|| $(BIN)/olakit data fetch

# The whole recorded-output sweep plus a small live sweep on the embedded model (sweeps/paper.yaml).
paper: data
	@mkdir -p runs figures
	@# olakit's bytecode, which its editable install does not compile and PYTHONDONTWRITEBYTECODE keeps imports from
	@# writing: nine kernels import it (up to date files are only looked at)
	@$(BIN)/python -m compileall -q olakit
	$(BIN)/olakit sweep sweeps/paper.yaml --figures-dir figures
	@echo "tables: results/paper/*/tables  figures: figures/  executed notebooks and index: runs/paper/"

# The stronger embedded model (1.12 GB in 22 pinned parts): then OLAKIT_EMBEDDED_MODEL=1.5b selects it.
model-1.5b: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[model-1_5b]'

# Debian's Chromium for the JupyterLab end-to-end test (driven by playwright; no browser download).
browser:
	@command -v chromium >/dev/null || $(APT_GET) install -y -q chromium >/dev/null \
		|| { $(APT_GET) update -q >/dev/null && $(APT_GET) install -y -q chromium >/dev/null; }

# Debian's redis-server for the cluster tests (a real Redis on 127.0.0.1, started and stopped by the tests).
redis:
	@command -v redis-server >/dev/null || $(APT_GET) install -y -q redis-server >/dev/null \
		|| { $(APT_GET) update -q >/dev/null && $(APT_GET) install -y -q redis-server >/dev/null; }

# Lint and format check (ruff), the layer contracts (import-linter, pyproject.toml), then the suite with doctests.
test: $(STAMP) browser redis lint
	@# olakit's bytecode (its editable install compiles none, PYTHONDONTWRITEBYTECODE keeps imports from writing it):
	@# every olakit process the tests start reads it instead of compiling olakit again (the CLI-start goal counts that)
	@$(BIN)/python -m compileall -q olakit
	@# three workers (pytest-xdist), each test file on one of them: a docs page's blocks run in order, in one folder;
	@# the longest files first (conftest.py's LONGEST; xdist's default starts the files with most tests first).
	@# Two kept 2 cores about 140 % busy (the rest waiting on servers, subprocesses and the browser): three, 12:16 of
	@# tests against 13:16 on a fresh clone on 2026-12-06, and the suite is nearly CPU-bound (the processes of a run,
	@# sampled: 1,320 CPU s in 12:08, 1.8 of the 2 cores on average); a fourth made it slower (with the longest files
	@# first, in the checkout: 11:46 against 10:58, the tests' own CPU 1,163 s against 1,054). The workers keep the
	@# cores busy, so an embedded server started here computes on one thread, and the sentence embedder on one: on
	@# every core, beside a busy one, the server is ten times slower, the embedder twice (docs/llm.md)
	OLAKIT_EMBEDDED_THREADS=1 $(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder --durations=25

# The quick tier (about 6 min on 2 cores, most of it commands run as subprocesses): everything but the embedded
# model, the browser and the slow tests.
test-fast: $(STAMP) lint
	@$(BIN)/python -m compileall -q olakit
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not real_model and not browser and not slow"

# Mutation testing of the answer readers and scoring (pyproject's [tool.mutmut]); lists the surviving mutants.
mutants: $(STAMP)
	rm -rf mutants
	OLAKIT_DATA_DIR="$$($(BIN)/python -c 'from olakit.data.loaders import resolve_data_dir; print(resolve_data_dir())')" \
		$(BIN)/mutmut run --max-children 2 || true
	$(BIN)/mutmut results

lint: $(STAMP)
	$(BIN)/ruff check olakit tests benchmarks
	$(BIN)/ruff format --check olakit tests benchmarks
	$(BIN)/lint-imports

clean:
	rm -rf results runs figures/*.png figures/*.pdf test-artifacts
