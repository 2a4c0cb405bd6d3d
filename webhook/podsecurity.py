"""What the namespace's Pod Security level allows the webhook to add.

Pod Security Admission validates a pod after every mutating webhook has run, and a pod it
rejects surfaces only as `FailedCreate` on the owning Job. So the webhook checks first and
either denies with a message that says what to change, or leaves the forbidden item out.
Baseline (and restricted, which includes it) forbids each of the three items a profile may add:
capabilities beyond the baseline set (IPC_LOCK is not in it), hostPath volumes and hostNetwork.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


class Level(StrEnum):
    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


class Item(StrEnum):
    """Things a profile may add that Pod Security levels restrict."""

    IPC_LOCK = "capability IPC_LOCK"
    HOST_PATH = "hostPath volume /dev/infiniband"
    HOST_NETWORK = "hostNetwork"


def enforced_level(
    labels: Mapping[str, str], default: Level = Level.PRIVILEGED
) -> tuple[Level, str | None]:
    """The namespace's enforced level, and a warning when the label holds no valid level.

    An unset label means the cluster default (the admission configuration's `defaults.enforce`,
    privileged unless the admin changed it). An invalid value is enforced as restricted, as Pod
    Security Admission does (pod-security-admission api.PolicyToEvaluate).
    """
    value = labels.get(ENFORCE_LABEL)
    if value is None:
        return default, None
    try:
        return Level(value), None
    except ValueError:
        return Level.RESTRICTED, (
            f"{ENFORCE_LABEL}={value!r} is not a Pod Security level; it is enforced as restricted"
        )


def forbidden(level: Level, wanted: set[Item]) -> list[Item]:
    """The items of `wanted` that `level` forbids, in a stable order."""
    if level is Level.PRIVILEGED:
        return []
    return [item for item in Item if item in wanted]
