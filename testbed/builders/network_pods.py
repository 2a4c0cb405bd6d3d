"""Realistic pods from clusters whose network setup the webhook must respect: rails a pod
already carries (Spiderpool under Kubeflow Trainer), SR-IOV VFs and other resources named by
the NVIDIA Network Operator, hostNetwork pods, and MPIJob (mpi-operator v2) pods. Each is the
pod as the apiserver hands it to a mutating webhook (defaults applied)."""

from __future__ import annotations

import json
from typing import Any

from kube_rdma.core.objects import Json
from testbed.builders.pods import gpu_resources, make_container, make_pod

NETWORKS = "k8s.v1.cni.cncf.io/networks"


def _owner(api_version: str, kind: str, name: str, uid: str) -> Json:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def trainjob_spiderpool(namespace: str, annotations: Json) -> Json:
    """A Kubeflow Trainer v2 TrainJob node (a JobSet's Job underneath) on a Spiderpool cluster:
    eight macvlan rails `spiderpool/hca1..8` in the pod template, RDMA from the shared device
    plugin under Spiderpool's resource prefix."""
    node = make_container(
        "node",
        "ghcr.io/kubeflow/trainer/torchtune:latest",
        command=["torchrun", "--nnodes=2", "--nproc-per-node=8", "/workspace/finetune.py"],
        env=[{"name": "PET_NNODES", "value": "2"}, {"name": "PET_NPROC_PER_NODE", "value": "8"}],
        resources=gpu_resources(8, "1600Gi"),
    )
    node["resources"]["limits"]["spidernet.io/hca_shared_devices"] = "1"
    node["resources"]["requests"]["spidernet.io/hca_shared_devices"] = "1"
    labels = {
        "batch.kubernetes.io/controller-uid": "3f0c1a9e-0d3b-4a55-9a1e-8d3c2b7e6f01",
        "batch.kubernetes.io/job-completion-index": "0",
        "batch.kubernetes.io/job-name": "llama-sft-node-0",
        "jobset.sigs.k8s.io/jobset-name": "llama-sft",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": "0",
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
    }
    rails = ",".join(f"spiderpool/hca{i}" for i in range(1, 9))
    annotations = {
        "jobset.sigs.k8s.io/jobset-name": "llama-sft",
        NETWORKS: rails,
        **annotations,
    }
    spec = {"containers": [node], "subdomain": "llama-sft", "hostname": "llama-sft-node-0-0"}
    pod = make_pod("llama-sft-node-0-0-x8v2q", namespace, labels, annotations, spec)
    pod["metadata"]["ownerReferences"] = [
        _owner("batch/v1", "Job", "llama-sft-node-0", "3f0c1a9e-0d3b-4a55-9a1e-8d3c2b7e6f01")
    ]
    return pod


def _pytorch_worker(name: str, namespace: str, annotations: Json, **spec: Any) -> Json:
    trainer = make_container(
        "pytorch",
        "nvcr.io/nvidia/pytorch:24.05-py3",
        command=["torchrun", "train.py"],
        env=[
            {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
            {"name": "MASTER_PORT", "value": "23456"},
        ],
        resources=gpu_resources(8, "200Gi"),
    )
    labels = {
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0",
    }
    return make_pod(
        f"{name}-worker-0", namespace, labels, annotations, {"containers": [trainer], **spec}
    )


def sriov_pod(namespace: str, annotations: Json) -> Json:
    """A PyTorchJob worker on an SR-IOV VF, as the NVIDIA Network Operator wires it: the pod
    names its SriovNetwork (JSON form) and the network-resources-injector has added the VF
    resource `nvidia.com/sriov_rdma_vf` from the network's resourceName."""
    networks = json.dumps([{"name": "sriov-rdma", "namespace": namespace}])
    pod = _pytorch_worker("vf-train", namespace, {NETWORKS: networks, **annotations})
    for kind in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][kind]["nvidia.com/sriov_rdma_vf"] = "1"
    return pod


