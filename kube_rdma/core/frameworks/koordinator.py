"""Koordinator's gangs (koordinator-sh/koordinator, apis/extension/coscheduling.go): a gang
without a PodGroup, named and sized by annotations on its pods:
`gang.scheduling.koordinator.sh/name`, `-min-available` and `-total-number`.
"""

from __future__ import annotations

from collections.abc import Mapping

NAME = "gang.scheduling.koordinator.sh/name"
MIN_AVAILABLE = "gang.scheduling.koordinator.sh/min-available"
TOTAL_NUMBER = "gang.scheduling.koordinator.sh/total-number"

MARKS = (NAME,)
"""Keys whose presence marks a pod as a training job's."""


def gang_name(both: Mapping[str, str]) -> str | None:
    """The gang the pod names."""
    return both.get(NAME)
