"""The image builds from a lock that installs: what can be checked without an OCI builder.

No image can be built on the machines that run these tests (no container daemon, no base image
reachable), so this checks the Dockerfile's stages and install steps as text, and installs the
lock itself into a fresh virtual environment, as the Dockerfile's first stage does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "manifests" / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = (ROOT / "requirements.lock").read_text()
PINS = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", LOCK, flags=re.MULTILINE))


def stages() -> list[str]:
    """The Dockerfile's stages, each from its FROM line to the next."""
    parts = re.split(r"^(?=FROM )", DOCKERFILE, flags=re.MULTILINE)
    return [p for p in parts if p.startswith("FROM ")]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_two_stages_on_one_pinnable_base() -> None:
    build, final = stages()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim-bookworm$", DOCKERFILE, re.MULTILINE)
    assert build.splitlines()[0] == "FROM ${PYTHON_IMAGE} AS build"
    assert final.splitlines()[0] == "FROM ${PYTHON_IMAGE}"


def test_the_build_stage_installs_only_what_the_lock_pins() -> None:
    build, _ = stages()
    assert "pip install --require-hashes --no-deps -r requirements.lock" in build
    assert "pip install --no-deps --no-build-isolation ." in build
    assert "pip check" in build


def test_the_final_stage_runs_no_installer_and_runs_as_non_root() -> None:
    _, final = stages()
    assert "RUN" not in final
    assert "COPY --from=build /opt/kube-rdma /opt/kube-rdma" in final
    assert re.search(r"^USER 65532:65532$", final, re.MULTILINE)
    assert final.rstrip().endswith('ENTRYPOINT ["kube-rdma"]')


def test_the_context_lets_in_exactly_what_is_copied() -> None:
    ignore = (ROOT / "manifests" / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = set()
    for line in re.findall(r"^COPY (?!--from)(.+)$", DOCKERFILE, flags=re.MULTILINE):
        copied |= {word.rstrip("/") for word in line.split()[:-1]}
    assert copied == allowed
    assert PYPROJECT["project"]["readme"] in copied


def test_every_dependency_is_pinned_with_hashes_within_its_range() -> None:
    wanted = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    wanted.append(Requirement(next(r for r in PYPROJECT["build-system"]["requires"])))
    pins = {normalized(name): Version(version) for name, version in PINS.items()}
    for requirement in wanted:
        assert requirement.specifier.contains(pins[normalized(requirement.name)]), requirement
    blocks = re.split(r"^(?=[A-Za-z0-9])", LOCK, flags=re.MULTILINE)
    for block in (b for b in blocks if "==" in b):
        assert "--hash=sha256:" in block, block.splitlines()[0]


def test_the_lock_was_made_by_make_lock() -> None:
    assert "make lock" in LOCK.splitlines()[1]


NEEDS_AN_INDEX = (
    "this test installs requirements.lock from a package index, as the image build does, and "
    "pip could not: give it PyPI (or the index pip is configured with), or, offline, set "
    "KUBE_RDMA_SKIP_NETWORK=1 to skip it (a skip fails under CI=true). pip said:\n"
)


def install_from_index(argv: list[str]) -> None:
    """Run a pip install; when it fails, say that the test needs an index and how to skip it."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(NEEDS_AN_INDEX + "\n".join(done.stderr.strip().splitlines()[-5:]))


def test_an_unreachable_index_is_said_so(tmp_path: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--isolated", "-q", "--disable-pip-version-check"]
    offline = ["--index-url", "http://127.0.0.1:9/simple", "--retries", "0", "--timeout", "1"]
    argv = [*pip, "download", "-d", str(tmp_path), *offline, "kube-rdma-absent==0"]
    with pytest.raises(pytest.fail.Exception) as failed:
        install_from_index(argv)
    assert str(failed.value).startswith(NEEDS_AN_INDEX)
    assert "kube-rdma-absent==0" in str(failed.value)


@pytest.mark.skipif(
    os.environ.get("KUBE_RDMA_SKIP_NETWORK") == "1",
    reason="needs a package index; KUBE_RDMA_SKIP_NETWORK=1 skips it",
)
def test_the_lock_installs_in_a_fresh_venv_with_every_subcommand(tmp_path: Path) -> None:
    """The Dockerfile's first stage, outside a container: the lock alone, hashes required,
    then kube-rdma without build isolation; `pip check` finds nothing missing."""
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".*", "__pycache__", "build", "dist", "*.egg-info"),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "-q", "--disable-pip-version-check"]
    lock = str(source / "requirements.lock")
    install_from_index([*pip, "install", "--require-hashes", "--no-deps", "-r", lock])
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", str(source)], check=True)
    subprocess.run([*pip, "check"], check=True)
    cli = str(venv / "bin" / "kube-rdma")
    shown = subprocess.run([cli, "--version"], check=True, capture_output=True, text=True)
    assert shown.stdout.strip() == f"kube-rdma {PYPROJECT['project']['version']}"
    usage = subprocess.run([cli, "--help"], check=True, capture_output=True, text=True).stdout
    for command in ("webhook", "extender", "agent", "certs"):
        assert command in usage
