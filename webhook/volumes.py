"""kube-rdma's pod volumes: added when a container mounts them, and never someone else's edited.

A volume of the user's that merely has one of kube-rdma's names is a conflict, not ours to edit.
"""

from __future__ import annotations

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import parse_bytes
from webhook.denied import Denied
from webhook.devices import INFINIBAND_PATH, INFINIBAND_VOLUME
from webhook.ncclconf import CONF_SIZE, CONF_VOLUME
from webhook.podspec import containers, sequence, volume
from webhook.shm import SHM_VOLUME, shm_source


def _infiniband() -> Json:
    # `type: ""` is what the apiserver's defaulting stores for an unset hostPath type.
    return {"hostPath": {"path": INFINIBAND_PATH, "type": ""}}


def _conf() -> Json:
    return {"emptyDir": {"medium": "Memory", "sizeLimit": CONF_SIZE}}


def ensure_volumes(spec: Json, shm_size: int | None) -> None:
    """Add kube-rdma's volumes that some container mounts; keep our /dev/shm's size current."""
    mounted = {m.get("name") for c in containers(spec) for m in c.get("volumeMounts") or []}
    wanted: dict[str, Json] = {INFINIBAND_VOLUME: _infiniband(), CONF_VOLUME: _conf()}
    if shm_size is not None:
        wanted[SHM_VOLUME] = shm_source(shm_size)
    for name, source in wanted.items():
        if name not in mounted:
            continue
        current = volume(spec, name)
        if current is None:
            sequence(spec, "volumes").append({"name": name, **source})
        elif name == SHM_VOLUME:
            _refresh_shm(current, source)
        elif not _same_kind(current, source):
            raise _reserved(name)


def _same_kind(current: Json, source: Json) -> bool:
    if "hostPath" in source:
        return bool((current.get("hostPath") or {}).get("path") == source["hostPath"]["path"])
    empty_dir = current.get("emptyDir")
    return isinstance(empty_dir, dict) and empty_dir.get("medium") == "Memory"


def _refresh_shm(current: Json, source: Json) -> None:
    empty_dir = current.get("emptyDir")
    if not isinstance(empty_dir, dict) or empty_dir.get("medium") != "Memory":
        raise _reserved(SHM_VOLUME)
    wanted = source["emptyDir"]["sizeLimit"]
    size = empty_dir.get("sizeLimit")
    if size is None or parse_bytes(size) != parse_bytes(wanted):
        empty_dir["sizeLimit"] = wanted


def _reserved(name: str) -> Denied:
    return Denied(f"the pod has its own volume named {name}, a name kube-rdma reserves; rename it")