def hostnetwork_pod(namespace: str, annotations: Json) -> Json:
    """A PyTorchJob worker that asks for the host's network namespace itself."""
    return _pytorch_worker(
        "hostnet-train",
        namespace,
        annotations,
        hostNetwork=True,
        dnsPolicy="ClusterFirstWithHostNet",
    )


def network_operator_pod(namespace: str, annotations: Json, resource: str) -> Json:
    """A worker requesting an RDMA resource under one of the Network Operator's names
    (`nvidia.com/hostdev` for a HostDeviceNetwork, `rdma/rdma_shared_device_a` for the shared
    device plugin, ...)."""
    pod = _pytorch_worker("netop-train", namespace, annotations)
    for kind in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][kind][resource] = "1"
    return pod


def hand_tuned_nonroot(namespace: str, annotations: Json) -> Json:
    """A worker running as a non-root user, with NCCL settings copied from a host setup:
    a fixed GID index, a prefix-style HCA list and RDMA switched off while debugging."""
    pod = _pytorch_worker("tuned-train", namespace, annotations)
    pod["spec"]["securityContext"] = {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000}
    pod["spec"]["containers"][0]["env"] += [
        {"name": "NCCL_IB_GID_INDEX", "value": "3"},
        {"name": "NCCL_IB_HCA", "value": "mlx5_1,mlx5_2"},
        {"name": "NCCL_IB_DISABLE", "value": "1"},
    ]
    return pod


def _mpi_labels(role: str) -> Json:
    return {
        "training.kubeflow.org/job-name": "nccl-tests",
        "training.kubeflow.org/job-role": role,
        "training.kubeflow.org/operator-name": "mpi-operator",
    }


def mpijob_v2_worker(namespace: str, annotations: Json) -> Json:
    """An mpi-operator v2 (kubeflow.org/v2beta1) worker: sshd waits for the launcher's mpirun,
    which starts the ranks over ssh with a fresh environment."""
    worker = make_container(
        "worker",
        "mpioperator/openmpi:v0.5.0",
        command=["/usr/sbin/sshd", "-De"],
        resources=gpu_resources(8, "1000Gi"),
        volumeMounts=[{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
    )
    labels = {**_mpi_labels("worker"), "training.kubeflow.org/replica-index": "0"}
    spec = {
        "containers": [worker],
        "hostname": "nccl-tests-worker-0",
        "subdomain": "nccl-tests",
        "volumes": [
            {
                "name": "ssh-auth",
                "secret": {
                    "secretName": "nccl-tests-ssh",
                    "defaultMode": 384,
                    "items": [
                        {"key": "ssh-privatekey", "path": "id_rsa"},
                        {"key": "ssh-publickey", "path": "id_rsa.pub"},
                        {"key": "ssh-publickey", "path": "authorized_keys"},
                    ],
                },
            }
        ],
    }
    pod = make_pod("nccl-tests-worker-0", namespace, labels, annotations, spec)
    pod["metadata"]["ownerReferences"] = [
        _owner(
            "kubeflow.org/v2beta1", "MPIJob", "nccl-tests", "7d1e5c3a-2b4f-4e6a-8c9d-0a1b2c3d4e5f"
        )
    ]
    return pod


def mpijob_v2_launcher(namespace: str, annotations: Json) -> Json:
    """The mpi-operator v2 launcher: a Job's pod without GPUs that runs mpirun."""
    launcher = make_container(
        "launcher",
        "mpioperator/openmpi:v0.5.0",
        command=[
            "mpirun",
            "-np",
            "16",
            "/opt/nccl-tests/build/all_reduce_perf",
            "-b",
            "8",
            "-e",
            "8G",
        ],
        resources={
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "1", "memory": "1Gi"},
        },
    )
    pod = make_pod(
        "nccl-tests-launcher-q2z7m",
        namespace,
        _mpi_labels("launcher"),
        annotations,
        {"containers": [launcher]},
    )
    pod["metadata"]["ownerReferences"] = [
        _owner("batch/v1", "Job", "nccl-tests-launcher", "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9")
    ]
    return pod
