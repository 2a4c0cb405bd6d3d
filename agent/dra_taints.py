"""DeviceTaintRules for this node's unhealthy RDMA devices, so kube-scheduler stops allocating them.

On a node whose RDMA NICs a DRA driver publishes in ResourceSlices (dranet's `dra.net`, the
SR-IOV driver, ...), the agent's port health becomes DRA's: for each NIC with a port that is not
healthy (down, or counting errors too fast: agent/health.py) or whose PCIe link trained below its
maximum, the agent keeps one DeviceTaintRule that taints exactly that device (driver, pool and
device name of the slice it was found in, agent/dra_devices.py) with
`kube-rdma.io/rdma-unhealthy:NoSchedule`, and deletes the rule when the NIC is healthy again
(the same hysteresis as the node's label). Claims that do not tolerate the taint are not
allocated the device; pods already running keep it (NoSchedule evicts nothing).

DeviceTaintRule is cluster-scoped and served as resource.k8s.io/v1alpha3 in Kubernetes 1.33-1.35,
v1beta2 (and v1alpha3) in 1.36, v1 (and both) in 1.37, only where the device-taint feature
(DRADeviceTaints in k8s.io/api) and its API version are enabled. The newest version served is
used, found through discovery and looked for again every RECHECK_SECONDS.

`mode`: "auto" publishes when the cluster serves the resource, "on" the same and warns when it
does not, "off" publishes nothing and deletes the rules an earlier agent of this node left, so
turning it off never leaves a device tainted. A rule is the agent's by its label
`kube-rdma.io/device-taint-node=<node>`; no other rule is read, changed or deleted. A rule is kept
while its device cannot be judged (its NIC gone from this scan, found ambiguous, or in a slice
that cannot be read), and deleted once its device is healthy or no longer published.

API calls are made only while some NIC is unhealthy or some rule is the agent's: a healthy node
costs none per scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from agent.dra_devices import DeviceId, node_devices
from agent.dra_devices import match as match_devices
from agent.problem_log import ProblemLog
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Nic, Topology
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, NotFound

log = logging.getLogger("kube_rdma.agent")

Mode = Literal["auto", "on", "off"]
GROUP: Final = "resource.k8s.io"
RULES: Final = "devicetaintrules"
SLICES: Final = "resourceslices"
RULE_VERSIONS: Final = ("v1", "v1beta2", "v1alpha3")
"""DeviceTaintRule: v1 from 1.37, v1beta2 from 1.36, v1alpha3 from 1.33 (k8s.io/api resource/)."""
SLICE_VERSIONS: Final = ("v1", "v1beta2", "v1beta1")
EFFECT: Final = "NoSchedule"
RECHECK_SECONDS: Final = 300.0
MAX_NAME: Final = 253
MAX_LABEL_VALUE: Final = 63
_NOT_NAME = re.compile(r"[^a-z0-9.-]+")


def reason(nic: Nic) -> str | None:
    """The taint's value for an unhealthy NIC (a label value), None for a healthy one."""
    if any(p.state != "ACTIVE" for p in nic.ports):
        return "PortDown"
    if any(not p.healthy for p in nic.ports):
        return "PortUnhealthy"
    if nic.pcie is not None and nic.pcie.degraded:
        return "PCIeLinkDegraded"
    return None


def rule_name(node: str, device: DeviceId) -> str:
    """One rule per device: `kube-rdma-<node>-<device>-<hash>`, a valid DNS subdomain whatever
    the names hold, the hash (of driver, pool and device, exactly) keeping it unique."""
    digest = hashlib.sha256(f"{device.driver}\0{device.pool}\0{device.device}".encode())
    tail = digest.hexdigest()[:12]
    readable = _NOT_NAME.sub("-", f"{node}-{device.device}".lower())
    readable = re.sub(r"-*\.-*|\.\.+", ".", readable).strip(".-")
    readable = readable[: MAX_NAME - len("kube-rdma--") - len(tail)].rstrip(".-")
    return f"kube-rdma-{readable}-{tail}" if readable else f"kube-rdma-{tail}"


def node_label(node: str) -> str:
    """The rule label's value for `node`: its name, or a hash of a name too long for a label."""
    if len(node) <= MAX_LABEL_VALUE:
        return node
    return "h-" + hashlib.sha256(node.encode()).hexdigest()[:40]


