"""How `kube-rdma explain` reaches the extender: at the URL given (`--extender`), or else through
the apiserver, with a port-forward to the scheduler pod that serves now, as `kubectl
port-forward` would.

The extender listens on 127.0.0.1 inside the rdma-scheduler pod (manifests/scheduler): each
kube-scheduler calls its own pod's extender, and the replica that holds the leader-election
Lease schedules (configmap.yaml's leaderElection: resourceName rdma-scheduler, resourceNamespace
kube-rdma). client-go writes the Lease's holderIdentity as `<hostname>_<uuid>`, the hostname
being the pod's name, so the serving pod is the holderIdentity up to its last "_". Its port is
8888 (deployment.yaml's --port). Run inside that very pod (kubectl exec), the command asks its
loopback directly. What fails on the way says why and what to do.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

LEASE = "kube-rdma/rdma-scheduler"
PORT = 8888
TIMEOUT = 10.0


class Unreachable(Exception):
    """The extender cannot be reached this way; the message says why and what to do."""


@dataclass(frozen=True)
class Leader:
    namespace: str
    pod: str
    lease: str


@dataclass
class Route:
    """Where the extender is reached, and how to say it."""

    url: str
    via: str
    """"the extender at URL", "the extender through port-forward to NS/POD:PORT"."""
    how: str
    """"--extender", "Lease NS/NAME"."""
    errors: list[str]
    """What went wrong on the port-forward's connections (kube_rdma/kube/portforward.py)."""
    hint: str

    def failure(self, error: BaseException) -> str:
        """Why a request on this route got no answer, and what to do."""
        reason = self.errors[-1] if self.errors else _reason(error)
        return f"cannot reach {self.via}: {reason}; {self.hint}"


def direct(url: str, lease: str = LEASE, port: int = PORT) -> Route:
    namespace = lease.partition("/")[0]
    hint = (
        "the extender listens on 127.0.0.1 in the scheduler pod: leave out --extender to reach "
        f"it through the apiserver, or give --extender after `kubectl port-forward -n "
        f"{namespace} pod/POD {port}` (POD: the holder of Lease {lease}: kubectl get lease -n "
        f"{namespace} {lease.partition('/')[2]})"
    )
    url = url.rstrip("/")
    return Route(url, f"the extender at {url}", "--extender", [], hint)


@contextlib.asynccontextmanager
async def through_apiserver(lease: str, port: int) -> AsyncIterator[Route]:
    """A port-forward to `port` of the pod that holds `lease`, while the block runs."""
    from kube_rdma.kube.portforward import port_forward

    leader = await find_leader(lease)
    if leader.pod == socket.gethostname():
        # Run in the leading pod itself (kubectl exec): its extender is on the loopback.
        url = f"http://127.0.0.1:{port}"
        hint = f"check the extender: kubectl logs -n {leader.namespace} {leader.pod} -c extender"
        yield Route(url, f"the extender of this pod at {url}", f"Lease {lease}", [], hint)
        return
    async with port_forward(leader.namespace, leader.pod, port) as forward:
        hint = (
            f"check the extender: kubectl logs -n {leader.namespace} {leader.pod} -c extender; "
            f"or give --extender URL after `kubectl port-forward -n {leader.namespace} "
            f"pod/{leader.pod} {port}`"
        )
        via = f"the extender through port-forward to {forward}"
        url = f"http://127.0.0.1:{forward.local_port}"
        yield Route(url, via, f"Lease {lease}", forward.errors, hint)


async def find_leader(lease: str) -> Leader:
    """The pod that holds `lease` (NAMESPACE/NAME); raises Unreachable."""
    from kubernetes_asyncio import client

    from kube_rdma.kube.client import call
    from kube_rdma.kube.errors import ApiError, NotFound

    namespace, _, name = lease.partition("/")
    if not namespace or not name:
        raise ValueError(f"--lease {lease!r}: give it as NAMESPACE/NAME")
    also = "or give --extender URL"
    async with client.ApiClient() as api:
        try:
            found = await call(
                f"read Lease {lease}",
                client.CoordinationV1Api(api).read_namespaced_lease,
                name,
                namespace,
                request_timeout=TIMEOUT,
            )
        except NotFound:
            raise Unreachable(
                f"no Lease {lease}: is the rdma-scheduler deployed (manifests/scheduler), with "
                f"that leader-election lease? Give --lease NAMESPACE/NAME, {also}"
            ) from None
        except ApiError as e:
            raise Unreachable(f"cannot read Lease {lease}: {e}; {also}") from None
        holder = str((found.get("spec") or {}).get("holderIdentity") or "")
        if not holder:
            raise Unreachable(
                f"Lease {lease} is held by nobody: no rdma-scheduler replica leads now; see "
                f"kubectl get pods -n {namespace}, {also}"
            )
        pod = holder.rpartition("_")[0] or holder
        try:
            await call(
                f"read Pod {namespace}/{pod}",
                client.CoreV1Api(api).read_namespaced_pod,
                pod,
                namespace,
                request_timeout=TIMEOUT,
            )
        except NotFound:
            raise Unreachable(
                f"Lease {lease} is held by {holder}, but pod {namespace}/{pod} does not exist "
                f"(a leader that just went: retry once another replica took the lease), {also}"
            ) from None
        except ApiError as e:
            raise Unreachable(f"cannot read the leader's pod {namespace}/{pod}: {e}") from None
    return Leader(namespace, pod, lease)


def _reason(error: Any) -> str:
    reason = getattr(error, "reason", None)
    return str(reason if reason is not None else error)
