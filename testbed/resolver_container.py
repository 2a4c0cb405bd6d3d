"""The resolver init container (`kube-rdma nccl-conf`) that the webhook adds to a pod under GID
strategy `pod`, exactly as the contract with the resolver describes it: the expected container
for the tests that check a mutated pod or the patch that makes it."""

from __future__ import annotations

from kube_rdma.core.objects import Json

# The profile's own NCCL settings, which the resolver also writes into the file for ranks that
# mpirun starts over ssh: those of a profile that requires InfiniBand (NCCL_NET=IB), and those of
# any other.
IB_SETTINGS = ("--set=NCCL_IB_DISABLE=0", "--set=NCCL_NET=IB")
BASE_SETTINGS = ("--set=NCCL_IB_DISABLE=0",)


def resolver(
    image: str = "ghcr.io/kube-rdma/kube-rdma:0.1.0",
    pull: str = "IfNotPresent",
    family: str = "ipv4",
    on_missing: str = "fail",
    settings: tuple[str, ...] = IB_SETTINGS,
    claims: tuple[Json, ...] = (),
) -> Json:
    """The init container, exactly as the contract with `kube-rdma nccl-conf` describes it;
    `claims`: the pod claims (or their requests) that give the pod its RDMA NICs, which the
    init container names so that kubelet hands it their devices and device metadata."""
    return {
        "name": "kube-rdma-nccl-conf",
        "image": image,
        "imagePullPolicy": pull,
        "args": [
            "nccl-conf",
            "--out",
            "/run/kube-rdma/nccl.conf",
            "--roce-version",
            "2",
            "--family",
            family,
            "--on-missing",
            on_missing,
            *settings,
        ],
        "resources": {
            **({"claims": [dict(c) for c in claims]} if claims else {}),
            "limits": {"cpu": "250m", "memory": "128Mi"},
            "requests": {"cpu": "250m", "memory": "128Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"name": "kube-rdma-nccl-conf", "mountPath": "/run/kube-rdma"}],
    }
