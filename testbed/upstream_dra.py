"""Re-reads Kubernetes' DRA allocator test table and lists its cases per version, against the
names recorded beside the translation (tests/kube_rdma/core/dra/upstream/allocator_names.json,
whose every case the tests require translated or left out with a reason): which upstream
cases are new, which recorded ones upstream no longer has, and which cases' bodies differ from
the version they were translated from.

    python -m testbed.upstream_dra --check REPO_DIR TAG [TAG ...]
    python -m testbed.upstream_dra --write-names NAMES_JSON REPO_DIR TAG [TAG ...]
    python -m testbed.upstream_dra --show REPO_DIR TAG CASE

`--check` exits 1 when a version has cases not recorded yet; `--write-names` records them, and
tests/kube_rdma/core/dra/upstream/test_allocator.py then fails for each until it is translated
or left out in allocator_cases.py.

REPO_DIR is a clone (bare or not) of kubernetes/dynamic-resource-allocation; TAG a tag or
branch (v0.34.9, release-1.35, master). Tooling only: the product never imports it, and the
tests never read the clone (the translated cases live in tests/).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence

ALLOCATOR_FILE = "structured/internal/allocatortesting/allocator_testing.go"
NAMES = "tests/kube_rdma/core/dra/upstream/allocator_names.json"
TRANSLATED_FROM = "v0.34.9"
_TABLE = re.compile(r"^(\t*)(?:var )?testcases :?= map\[string\]", re.MULTILINE)
_CASE = re.compile(r'^"([^"]+)": \{(\},)?$')


def read(repo: str, ref: str, path: str = ALLOCATOR_FILE) -> str:
    return subprocess.run(
        ["git", "-C", repo, "show", f"{ref}:{path}"], check=True, capture_output=True, text=True
    ).stdout


_LISTED = re.compile(r'^\t+name:\s+"([^"]+)",$', re.MULTILINE)


def _listed_cases(source: str) -> dict[str, str]:
    """A table written as a list of structs with `name:` fields (k8s.io/apiserver
    pkg/cel/library semver_test.go, quantity_test.go): each case from its name to the next;
    a name used twice gets `#2`."""
    heads = list(_LISTED.finditer(source))
    if not heads:
        raise ValueError("no test table (`testcases := map[string]...` or `name:` fields)")
    bodies: dict[str, str] = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(source)
        name, n = head.group(1), 2
        while name in bodies:
            name, n = f"{head.group(1)}#{n}", n + 1
        bodies[name] = source[head.end() : end]
    return bodies


def commit(repo: str, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", f"{ref}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def cases(source: str) -> dict[str, str]:
    """The table's cases in order, each with its body's text."""
    found = _TABLE.search(source)
    if found is None:
        return _listed_cases(source)
    outer = found.group(1)
    inner = outer + "\t"
    lines = source[found.end() :].splitlines()[1:]
    bodies: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []
    for line in lines:
        if name is None:
            if line == outer + "}":
                break
            head = _CASE.match(line[len(inner) :]) if line.startswith(inner) else None
            if head and not line[len(inner) :].startswith("\t"):
                if head.group(2):
                    bodies[head.group(1)] = ""
                else:
                    name, body = head.group(1), []
            continue
        if line == inner + "},":
            bodies[name] = "\n".join(body)
            name = None
        else:
            body.append(line)
    return bodies


# Builders upstream renamed without changing what they build (release-1.35 on).
_RENAMES = (
    ("claimWithRequest(", "claim("),
    ("unwrapResourceSlices(", "unwrap("),
    ("sliceWithDevices(", "slice("),
)


def normalized(body: str) -> str:
    """A case's body with whitespace, comments and renamed builders evened out, to tell a
    change of what a case tests from one of how it is written."""
    lines = [line.split("//", 1)[0].strip() for line in body.splitlines()]
    text = " ".join(line for line in lines if line)
    for old, new in _RENAMES:
        text = text.replace(old, new)
    return re.sub(r"\s+", " ", text)


def _changed(base: dict[str, str], upstream: dict[str, str]) -> list[str]:
    return [n for n in upstream if n in base and normalized(upstream[n]) != normalized(base[n])]


def check(repo: str, refs: Sequence[str], names: str = NAMES, file: str = ALLOCATOR_FILE) -> int:
    with open(names) as recorded_file:
        recorded: dict[str, dict[str, list[str]]] = json.load(recorded_file)
    everything = {n for found in recorded.values() for n in found["names"]}
    base = cases(read(repo, TRANSLATED_FROM, file))
    problems = 0
    for ref in refs:
        upstream = cases(read(repo, ref, file))
        ours = set(recorded[ref]["names"]) if ref in recorded else everything
        new = [n for n in upstream if n not in ours]
        gone = sorted(ours - set(upstream))
        changed = _changed(base, upstream)
        print(f"{ref} ({commit(repo, ref)}): {len(upstream)} cases")
        for label, listed in (("new", new), ("missing upstream", gone), ("changed", changed)):
            if listed:
                print(f"  {label} ({len(listed)}): {', '.join(listed)}")
        problems += len(new)
    return 1 if problems else 0


def write_names(repo: str, refs: Sequence[str], path: str, file: str = ALLOCATOR_FILE) -> int:
    """Writes each version's case names, its commit, and the cases whose body differs from
    the version translated, for the tests to read without a clone."""
    base = cases(read(repo, TRANSLATED_FROM, file))
    found = {}
    for ref in refs:
        upstream = cases(read(repo, ref, file))
        found[ref] = {
            "commit": commit(repo, ref),
            "file": file,
            "names": list(upstream),
            "changed": _changed(base, upstream),
        }
    with open(path, "w") as out:
        json.dump(found, out, indent=1)
        out.write("\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", nargs="+", metavar=("REPO_DIR", "TAG"))
    parser.add_argument("--show", nargs=3, metavar=("REPO_DIR", "TAG", "CASE"))
    parser.add_argument("--names", nargs=2, metavar=("REPO_DIR", "TAG"))
    parser.add_argument(
        "--file",
        default=ALLOCATOR_FILE,
        help=f"the test file in the repository (default {ALLOCATOR_FILE}; cel/compile_test.go "
        "for the CEL cases, with --recorded tests/kube_rdma/core/dra/upstream/cel_names.json)",
    )
    parser.add_argument("--recorded", default=NAMES, help=f"the recorded names (default {NAMES})")
    parser.add_argument(
        "--write-names", nargs="+", metavar="ARG", help="PATH REPO_DIR TAG [TAG ...]"
    )
    args = parser.parse_args(argv)
    if args.show:
        repo, ref, name = args.show
        print(cases(read(repo, ref, args.file))[name])
        return 0
    if args.write_names and len(args.write_names) >= 3:
        path, repo, *refs = args.write_names
        return write_names(repo, refs, path, args.file)
    if args.names:
        repo, ref = args.names
        print("\n".join(cases(read(repo, ref, args.file))))
        return 0
    if args.check and len(args.check) >= 2:
        return check(args.check[0], args.check[1:], args.recorded, args.file)
    parser.error("give --check REPO_DIR TAG [TAG ...], --names REPO_DIR TAG or --show")
    return 2


if __name__ == "__main__":
    sys.exit(main())
