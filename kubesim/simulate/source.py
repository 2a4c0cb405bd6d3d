"""The extender's cluster source in a simulation: the model a snapshot file gives, kept current by
the simulation's apiserver, whose binds are writes to that apiserver.

It plays the live source's part (extender/cluster/live.py) without its list and watch: the
store tells the model of every pod write as it happens (`follow`), and of every ResourceClaim
write (`follow_claims`), so the filters and scores see the binds and the claims allocated by
the emulator and by the extender alike. `reserve_claims` puts a gang member back in its claims'
`reservedFor` before the extender binds it, as the live source's ClaimReservations do
(extender/cluster/claims.py says why). `StoreDisruptions` plays
extender/cluster/disruptions.py's LiveDisruptions: the extender's evictions, deletes and Events
are the store's, so PodDisruptionBudgets hold as the apiserver holds them.
"""

from __future__ import annotations

from extender.cluster import dra_objects
from extender.cluster.claims import claim_names, reserved
from extender.cluster.disruptions import Refused, event_for
from extender.cluster.model import Cluster
from extender.cluster.nominations import NominationFailed
from extender.cluster.pods import pod_key
from extender.cluster.snapshot import SnapshotSource
from extender.cluster.source import BindError
from extender.cluster.trim import trim_pod
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import ApiError, NotFound
from kubesim.simulate.dra import ClaimListener
from kubesim.simulate.store import EPOCH, MemoryApiserver, PodListener


def follow(cluster: Cluster) -> PodListener:
    """A store listener that keeps `cluster`'s pods as the store's."""

    def changed(old: Json | None, new: Json | None) -> None:
        if new is not None:
            cluster.upsert_pod(trim_pod(new))
        elif old is not None:
            cluster.delete_pod(pod_key(old), old)

    return changed


def follow_claims(cluster: Cluster) -> ClaimListener:
    """A DraStore listener that keeps `cluster`'s claims as the store's."""

    def changed(event: str, claim: Json) -> None:
        dra_objects.apply(cluster, "ResourceClaim", event, claim)

    return changed


class SimulatedSource:
    """A ClusterSource over `snapshot`'s model, binding through `store`."""

    def __init__(self, snapshot: SnapshotSource, store: MemoryApiserver) -> None:
        self.cluster = snapshot.cluster
        self.owners = snapshot.owners
        self._store = store

    def ready(self) -> bool:
        return True

    async def run(self) -> None:
        return None

    async def read_pod(self, namespace: str, name: str) -> Json | None:
        pod = self._store.pods().get((namespace, name))
        return None if pod is None else trim_pod(pod)

    async def reserve_claims(self, pod: Json, node: str) -> None:
        """Raises BindError when a claim cannot be reserved for the pod on `node`."""
        dra = self._store.dra()
        names, unknown = claim_names(pod)
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        shown = f"pod {namespace}/{meta.get('name')}"
        if unknown:
            raise BindError(f"{shown}: its claims {', '.join(unknown)} are not created yet")
        if not names:
            return
        if dra is None:
            raise BindError(f"{shown} has resource claims, and the cluster serves no DRA API")
        for name in names:
            try:
                claim = await dra.get_claim(namespace, name)
            except NotFound as e:
                raise BindError(f"cannot reserve ResourceClaim {namespace}/{name}: {e}") from e
            updated = reserved(claim, pod, node)
            if isinstance(updated, str):
                raise BindError(updated)
            if updated is not claim:
                dra.replace_status(namespace, name, updated["status"])

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        try:
            self._store.bind_now(namespace, name, uid, node, annotations)
        except ApiError as e:
            raise BindError(f"cannot bind pod {namespace}/{name} to node {node}: {e}") from e


class StoreDisruptions:
    """The extender's Disruptions (extender/cluster/disruptions.py) as calls to `store`."""

    def __init__(self, store: MemoryApiserver) -> None:
        self._store = store

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        if not self._same(namespace, name, uid):
            return
        try:
            await self._store.evict(namespace, name, dry_run)
        except NotFound:
            return
        except ApiError as e:
            raise Refused(f"pod {namespace}/{name}: {e.message}") from e

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        if not self._same(namespace, name, uid):
            return
        try:
            await self._store.delete_pod(namespace, name)
        except NotFound:
            return

    async def event(self, pod: Json, reason: str, message: str) -> None:
        event = event_for(pod, reason, message, EPOCH)
        await self._store.create_event(event["metadata"]["namespace"], event)

    def _same(self, namespace: str, name: str, uid: str) -> bool:
        return same_pod(self._store, namespace, name, uid)


class StoreNominations:
    """The extender's Nominations (extender/cluster/nominations.py) as status patches to
    `store`, refused for a pod gone or of another uid, as the live patch's uid test is."""

    def __init__(self, store: MemoryApiserver) -> None:
        self._store = store

    async def nominate(self, namespace: str, name: str, uid: str, node: str | None) -> None:
        if not same_pod(self._store, namespace, name, uid):
            raise NominationFailed(f"pod {namespace}/{name}: gone, or not uid {uid}")
        await self._store.patch_pod_status(namespace, name, {"nominatedNodeName": node})


def same_pod(store: MemoryApiserver, namespace: str, name: str, uid: str) -> bool:
    """The pod exists with that uid (a precondition: a pod recreated under the same name is
    another pod)."""
    pod = store.pods().get((namespace, name))
    return pod is not None and (not uid or pod["metadata"].get("uid") == uid)
