"""What launchers and log collectors put in front of each line a rank prints, taken off before the
line is read, so that `acceptance verdict` and `diagnose` read the same text whoever ran the job.

The forms, outermost first as they stack:
- `kubectl logs --prefix`: `[pod/trainer-0/main] `; `--timestamps`: an RFC 3339 time with
  nanoseconds and a space (`2026-12-01T10:00:00.123456789Z `);
- a timestamp a launcher or a log shipper adds: `[2026-12-01 10:00:00]`, `2026-12-01 10:00:00,123`,
  `Tue Dec  1 10:00:00 2026`, each followed by a space or `: `;
- pdsh, and DeepSpeed's launcher through it: `HOST: ` (a host name, then a colon and a space);
- Open MPI 4 `--tag-output`: `[1,0]<stdout>:`; Open MPI 5 / PRRTE:
  `[prterun-host-123@1,0]<stdout>: ` (the job's name before the rank) and
  `[1,0][host:4123]<stdout>:`;
- torchrun `--tee 3`: `[default0]:` (the role, then the local rank).

NCCL's own lines are never taken for a prefix: `host:pid:tid [dev] NCCL ...` has no space after
its first colon, and its WARN lines' own `[2026-12-01 10:00:00] ` stamp is a prefix like any other.
"""

from __future__ import annotations

import re

PREFIXES = (
    re.compile(r"^\[pod/[^\]\s]+/[^\]\s]+\] "),
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? "),
    re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]:? ?"),
    re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?:? "),
    re.compile(r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}:? ?"),
    re.compile(r"^\[(?:[\w.-]+@)?\d+,\d+\](?:\[[\w.-]+:\d+\])?<std(?:out|err)>: ?"),
    re.compile(r"^\[[A-Za-z_]+\d+\]: ?"),
    re.compile(r"^[A-Za-z0-9][\w.-]*: "),
)


def strip(line: str) -> str:
    """`line` without the launchers' and collectors' prefixes, however many are stacked."""
    while True:
        for prefix in PREFIXES:
            if found := prefix.match(line):
                line = line[found.end() :]
                break
        else:
            return line
