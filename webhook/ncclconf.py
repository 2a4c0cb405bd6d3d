"""GID strategy `pod`: an init container resolves NCCL's settings inside the pod's own network
namespace and writes them to a file the training containers read.

Only a look from inside the pod is always right: under macvlan each pod's GIDs sit at different
indexes, and an SR-IOV pod sees its VF's device under its own name. The init container runs
`kube-rdma nccl-conf`, which writes `NCCL_IB_GID_INDEX`, `NCCL_IB_HCA` and
`NCCL_SOCKET_IFNAME` as `KEY=VALUE` lines into a small memory-backed volume. NCCL reads the
environment first, then the file named by NCCL_CONF_FILE (or ~/.nccl.conf), then
/etc/nccl.conf, never overwriting a value already set (NCCL's src/misc/param.cc). So the file is
mounted at /etc/nccl.conf by default, which ranks that mpirun starts over ssh read too.

On a DRA cluster the init container names, in its `resources.claims`, the pod's claims (or
their requests) that give the training containers their RDMA NICs, so that kubelet hands it
those devices and their device metadata files as well: the resolver then takes the HCAs, GID
addresses and interfaces from the claims (agent/claim_devices.py) instead of discovering them.

Everything is written in the form the apiserver stores after defaulting, so a second pass over
the stored pod compares equal.
"""

from __future__ import annotations

from collections.abc import Sequence

from kube_rdma.core.frameworks import mpi
from kube_rdma.core.objects import Json
from webhook.denied import Denied
from webhook.podspec import mapping, mount_at, sequence
from webhook.profiles import ConfPath, Gid

CONF_VOLUME = "kube-rdma-nccl-conf"
RESOLVER = "kube-rdma-nccl-conf"
CONF_DIR = "/run/kube-rdma"
CONF_FILE = "nccl.conf"
CONF_PATH = f"{CONF_DIR}/{CONF_FILE}"
ETC_PATH = "/etc/nccl.conf"
CONF_SIZE = "1Mi"
RESOLVER_RESOURCES = {"cpu": "250m", "memory": "128Mi"}
RESOLVER_USER = 65532  # the kube-rdma image's non-root user
# The settings the resolver writes: a value of the container's own in env would win over it.
RESOLVED_ENV = ("NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")


