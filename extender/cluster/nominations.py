"""Writing a pending pod's `status.nominatedNodeName`: the node its gang's plan holds for it.

kube-scheduler tries a pod's nominated node before it searches (pkg/scheduler/schedule_one.go,
`evaluateNominatedNode`; PreferNominatedNode, on by default from 1.22, GA in 1.24): its own
filters and the filtering extenders on that one node, and when it passes, the pod goes there,
with no search, no sample of the nodes and no scoring. It also counts a nominated pod as using
its node when it filters pods of no higher priority (RunFilterPluginsWithNominatedPods). From
1.35 (NominatedNodeNameForExpectation, beta) a component other than the scheduler writing the
field to say where a pod is expected to go is the documented use of it.

So a gang member nominated to its planned node costs one extender call of one name, whatever
the size of the cluster and whatever share of the nodes kube-scheduler samples; without it, the
planned node must be among the nodes kube-scheduler's search sends, which at 100,000 nodes is
5 % of them unless `percentageOfNodesToScore` is raised, and each member's calls carry every
name it sends.

The write is a JSON patch of the status subresource whose first operation tests the pod's uid:
a pod deleted and created again under the same name is never nominated by what was planned for
the one before it.
"""

from __future__ import annotations

from typing import Any, Protocol

from extender.cluster.model import Cluster
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, Invalid, NotFound

JSON_PATCH = "application/json-patch+json"
REQUEST_TIMEOUT_SECONDS = 10.0


class NominationFailed(Exception):
    """The apiserver did not write the nomination: the pod is gone or is another pod now
    (`gone`), or it refused for a reason of its own (RBAC, a fault), which an admin should see."""

    def __init__(self, message: str, gone: bool = True) -> None:
        super().__init__(message)
        self.gone = gone


class Nominations(Protocol):
    async def nominate(self, namespace: str, name: str, uid: str, node: str | None) -> None:
        """Set (None: clear) the pod's nominated node; raises NominationFailed."""
        ...


def nomination_patch(uid: str, node: str | None) -> list[dict[str, Any]]:
    """The JSON patch that nominates this uid of a pod to `node` (None: to none)."""
    return [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "add", "path": "/status/nominatedNodeName", "value": node},
    ]


class LiveNominations:
    def __init__(self, core_api: Any) -> None:
        self._api = core_api

    async def nominate(self, namespace: str, name: str, uid: str, node: str | None) -> None:
        try:
            await call(
                f"patch pod {namespace}/{name} status",
                self._api.patch_namespaced_pod_status,
                name,
                namespace,
                nomination_patch(uid, node),
                _content_type=JSON_PATCH,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except (NotFound, Invalid) as e:  # the uid test failed: another pod of that name
            raise NominationFailed(f"pod {namespace}/{name}: {e}") from e
        except ApiError as e:
            raise NominationFailed(f"pod {namespace}/{name}: {e}", gone=False) from e


class ModelNominations:
    """Nominations written into the cluster model itself, as the apiserver's watch would bring
    them back (a snapshot, a bench): refused for a pod the model lacks or of another uid."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    async def nominate(self, namespace: str, name: str, uid: str, node: str | None) -> None:
        pod = self._cluster.pod(namespace, name)
        if pod is None or str((pod.get("metadata") or {}).get("uid") or "") != uid:
            raise NominationFailed(f"pod {namespace}/{name}: gone, or not uid {uid}")
        status = {**(pod.get("status") or {}), "nominatedNodeName": node}
        self._cluster.upsert_pod({**pod, "status": status})
