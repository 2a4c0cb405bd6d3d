"""The table `kube-rdma acceptance run` prints: a line per test, then a line per node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabric.run import Outcome


def table(outcomes: Sequence[Outcome], leaves: Mapping[str, str]) -> str:
    rows = [["TEST", "NODES", "LEAVES", "BUSBW", "EXPECTED", "VERDICT", "REASONS"]]
    for o in outcomes:
        answer = o.answer or {}
        rows.append(
            [
                o.group.name,
                ",".join(o.group.nodes),
                ",".join(sorted({leaves.get(n) or "-" for n in o.group.nodes})),
                _number(answer.get("max_busbw")),
                _number(answer.get("expected_busbw")),
                "pass" if o.passed else "fail",
                "; ".join([*answer.get("reasons", []), *o.reasons]),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in rows
    ]
    return "\n".join([*lines, "", *node_lines(outcomes)]) + "\n"


def node_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """Each node's verdict: failed when any of its tests failed, with those tests named."""
    tests: dict[str, list[Outcome]] = {}
    for o in outcomes:
        for node in o.group.nodes:
            tests.setdefault(node, []).append(o)
    lines = []
    for node, mine in tests.items():
        bad = [o.group.name for o in mine if not o.passed]
        lines.append(f"{node}: " + (f"failed ({', '.join(bad)})" if bad else "passed"))
    return lines


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) else "-"
