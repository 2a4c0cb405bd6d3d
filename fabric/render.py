"""The Kubernetes objects of an acceptance run: nccl-tests on exactly the nodes asked for,
prepared by kube-rdma itself.

The launcher is plain pods, one test per group of nodes (fabric/plan.py):
- a worker pod per node, pinned there by node affinity (so the scheduler, and kube-rdma's
  extender, still judge it), opted into the RDMA profile by annotation, so the webhook prepares
  it exactly as it prepares a training pod, with `kube-rdma.io/debug: "true"` for NCCL's
  transport lines, and one gang per test, placed all or nothing. It runs sshd;
- a headless Service giving the workers stable names (`w0.<service>`);
- a launcher pod (no GPU, never opted in) that runs `mpirun` over ssh and exits with its status;
  its log is the test's output;
- one Secret with the run's ssh key.

Why not MPIJob or JobSet: both need an operator the cluster may not run, and an MPIJob's pods
exist only once the operator made them, so neither the webhook nor the extender could be shown
the exact pods beforehand. Plain pods need nothing but kube-rdma, and `kubectl apply` of the
rendered file works too: a later round's workers request the same GPUs and wait for the earlier
round's to finish. MPI ranks started over ssh get a fresh environment, so each worker writes
the NCCL variables kube-rdma injected to /etc/nccl.conf (unless kube-rdma's resolver already
wrote one), which NCCL reads.

The image must hold nccl-tests built with MPI, Open MPI and sshd: NVIDIA's and CoreWeave's
nccl-tests images do (`DEFAULT_IMAGE`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from fabric.plan import Group
from kube_rdma.core import keys
from kube_rdma.core.objects import Json

DEFAULT_IMAGE = "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e"
DEFAULT_PROGRAM = "/opt/nccl_tests/build/all_reduce_perf"
"""Where that image keeps all_reduce_perf (the others *_perf beside it)."""
SSH_PORT = 2222
SSH_DIR = "/etc/kube-rdma-ssh"
DONE = "/tmp/kube-rdma-acceptance-done"
APP = "kube-rdma-acceptance"
SOAK_ITERATIONS = 50
_SIZE = re.compile(r"^\d+[KMG]?$")


@dataclass(frozen=True)
class Options:
    run: str
    """The run's name: every object's name starts with it."""
    namespace: str
    profile: str
    image: str = DEFAULT_IMAGE
    program: str = DEFAULT_PROGRAM
    min_bytes: str = "8"
    max_bytes: str = "8G"
    gpus_per_node: int = 8
    gpu_resource: str = "nvidia.com/gpu"
    soak_seconds: int | None = None


@dataclass(frozen=True)
class SshKey:
    private: str
    """OpenSSH private key text."""
    public: str


def parse_bytes(text: str) -> tuple[str, str]:
    """`8:8G` -> ("8", "8G"), sizes as nccl-tests reads them; raises ValueError."""
    low, _, high = text.partition(":")
    if not _SIZE.match(low) or not _SIZE.match(high or low):
        raise ValueError(f"--bytes {text!r}: give MIN:MAX, each a number with K, M or G")
    return low, high or low


def render(options: Options, groups: list[Group], key: SshKey) -> list[Json]:
    objects = [_secret(options, key)]
    for group in groups:
        objects += [_service(options, group), *_workers(options, group), launcher(options, group)]
    return objects


def group_name(options: Options, group: Group) -> str:
    return _dns(f"{options.run}-{group.name}")


def _meta(options: Options, name: str, group: Group | None = None, **extra: str) -> Json:
    labels = {"app.kubernetes.io/name": APP, keys.ACCEPTANCE_RUN: options.run}
    if group is not None:
        labels[keys.ACCEPTANCE_GROUP] = group_name(options, group)
    return {"name": name, "namespace": options.namespace, "labels": {**labels, **extra}}


def _secret(options: Options, key: SshKey) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(options, f"{options.run}-ssh"),
        "type": "Opaque",
        "stringData": {
            "id_ed25519": key.private,
            "id_ed25519.pub": key.public,
            "authorized_keys": key.public,
        },
    }


def _service(options: Options, group: Group) -> Json:
    name = group_name(options, group)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(options, name, group),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {keys.ACCEPTANCE_GROUP: name, keys.ACCEPTANCE_ROLE: "worker"},
            "ports": [{"name": "ssh", "port": SSH_PORT}],
        },
    }


def _workers(options: Options, group: Group) -> list[Json]:
    return [_worker(options, group, index, node) for index, node in enumerate(group.nodes)]


def _worker(options: Options, group: Group, index: int, node: str) -> Json:
    service = group_name(options, group)
    annotations: Mapping[str, str] = {
        keys.PROFILE: options.profile,
        keys.DEBUG: "true",
        keys.GANG: service,
        keys.GANG_SIZE: str(len(group.nodes)),
        keys.ACCEPTANCE_ROUND: str(group.round),
    }
    meta = _meta(options, f"{service}-w{index}", group, **{keys.ACCEPTANCE_ROLE: "worker"})
    meta["annotations"] = dict(annotations)
    gpus = str(options.gpus_per_node)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "hostname": f"w{index}",
            "subdomain": service,
            "restartPolicy": "Never",
            "affinity": _pinned(node),
            "containers": [
                {
                    "name": "worker",
                    "image": options.image,
                    "command": ["bash", "-c", WORKER_SCRIPT],
                    "ports": [{"name": "ssh", "containerPort": SSH_PORT}],
                    "resources": {
                        "limits": {options.gpu_resource: gpus},
                        "requests": {options.gpu_resource: gpus},
                    },
                    "volumeMounts": [{"name": "ssh", "mountPath": SSH_DIR, "readOnly": True}],
                }
            ],
            "volumes": [_ssh_volume(options)],
        },
    }


def launcher(options: Options, group: Group) -> Json:
    service = group_name(options, group)
    meta = _meta(options, f"{service}-launcher", group, **{keys.ACCEPTANCE_ROLE: "launcher"})
    meta["annotations"] = {keys.INJECT: "false", keys.ACCEPTANCE_ROUND: str(group.round)}
    hosts = [f"w{i}.{service}" for i in range(len(group.nodes))]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "launcher",
                    "image": options.image,
                    "command": ["bash", "-c", launcher_script(options, hosts)],
                    "volumeMounts": [{"name": "ssh", "mountPath": SSH_DIR, "readOnly": True}],
                }
            ],
            "volumes": [_ssh_volume(options)],
        },
    }


def _pinned(node: str) -> Json:
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]
    }
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _ssh_volume(options: Options) -> Json:
    return {"name": "ssh", "secret": {"secretName": f"{options.run}-ssh", "defaultMode": 0o400}}


WORKER_SCRIPT = f"""set -e
mkdir -p /root/.ssh /run/sshd
cp {SSH_DIR}/authorized_keys /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
[ -e /etc/nccl.conf ] || env | grep '^NCCL_' > /etc/nccl.conf || true
ssh-keygen -A >/dev/null
/usr/sbin/sshd -e -p {SSH_PORT}
until [ -e {DONE} ]; do sleep 2; done
"""


def launcher_script(options: Options, hosts: list[str]) -> str:
    ssh = f"ssh -p {SSH_PORT} -o StrictHostKeyChecking=no -o ConnectTimeout=5"
    ranks = len(hosts) * options.gpus_per_node
    mpirun = shlex.join(
        [
            "mpirun",
            "--allow-run-as-root",
            "--tag-output",
            "--bind-to",
            "none",
            "-np",
            str(ranks),
            "-H",
            ",".join(f"{h}:{options.gpus_per_node}" for h in hosts),
            "--mca",
            "plm_rsh_args",
            f"-p {SSH_PORT} -o StrictHostKeyChecking=no",
            options.program,
            *_sizes(options),
        ]
    )
    loop = (
        f"end=$(( $(date +%s) + {options.soak_seconds} ))\n"
        f'while [ "$(date +%s)" -lt "$end" ]; do {mpirun} || rc=1; done'
        if options.soak_seconds
        else f"{mpirun} || rc=1"
    )
    return f"""mkdir -p /root/.ssh
cp {SSH_DIR}/id_ed25519 /root/.ssh/id_ed25519 && chmod 600 /root/.ssh/id_ed25519
for h in {" ".join(hosts)}; do until {ssh} "$h" true; do sleep 2; done; done
rc=0
set -x
{loop}
set +x
for h in {" ".join(hosts)}; do {ssh} "$h" touch {DONE}; done
exit $rc
"""


def _sizes(options: Options) -> list[str]:
    if options.soak_seconds:
        top = options.max_bytes
        return ["-b", top, "-e", top, "-f", "2", "-g", "1", "-n", str(SOAK_ITERATIONS)]
    return ["-b", options.min_bytes, "-e", options.max_bytes, "-f", "2", "-g", "1"]


def _dns(name: str) -> str:
    """A DNS-1035 label: lowercase letters, digits and -, at most 50 characters (room for the
    pods' suffixes)."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return cleaned[:50].rstrip("-")
