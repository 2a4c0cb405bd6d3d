"""Every product module's line coverage at or above a floor, from the data `make test` wrote.

pytest-cov reports the total and each module; a total can hide a module nobody tests. This
reads the same data file and names each module under the floor, exiting 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import coverage


def below(floor: float, data_file: str = ".coverage") -> list[tuple[str, float]]:
    """(module path, percent covered) of each product module under `floor`, worst first; the
    modules no test imported count, at 0 %."""
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "coverage.json"
        cov.json_report(outfile=str(report))
        files = json.loads(report.read_text())["files"]
    found = [
        (path, float(entry["summary"]["percent_covered"]))
        for path, entry in files.items()
        if entry["summary"]["num_statements"] and entry["summary"]["percent_covered"] < floor
    ]
    return sorted(found, key=lambda item: (item[1], item[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.coverage_floor")
    parser.add_argument("floor", type=float, help="the least line coverage per module, percent")
    parser.add_argument("--data-file", default=".coverage")
    args = parser.parse_args(argv)
    under = below(args.floor, args.data_file)
    for path, percent in under:
        print(
            f"{path}: {percent:.1f} % of its lines covered, under {args.floor:g} %", file=sys.stderr
        )
    return 1 if under else 0


if __name__ == "__main__":
    sys.exit(main())
