# Two commands on a fresh machine:  `make serve`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install serve test test-fast migrate lint bench clean

# torch first, pinned to the CPU build: anything else pulls a multi-GB CUDA build. `-qq`: errors
# only — a pip config's find-links that do not exist here printed ~200 "Location … is ignored"
# warnings on a fresh `make serve`; PIP_NO_WARN_SCRIPT_LOCATION drops the PATH notes.
export PIP_NO_WARN_SCRIPT_LOCATION ?= 1
export PIP_DISABLE_PIP_VERSION_CHECK ?= 1
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq torch==2.13.0
	$(PY) -m pip install -qq -e '.[test,dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) -m persistence migrate

serve: migrate
	$(PY) -m server

# Both cores, each test file on one worker (its module fixtures — servers, stacks — built once),
# the longest files first (tests/support/schedule.py; xdist's own reorder put them last); the tests
# that need a fixed port take a lock for it (tests/support/studio_port.py). WORKERS=3 adds a worker
# for the time the others wait on servers, MariaDB and locks (not measured as the default).
WORKERS ?= 2
test: install
	$(PY) -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder

# In-process tests only (no servers, notebooks, MariaDB or browser), one worker per core (two
# here), each test file on one worker so its fixtures are built once: 2:18 on 2 idle cores.
test-fast: install
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not slow and not mysql and not browser"

lint: install
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) data .pytest_cache
