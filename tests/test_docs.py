"""The README and docs/*.md against the code: every `kube-rdma` command they show exists, with
every flag they give it; every repository path they name and every page they link to is there;
every `make` target they name is in the Makefile.

Only what the pages mark as code (fenced blocks and `inline code`) is read for commands, flags,
paths and targets: prose may say "kube-rdma" or "make" in passing.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kube_rdma_cli.dispatch import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# Where a path the pages name may start: the repository's own top-level folders. Other slashed
# names are resources, devices or objects (`rdma/hca`, `/dev/infiniband`, `kube-rdma/rail1`).
TOP_LEVEL = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in {".git", ".venv"}}

# A command ends at a shell operator or a comment; placeholders and values are not checked.
COMMAND_ENDS = {"|", "||", "&&", ";", "#", ">", "2>&1", "<", ")", "&"}


@dataclass(frozen=True)
class Code:
    """A piece of code a page shows: a fenced block's line (continuations joined) or a span."""

    page: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: {self.text.strip()[:100]}"


def code(page: Path) -> Iterator[Code]:
    lines = page.read_text(encoding="utf-8").splitlines()
    fenced = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            start, text = pending if pending else (number, "")
            text += line
            if line.rstrip().endswith("\\"):
                pending = (start, text.rstrip()[:-1] + " ")
                continue
            pending = None
            yield Code(page, start, text)
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield Code(page, number, span)


def every_code() -> list[Code]:
    return [c for page in PAGES for c in code(page)]


def starts_a_command(before: str) -> bool:
    """Whether a word after `before` is a command, not an argument (`--namespace kube-rdma`)."""
    words = before.split()
    if not words:
        return True
    last = words[-1]
    return last in COMMAND_ENDS | {"$", "(", "$(", "--", "sudo", "exec", "watch", "time"} or (
        re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", last) is not None
    )


def invocations(piece: Code) -> Iterator[list[str]]:
    """The words after each `kube-rdma` (or `kubectl rdma`, `kubectl-rdma`) in a piece of code."""
    pattern = r"(?<![\w./-])(?:kube-rdma|kubectl-rdma|kubectl rdma)(?=\s|$)"
    for match in re.finditer(pattern, piece.text):
        if not starts_a_command(piece.text[: match.start()]):
            continue
        rest = piece.text[match.end() :]
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:
            words = rest.split()
        command = []
        for word in words:
            if word in COMMAND_ENDS or word.startswith(("#", ">")):
                break
            command.append(word)
        yield command


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def is_word(text: str) -> bool:
    """A subcommand's or verb's name as typed, not a placeholder (`<verb>`, `...`, `NAME`)."""
    return re.fullmatch(r"[a-z][a-z-]*", text) is not None


def command_problems(piece: Code, words: list[str]) -> list[str]:
    """What in `kube-rdma WORDS` the parser does not know."""
    parser = build_parser()
    named = "kube-rdma"
    problems = []
    rest = list(words)
    while rest:
        verbs = subparsers(parser)
        if not verbs:
            break
        word = rest[0]
        if word.startswith("-"):
            option = word.split("=", 1)[0]
            action = parser._option_string_actions.get(option)
            if action is None and option.startswith("--"):
                problems.append(f"{piece}: {named} has no {option}")
            rest.pop(0)
            if action is not None and action.nargs != 0 and "=" not in word and rest:
                rest.pop(0)  # its value
            continue
        if not is_word(word):
            return problems
        if word not in verbs:
            problems.append(f"{piece}: {named} has no subcommand {word!r}")
            return problems
        parser, named = verbs[word], f"{named} {word}"
        rest.pop(0)
    for word in rest:
        option = word.split("=", 1)[0]
        if (
            option.startswith("--")
            and len(option) > 2
            and option not in parser._option_string_actions
        ):
            problems.append(f"{piece}: {named} has no {option}")
    return problems


def test_every_command_and_flag_shown_exists() -> None:
    problems = []
    shown = 0
    for piece in every_code():
        for words in invocations(piece):
            shown += 1
            problems += command_problems(piece, words)
    assert shown > 50, "the pages show kube-rdma commands; the reader found too few"
    assert problems == []


def named_paths(piece: Code) -> Iterator[str]:
    for word in re.split(r"[\s,()\[\]'\"=]+", piece.text):
        word = word.rstrip(".:;")
        word = re.sub(r"::.*$", "", word)  # a pytest node id
        word = re.sub(r":\d+(-\d+)?$", "", word)  # a line number
        first = word.split("/", 1)[0]
        if "/" in word and first in TOP_LEVEL and re.fullmatch(r"[\w.*/-]+", word):
            yield word


def exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path.rstrip("/")))
    return (ROOT / path).exists()


def test_every_repository_path_named_exists() -> None:
    missing = sorted(
        {
            f"{piece.page.relative_to(ROOT)}:{piece.line}: {path}"
            for piece in every_code()
            for path in named_paths(piece)
            if not exists(path)
        }
    )
    assert missing == []


def test_every_link_between_pages_resolves() -> None:
    broken = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if not (page.parent / path).exists():
                    broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    assert broken == []


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {
        name
        for match in re.finditer(r"^([^\s:=#][^:=]*?)\s*:(?!=)", text, re.MULTILINE)
        for name in match.group(1).split()
    }


# Targets of other projects' Makefiles that the pages name as such.
FOREIGN_TARGETS = {"gen_openapi"}  # Kubernetes' own, in its source tree (docs/e2e.md)


def test_every_make_target_named_exists() -> None:
    targets = make_targets() | FOREIGN_TARGETS
    assert {"test", "demo", "e2e", "image"} <= targets
    unknown = []
    for piece in every_code():
        for match in re.finditer(r"(?<![\w./-])make((?:\s+[\w.-]+)+)", piece.text):
            for word in match.group(1).split():
                if word.startswith("-") or "=" in word:
                    continue
                if word not in targets:
                    unknown.append(f"{piece}: make {word}")
                break
    assert unknown == []


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("kube-rdma simulate --cluster c.json --workload w.yaml", []),
        ("kube-rdma certs generate --out d/ --force", []),
        ("kube-rdma certs generate --namespace kube-rdma --out d/", []),
        ("DEMO_PORT=1 kube-rdma webhook --nope", ["kube-rdma webhook has no --nope"]),
        ("kube-rdma nosuch --x", ["kube-rdma has no subcommand 'nosuch'"]),
        ("kube-rdma agent fly", ["kube-rdma agent has no subcommand 'fly'"]),
        ("kube-rdma webhook --no-such-flag | jq", ["kube-rdma webhook has no --no-such-flag"]),
        ("kube-rdma <subcommand> --help", []),
        ("kube-rdma --log-level debug explain a/b", []),
        (
            "kubectl rdma explain ns/pod --url http://x --bogus",
            ["kube-rdma explain has no --bogus"],
        ),
    ],
)
def test_the_command_reader_itself(text: str, problems: list[str]) -> None:
    piece = Code(ROOT / "README.md", 1, text)
    found = [p for words in invocations(piece) for p in command_problems(piece, words)]
    assert [f.split(": ", 2)[-1] for f in found] == problems