def pull_policy(image: str) -> str:
    """The imagePullPolicy the apiserver defaults: Always for `:latest` or no tag, unless
    pinned by digest (kubernetes pkg/apis/core/v1/defaults.go)."""
    if "@" in image:
        return "IfNotPresent"
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def restricted() -> Json:
    """A securityContext that Pod Security's restricted level accepts."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": RESOLVER_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def file_settings(env: Sequence[Json]) -> list[str]:
    """The profile's own NCCL settings, as `--set` arguments: the resolver writes them into the
    file after what it resolves, so ranks that mpirun starts over ssh (a fresh environment) get
    them too. In env they also stay, for the processes the container starts itself."""
    return [
        f"--set={e['name']}={e['value']}"
        for e in env
        if e["name"].startswith("NCCL_") and e["name"] != "NCCL_CONF_FILE" and "value" in e
    ]


def resolver(gid: Gid, settings: Sequence[str] = (), claims: Sequence[Json] = ()) -> Json:
    """The init container, restricted-compatible, as the apiserver stores it. `claims`: its
    `resources.claims` (webhook.dra.kinds.PodClaims.nic_references)."""
    args = ["nccl-conf", "--out", CONF_PATH, "--roce-version", str(gid.roce_version)]
    args += ["--family", gid.family, "--on-missing", gid.on_missing.value, *settings]
    return {
        "name": RESOLVER,
        "image": gid.image,
        "imagePullPolicy": pull_policy(gid.image),
        "args": args,
        # Requests equal to limits: a pod is Guaranteed only when every container, init
        # containers included, is, and training pods often must be (the static CPU manager
        # pins CPUs only for Guaranteed pods). A run peaks below 50 MB.
        "resources": {
            **({"claims": [dict(c) for c in claims]} if claims else {}),
            "limits": dict(RESOLVER_RESOURCES),
            "requests": dict(RESOLVER_RESOURCES),
        },
        "securityContext": restricted(),
        "terminationMessagePath": "/dev/termination-log",
        # The resolver writes its one-line reason there; a crash before that still shows.
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"name": CONF_VOLUME, "mountPath": CONF_DIR}],
    }


def add_resolver(
    spec: Json,
    gid: Gid,
    readers: list[Json],
    settings: Sequence[str] = (),
    claims: Sequence[Json] = (),
) -> None:
    """Add the init container once, before the first init container that reads the file; one
    there already (a second pass, a re-invocation after another webhook added claims) gets the
    claim references it lacks."""
    inits: list[Json] = sequence(spec, "initContainers")
    current = next((c for c in inits if c.get("name") == RESOLVER), None)
    if current is not None:
        if (current.get("args") or [])[:1] != ["nccl-conf"]:
            raise Denied(
                f"the pod has its own init container named {RESOLVER}, a name kube-rdma "
                "reserves; rename it"
            )
        _name_claims(current, claims)
        return
    ids = {id(c) for c in readers}
    position = next((i for i, c in enumerate(inits) if id(c) in ids), len(inits))
    inits.insert(position, resolver(gid, settings, claims))


def _name_claims(container: Json, claims: Sequence[Json]) -> None:
    """Add the references `container` lacks, by name and request as the apiserver tells
    references apart (a duplicate pair is refused)."""
    if not claims:
        return
    named = sequence(mapping(container, "resources"), "claims")
    have = {_claim_key(c) for c in named if isinstance(c, dict)}
    named += [dict(c) for c in claims if _claim_key(c) not in have]


def _claim_key(ref: Json) -> tuple[object, object]:
    return ref.get("name"), ref.get("request") or ""


def conf_mount(gid: Gid) -> Json:
    if gid.conf_path is ConfPath.ETC:
        return {"name": CONF_VOLUME, "mountPath": ETC_PATH, "subPath": CONF_FILE, "readOnly": True}
    return {"name": CONF_VOLUME, "mountPath": CONF_DIR, "readOnly": True}


def mount_conf(container: Json, gid: Gid, warnings: list[str]) -> None:
    """Mount the resolved file where the profile says, keeping a mount of the user's there."""
    wanted = conf_mount(gid)
    own = mount_at(container, wanted["mountPath"])
    if own is None:
        sequence(container, "volumeMounts").append(wanted)
    elif own.get("name") != CONF_VOLUME:
        warnings.append(
            f"kube-rdma: container {container.get('name')} mounts its own {wanted['mountPath']} "
            f"({own.get('name')}); kept, so it does not read what {RESOLVER} resolves"
        )


def conf_env(gid: Gid) -> list[Json]:
    if gid.conf_path is ConfPath.ENV:
        return [{"name": "NCCL_CONF_FILE", "value": CONF_PATH}]
    return []


def mpi_warning(metadata: Json, gid: Gid, resolves: bool) -> str | None:
    if not mpi.is_worker(metadata):
        return None
    if not resolves:
        return (
            "kube-rdma: this pod looks like an MPIJob worker: the NCCL variables kube-rdma adds "
            "to env do not reach the ranks mpirun starts over ssh (a fresh environment); use a "
            "profile with gid.strategy: pod, which writes them to /etc/nccl.conf, or have "
            "mpirun pass them on (-x NAME)"
        )
    if gid.conf_path is not ConfPath.ENV:
        return None
    return (
        "kube-rdma: this pod looks like an MPIJob worker: NCCL_CONF_FILE does not reach the "
        "ranks mpirun starts over ssh, so they miss the settings kube-rdma resolves; use a "
        "profile with gid.confPath: etc, which mounts them at /etc/nccl.conf"
    )
