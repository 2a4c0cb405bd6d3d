"""Where the extender's cluster model comes from, behind one small interface.

Two sources: the live cluster (list + watch through kubernetes-asyncio; binds create a real
`v1.Binding`) and a static snapshot file (for the demo, the simulator and tests; binds update
the in-memory model). Filters and scores only ever see `source.cluster`; gang identity also
reads `source.owners`.
"""

from __future__ import annotations

from typing import Protocol

from extender.cluster.model import Cluster
from extender.cluster.owners import Owners
from kube_rdma.core.objects import Json


class BindError(Exception):
    """A bind that did not happen; the message says why. Nothing of it was left applied."""


class LookupFailed(Exception):
    """The source could not say whether a pod exists; the message says why."""


class ClusterSource(Protocol):
    cluster: Cluster
    owners: Owners
    """The workload objects that own pods (PyTorchJobs, JobSets, ...), for gangs."""

    def ready(self) -> bool:
        """The model holds a full initial list of Nodes and Pods."""
        ...

    async def run(self) -> None:
        """Keep the model current until cancelled (returns at once for static sources)."""
        ...

    async def read_pod(self, namespace: str, name: str) -> Json | None:
        """The pod as the cluster holds it now, trimmed as the model keeps pods, for a pod the
        model does not hold yet; None when it does not exist. Raises LookupFailed."""
        ...

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        """Write `annotations` on the pod, then bind it to `node`; raises BindError, having
        undone the annotations, when either step fails."""
        ...

    async def reserve_claims(self, pod: Json, node: str) -> None:
        """Reserve the pod's resource claims for it again, before the extender binds it outside
        a kube-scheduler bind call (a gang member at its barrier, extender/cluster/claims.py);
        raises BindError when a claim is not allocated on `node` any more."""
        ...
