# The two commands a new user types: `make test` and `make demo`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck unit demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: lint typecheck unit

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m examples.demo

bench: $(STAMP)
	$(PY) -m bench.webhook
	$(PY) -m bench.agent
	$(PY) -m bench.extender
	$(PY) -m bench.gang
	$(PY) -m bench.nccl_conf

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
