# The two commands a new user types: `make test` and `make demo`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# What `make demo` runs needs kube-rdma and its runtime dependencies only, not the test tools.
RUNTIME_STAMP := $(VENV)/.installed-runtime
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE  ?= ghcr.io/kube-rdma/kube-rdma:$(VERSION)
TOOLS  := .tools
UV_VERSION := 0.13.9

.PHONY: test prerequisites e2e lint typecheck unit demo bench lock image release-manifests clean

# Quiet for CI's `make test`; `make demo` shows pip's progress instead of a silent minute.
PIP_QUIET ?= -q

# `make test` installs kube-rdma with the test tools (.[test]), `make demo` without them (.);
# each in the one .venv, from a fresh clone or after the other.
$(STAMP): pyproject.toml
	@test -x $(PY) || echo "Creating $(VENV) and installing kube-rdma with its test tools (first run only, about a minute)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install $(PIP_QUIET) --upgrade pip
	$(PY) -m pip install $(PIP_QUIET) -e '.[test]'
	touch $(STAMP)

$(RUNTIME_STAMP): pyproject.toml
	@test -x $(PY) || echo "Creating $(VENV) and installing kube-rdma with its dependencies (first run only, under a minute)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test $(STAMP) -nt pyproject.toml || $(PY) -m pip install $(PIP_QUIET) --upgrade pip
	test $(STAMP) -nt pyproject.toml || $(PY) -m pip install $(PIP_QUIET) -e .
	touch $(RUNTIME_STAMP)

test: prerequisites lint typecheck unit

# Besides Python: kubectl, for the kustomize builds the manifest tests check (stdlib only, so it
# runs before the venv exists and fails first).
prerequisites:
	@$(PYTHON) -m testbed.prerequisites

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Line coverage per product module (the kube-rdma processes the tests start included); every
# module at 85 % or more.
unit: $(STAMP)
	$(PY) -m pytest -q --cov --cov-report=term
	$(PY) -m testbed.coverage_floor 85

# Against a real control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
# 1.20, built from Debian's source package on the first run (about 15 minutes on 2 cores, as
# root: it installs with apt) and cached in ~/.cache/kube-rdma (tests/e2e, docs/e2e.md).
e2e: $(STAMP)
	$(PY) -m pytest -q -m e2e tests/e2e

# Target-specific, so it holds for the install the demo triggers too. The demo needs the runtime
# package only (`pip install -e .`); `make test` adds the test tools to the same .venv.
demo: PIP_QUIET :=
demo: $(RUNTIME_STAMP)
	$(PY) -m examples.demo

bench: $(STAMP)
	$(PY) -m bench.webhook
	$(PY) -m bench.agent
	$(PY) -m bench.extender
	$(PY) -m bench.dra
	$(PY) -m bench.gang
	$(PY) -m bench.nccl_conf
	$(PY) -m bench.scale --sizes 300,1000 --names 500 --calls 60
	$(PY) -m bench.pipeline --nodes 1000 --pods 100 --gangs 6
	$(PY) -m bench.pipeline --nodes 1000 --gangs 6 --streams gangs --nominate
	$(PY) -m bench.lookup --sizes 2000,12000 --calls 20 --rounds 1
	$(PY) -m bench.biggang --in-process --nodes 2000 --sizes 64 256
	$(PY) -m bench.biggang --in-process --nodes 2000 --sizes 256 --nominate
	$(PY) -m bench.extender_memory --burst 1000 --nodes 500
	$(PY) -m bench.simulate --nodes 300 --jobs 60

# The image's dependencies, pinned with hashes for every platform (amd64 and arm64 wheels alike),
# with setuptools to build kube-rdma itself without build isolation. uv is pinned too.
lock:
	test -x $(TOOLS)/bin/uv || ($(PYTHON) -m venv $(TOOLS) && $(TOOLS)/bin/pip install -q uv==$(UV_VERSION))
	printf 'setuptools>=77\n' > $(TOOLS)/build.in
	$(TOOLS)/bin/uv pip compile pyproject.toml $(TOOLS)/build.in --universal --python-version 3.11 \
		--generate-hashes --no-annotate --custom-compile-command 'make lock' -o requirements.lock

# The first OCI builder that works; a docker CLI counts only when its daemon answers.
image:
	@if command -v podman >/dev/null; then set -x; podman build -f manifests/Dockerfile -t $(IMAGE) .; \
	elif command -v buildah >/dev/null; then set -x; buildah bud -f manifests/Dockerfile -t $(IMAGE) .; \
	elif command -v nerdctl >/dev/null && nerdctl info >/dev/null 2>&1; then set -x; nerdctl build -f manifests/Dockerfile -t $(IMAGE) .; \
	elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then set -x; docker build -f manifests/Dockerfile -t $(IMAGE) .; \
	else echo "make image: no OCI builder here (podman, buildah, or nerdctl/docker with a running daemon); install one, or build manifests/Dockerfile elsewhere" >&2; exit 1; fi

# One all-in-one YAML of the root kustomization, the image tags stamped with pyproject's version.
release-manifests:
	$(PYTHON) -m testbed.release_manifests --out dist/kube-rdma.yaml

clean:
	rm -rf $(VENV) $(TOOLS) .mypy_cache .pytest_cache .ruff_cache
