"""The per-module coverage floor names each module under it, the ones never imported too."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import coverage
import pytest

from testbed.coverage_floor import below, main


def measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Coverage data of a package whose module `half` ran one of its two functions, and whose
    module `never` was not imported."""
    package = tmp_path / "measured_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "half.py").write_text("def used():\n    return 1\n\n\ndef unused():\n    return 2\n")
    (package / "never.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    data_file = str(tmp_path / ".coverage")
    cov = coverage.Coverage(data_file=data_file, source=[str(package)], config_file=False)
    cov.start()
    try:
        importlib.import_module("measured_pkg.half").used()
    finally:
        cov.stop()
        sys.modules.pop("measured_pkg.half", None)
        sys.modules.pop("measured_pkg", None)
    cov.save()
    return data_file


def test_modules_under_the_floor_are_named_worst_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_file = measured(tmp_path, monkeypatch)
    assert below(90, data_file) == [("measured_pkg/never.py", 0.0), ("measured_pkg/half.py", 75.0)]
    assert below(75, data_file) == [("measured_pkg/never.py", 0.0)]
    assert main(["85", "--data-file", data_file]) == 1
    assert capsys.readouterr().err == (
        "measured_pkg/never.py: 0.0 % of its lines covered, under 85 %\n"
        "measured_pkg/half.py: 75.0 % of its lines covered, under 85 %\n"
    )
    assert main(["0", "--data-file", data_file]) == 0