def rule_body(api_version: str, node: str, device: DeviceId, value: str) -> Json:
    return {
        "apiVersion": f"{GROUP}/{api_version}",
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": rule_name(node, device),
            "labels": {keys.DEVICE_TAINT_NODE: node_label(node)},
        },
        "spec": {
            "deviceSelector": {
                "driver": device.driver,
                "pool": device.pool,
                "device": device.device,
            },
            "taint": {"key": keys.RDMA_UNHEALTHY, "value": value, "effect": EFFECT},
        },
    }


def selected(rule: Json) -> DeviceId | None:
    """The device a rule of ours selects; None when its selector is not one device's."""
    selector = (rule.get("spec") or {}).get("deviceSelector") or {}
    driver, pool, device = (selector.get(k) for k in ("driver", "pool", "device"))
    if not (isinstance(driver, str) and isinstance(pool, str) and isinstance(device, str)):
        return None
    return DeviceId(driver, pool, device)


class DeviceTaints:
    """Keeps this node's DeviceTaintRules in line with its NICs' health, one scan at a time."""

    def __init__(
        self,
        custom_api: Any,
        node: str,
        mode: Mode = "auto",
        clock: Callable[[], float] = time.monotonic,
        recheck: float = RECHECK_SECONDS,
    ) -> None:
        self._api = custom_api
        self._node = node
        self._mode = mode
        self._clock = clock
        self._recheck = recheck
        self._versions: tuple[str, str] | None = None
        self._looked_at: float | None = None
        self._ours: set[str] | None = None
        """Names of our rules as last seen; None until listed."""
        self._problems = ProblemLog(log, node)

    async def sync(self, topology: Topology) -> None:
        """Create, update and delete this node's rules for `topology` (judged by health);
        raises ApiError, after which the next scan tries again."""
        if not await self._served():
            return
        unhealthy = {n.name: r for n in topology.nics if (r := reason(n)) is not None}
        if self._mode == "off":
            unhealthy = {}
        if not unhealthy and self._ours == set():
            self._problems.report([])  # what was skipped is over
            return
        rule_version, slice_version = self._versions or ("", "")
        ours = await self._list_ours(rule_version)
        if not unhealthy and not ours:
            self._problems.report([])
            return
        if self._mode == "off":
            wanted: dict[str, Json] = {}
            keep: set[str] = set()
        else:
            wanted, keep = await self._wanted(topology, unhealthy, ours, slice_version)
        await self._apply(rule_version, ours, wanted, keep)

    async def _served(self) -> bool:
        """Whether the cluster serves DeviceTaintRules (and ResourceSlices), asked again every
        `recheck` seconds while not."""
        now = self._clock()
        if self._versions is not None:
            return True
        if self._looked_at is not None and now - self._looked_at < self._recheck:
            return False
        rules = await self._newest(RULES, RULE_VERSIONS)
        slices = await self._newest(SLICES, SLICE_VERSIONS)
        self._looked_at = now  # an answer: not asked again before the recheck
        if rules is None or slices is None:
            if self._mode == "on":
                log.warning(
                    "--dra-device-taints on, but this cluster serves no %s of %s (%s): no "
                    "device is tainted; looking again in %.0fs",
                    "DeviceTaintRules" if rules is None else "ResourceSlices",
                    GROUP,
                    ", ".join(RULE_VERSIONS if rules is None else SLICE_VERSIONS),
                    self._recheck,
                    extra={"node": self._node},
                )
            return False
        self._versions = (rules, slices)
        log.info(
            "device taints: DeviceTaintRules of %s/%s", GROUP, rules, extra={"node": self._node}
        )
        return True

    async def _newest(self, plural: str, versions: tuple[str, ...]) -> str | None:
        for version in versions:
            try:
                body = await call(
                    f"discover {GROUP}/{version}", self._api.get_api_resources, GROUP, version
                )
            except NotFound:
                continue
            if any(r.get("name") == plural for r in body.get("resources") or []):
                return version
        return None

    async def _list_ours(self, version: str) -> dict[str, Json]:
        body = await call(
            "list DeviceTaintRules",
            self._api.list_cluster_custom_object,
            GROUP,
            version,
            RULES,
            label_selector=f"{keys.DEVICE_TAINT_NODE}={node_label(self._node)}",
        )
        ours = {r["metadata"]["name"]: r for r in body.get("items") or []}
        self._ours = set(ours)
        return ours

    async def _wanted(
        self,
        topology: Topology,
        unhealthy: Mapping[str, str],
        ours: Mapping[str, Json],
        version: str,
    ) -> tuple[dict[str, Json], set[str]]:
        """The rules the node should carry, and those of ours to keep as they are (their device
        cannot be judged now)."""
        body = await call(
            f"list ResourceSlices of {self._node}",
            self._api.list_cluster_custom_object,
            GROUP,
            version,
            SLICES,
            field_selector=f"spec.nodeName={self._node}",
        )
        published = node_devices(body.get("items") or [])
        matches = match_devices(topology.nics, published.devices)
        unmatched = [
            f"NIC {nic} is unhealthy but matches no device of this node's ResourceSlices"
            for nic in matches.unmatched
            if nic in unhealthy
        ]
        # The policy kube-rdma-agent-own-devices lets the agent taint only devices of the pool
        # named after its node (as dranet and NVIDIA's driver name them).
        foreign = {
            nic: device for nic, device in matches.devices.items() if device.id.pool != self._node
        }
        unmatched += [
            f"NIC {nic} is unhealthy but its device {device.id} is in pool {device.id.pool!r}, "
            f"not in the pool named after this node: the agent may not taint it "
            "(manifests/agent/devicetaintpolicy.yaml)"
            for nic, device in foreign.items()
            if nic in unhealthy
        ]
        lines = [*published.refused, *matches.skipped, *unmatched]
        self._problems.report([f"device taints: {line}" for line in lines])
        rules_version = self._versions[0] if self._versions else ""
        wanted = {
            rule_name(self._node, device.id): rule_body(
                rules_version, self._node, device.id, unhealthy[nic]
            )
            for nic, device in matches.devices.items()
            if nic in unhealthy and nic not in foreign
        }
        judged = {device.id for device in matches.devices.values()}
        known = {device.id for device in published.devices}
        keep = set()
        for name, rule in ours.items():
            device = selected(rule)
            unknown = (
                device is not None
                and device not in judged
                and (device in known or published.refused)
            )
            if unknown and name not in wanted:
                keep.add(name)
        return wanted, keep

    async def _apply(
        self, version: str, ours: Mapping[str, Json], wanted: Mapping[str, Json], keep: set[str]
    ) -> None:
        api = self._api
        extra = {"node": self._node}
        for name, body in wanted.items():
            taint = body["spec"]["taint"]
            device = body["spec"]["deviceSelector"]
            what = f"{device['driver']}/{device['pool']}/{device['device']}"
            if name not in ours:
                await call(
                    f"create DeviceTaintRule {name}",
                    api.create_cluster_custom_object,
                    GROUP,
                    version,
                    RULES,
                    body,
                )
                log.info(
                    "tainted device %s (%s): DeviceTaintRule %s",
                    what,
                    taint["value"],
                    name,
                    extra=extra,
                )
            elif _taint(ours[name]) != (taint["key"], taint["value"], EFFECT):
                patch = {"spec": {"taint": taint}}
                await call(
                    f"patch DeviceTaintRule {name}",
                    api.patch_cluster_custom_object,
                    GROUP,
                    version,
                    RULES,
                    name,
                    patch,
                    _content_type="application/merge-patch+json",
                )
                log.info(
                    "device %s is now %s: DeviceTaintRule %s",
                    what,
                    taint["value"],
                    name,
                    extra=extra,
                )
        for name in sorted(set(ours) - set(wanted) - keep):
            with contextlib.suppress(NotFound):  # gone already: what was wanted
                await call(
                    f"delete DeviceTaintRule {name}",
                    api.delete_cluster_custom_object,
                    GROUP,
                    version,
                    RULES,
                    name,
                )
            log.info("removed DeviceTaintRule %s", name, extra=extra)
        self._ours = set(wanted) | (keep & set(ours))


def _taint(rule: Json) -> tuple[Any, Any, Any]:
    taint = (rule.get("spec") or {}).get("taint") or {}
    return taint.get("key"), taint.get("value"), taint.get("effect")


__all__ = ["ApiError", "DeviceTaints", "Mode", "reason", "rule_body", "rule_name"]
