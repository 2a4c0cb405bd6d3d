"""A gang mid-barrier survives its extender, or the whole scheduler pair, being killed.

Three members of a gang of four reach the bind barrier (their bind requests time out there and
they stay arrived); then the extender alone is killed while kube-scheduler keeps running, or
both are, and the fourth member is created while they are down. Asserted is only what holds on
every Kubernetes version: nothing is bound while the gang is incomplete, and the gang ends bound
whole, on four nodes. How long that takes depends on the version's scheduling queue
(docs/ha.md); the time is recorded as the 1.20 control plane's.
"""

from __future__ import annotations

import pytest

from testbed.controlplane.components import Stack
from testbed.controlplane.gangs import placements, restart_mid_barrier
from testbed.controlplane.rest import Rest

SIZE = 4


@pytest.mark.parametrize("restarted", ["extender", "extender and kube-scheduler"])
def test_a_gang_mid_barrier_is_bound_whole_after_a_restart(
    stack: Stack, api: Rest, namespace: str, restarted: str, timings: dict[str, float]
) -> None:
    pair = restarted != "extender"

    seconds = restart_mid_barrier(stack, api, namespace, "g", SIZE, pair=pair)

    timings[f"{restarted} restarted mid-barrier: restart to gang of {SIZE} bound whole"] = seconds
    where = placements(api, namespace, "g")
    assert len(set(where.values())) == SIZE, where
