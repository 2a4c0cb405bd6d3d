"""Realistic pods as the apiserver hands them to a mutating webhook (defaults already applied),
modelled on what the training operators create."""

from __future__ import annotations

import copy
from typing import Any

from kube_rdma.core.objects import Json

PROFILES_YAML = """
defaultProfile: default
profiles:
  default: {}
  rails8:
    network:
      mode: macvlan
      networks: [kube-rdma/rail1, kube-rdma/rail2, kube-rdma/rail3, kube-rdma/rail4,
                 kube-rdma/rail5, kube-rdma/rail6, kube-rdma/rail7, kube-rdma/rail8]
      perGpu: true
    resources:
      perRail: [rdma/hca1, rdma/hca2, rdma/hca3, rdma/hca4,
                rdma/hca5, rdma/hca6, rdma/hca7, rdma/hca8]
    devices: plugin
    shm: {size: 64Gi}
    nccl:
      socketIfname: eth0
      ibHca: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
    gid: {strategy: auto, addrRange: 192.168.0.0/16}
    schedulerName: rdma-scheduler
  hostnet:
    network: {mode: host, hostNetwork: true, hostSocketIfname: "=bond0"}
    gid: {strategy: fixed, index: 3}
    nccl:
      ibHca: ["mlx5_0:1", "mlx5_1:1"]
      extraEnv: {NCCL_DEBUG: WARN}
  node:
    network: {mode: host}
    resources:
      fixed: {rdma/rdma_shared_device_a: 1}
    devices: plugin
    ipcLock: true
    gid: {strategy: node}
  lenient:
    podSecurityConflict: skip
  roce-pod:
    network:
      mode: macvlan
      networks: [kube-rdma/rail1, kube-rdma/rail2, kube-rdma/rail3, kube-rdma/rail4,
                 kube-rdma/rail5, kube-rdma/rail6, kube-rdma/rail7, kube-rdma/rail8]
      perGpu: true
    resources:
      perRail: [rdma/hca1, rdma/hca2, rdma/hca3, rdma/hca4,
                rdma/hca5, rdma/hca6, rdma/hca7, rdma/hca8]
    devices: plugin
    shm: {size: 64Gi}
    nccl: {requireIb: true}
    gid: {strategy: pod}
    schedulerName: rdma-scheduler
  roce-pod-env:
    network:
      mode: macvlan
      networks: [kube-rdma/rail1, kube-rdma/rail2, kube-rdma/rail3, kube-rdma/rail4,
                 kube-rdma/rail5, kube-rdma/rail6, kube-rdma/rail7, kube-rdma/rail8]
      perGpu: true
      existing: merge
    resources:
      perRail: [rdma/hca1, rdma/hca2, rdma/hca3, rdma/hca4,
                rdma/hca5, rdma/hca6, rdma/hca7, rdma/hca8]
    devices: plugin
    shm: {size: 64Gi}
    gid: {strategy: pod, confPath: env, onMissing: warn, image: "registry.local:5000/kube-rdma"}
  sriov:
    network: {mode: sriov, networks: [sriov-rdma]}
    resources:
      fixed: {nvidia.com/sriov_rdma_vf: 1}
    devices: plugin
    gid: {strategy: pod, roceVersion: 2, addrFamily: AF_INET6}
  exclude:
    nccl: {ibHcaExclude: [mlx5_bond_0], requireIb: true}
"""


def make_container(name: str, image: str, **fields: Any) -> Json:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        **fields,
    }


def gpu_resources(gpus: int, memory: str, cpu: str = "96") -> Json:
    amounts = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)}
    return {"limits": dict(amounts), "requests": dict(amounts)}


def make_pod(name: str, namespace: str, labels: Json, annotations: Json, spec: Json) -> Json:
    metadata: Json = {"name": name, "namespace": namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            **spec,
        },
    }


def _kubeflow_labels(job: str, replica: str, index: int) -> Json:
    return {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": replica,
        "training.kubeflow.org/replica-index": str(index),
        **({"training.kubeflow.org/job-role": "master"} if replica == "master" else {}),
    }


def pytorchjob(replica: str, index: int, namespace: str, annotations: Json) -> Json:
    name = f"llama-70b-{replica}-{index}"
    env = [
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "MASTER_ADDR", "value": "llama-70b-master-0"},
        {"name": "WORLD_SIZE", "value": "4"},
        {"name": "RANK", "value": str(index if replica == "master" else index + 1)},
        {"name": "PET_NPROC_PER_NODE", "value": "8"},
    ]
    trainer = make_container(
        "pytorch",
        "nvcr.io/nvidia/pytorch:24.05-py3",
        command=["torchrun", "train.py"],
        env=env,
        ports=[{"containerPort": 23456, "name": "pytorchjob-port", "protocol": "TCP"}],
        resources=gpu_resources(8, "1600Gi" if replica == "master" else "200Gi"),
    )
    return make_pod(
        name,
        namespace,
        _kubeflow_labels("llama-70b", replica, index),
        annotations,
        {"containers": [trainer]},
    )


def mpijob_launcher(namespace: str) -> Json:
    launcher = make_container(
        "launcher",
        "mpioperator/openmpi:v0.5.0",
        command=["mpirun", "-np", "16", "/opt/all_reduce_perf", "-b", "8", "-e", "8G"],
        resources={"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1"}},
    )
    labels = {
        "training.kubeflow.org/job-name": "nccl-tests",
        "training.kubeflow.org/job-role": "launcher",
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/replica-type": "launcher",
    }
    return make_pod("nccl-tests-launcher-x7k2p", namespace, labels, {}, {"containers": [launcher]})


def mpijob_worker(namespace: str, annotations: Json) -> Json:
    worker = make_container(
        "worker",
        "mpioperator/openmpi:v0.5.0",
        command=["/usr/sbin/sshd", "-De"],
        resources=gpu_resources(8, "1000Gi"),
    )
    labels = {
        "training.kubeflow.org/job-name": "nccl-tests",
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    return make_pod("nccl-tests-worker-1", namespace, labels, annotations, {"containers": [worker]})


def jobset_pod(namespace: str, annotations: Json) -> Json:
    """A Kubeflow Trainer v2 TrainJob pod (a JobSet underneath), 4 GPUs."""
    node = make_container(
        "node",
        "ghcr.io/kubeflow/trainer/torchtune:latest",
        env=[{"name": "PET_NNODES", "value": "2"}],
        resources=gpu_resources(4, "400Gi", cpu="48"),
    )
    labels = {
        "batch.kubernetes.io/job-completion-index": "1",
        "jobset.sigs.k8s.io/jobset-name": "qwen-sft",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/global-replicas": "1",
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
    }
    pod = make_pod(
        "qwen-sft-node-0-1-zk4tw", namespace, labels, annotations, {"containers": [node]}
    )
    pod["metadata"].setdefault("annotations", {})["jobset.sigs.k8s.io/jobset-name"] = "qwen-sft"
    return pod


def volcano_pod(namespace: str, annotations: Json) -> Json:
    worker = make_container(
        "worker", "registry.local/megatron:2409", resources=gpu_resources(8, "1800Gi")
    )
    labels = {"volcano.sh/job-name": "gpt-moe", "volcano.sh/task-spec": "worker"}
    annotations = {
        "scheduling.k8s.io/group-name": "gpt-moe-9c1e2f",
        "volcano.sh/job-name": "gpt-moe",
        "volcano.sh/task-index": "3",
        **annotations,
    }
    pod = make_pod("gpt-moe-worker-3", namespace, labels, annotations, {"containers": [worker]})
    pod["spec"]["schedulerName"] = "volcano"
    return pod


def sidecar_pod(namespace: str, annotations: Json) -> Json:
    """A trainer with an init container and a log-shipping sidecar; only the trainer has GPUs."""
    init = make_container(
        "fetch-dataset",
        "amazon/aws-cli:2.17.0",
        command=["aws", "s3", "sync", "s3://datasets/c4", "/data"],
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
    )
    trainer = make_container(
        "trainer",
        "nvcr.io/nvidia/nemo:24.07",
        resources=gpu_resources(8, "512Gi"),
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
    )
    sidecar = make_container(
        "fluent-bit",
        "fluent/fluent-bit:3.1",
        resources={"limits": {"memory": "256Mi"}, "requests": {"cpu": "50m", "memory": "64Mi"}},
    )
    spec = {
        "initContainers": [init],
        "containers": [trainer, sidecar],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }
    labels = _kubeflow_labels("nemo-sft", "worker", 0)
    return make_pod("nemo-sft-worker-0", namespace, labels, annotations, spec)


def preset_pod(namespace: str, annotations: Json) -> Json:
    """A pod whose author already set part of the RDMA plumbing by hand."""
    trainer = make_container(
        "trainer",
        "nvcr.io/nvidia/pytorch:24.05-py3",
        env=[
            {"name": "NCCL_SOCKET_IFNAME", "value": "net1"},
            {"name": "NCCL_DEBUG", "value": "INFO"},
        ],
        resources={
            "limits": {"nvidia.com/gpu": "8", "rdma/hca_shared_devices_a": "1", "memory": "900Gi"},
            "requests": {
                "nvidia.com/gpu": "8",
                "rdma/hca_shared_devices_a": "1",
                "memory": "900Gi",
            },
        },
        securityContext={"capabilities": {"add": ["IPC_LOCK", "SYS_PTRACE"]}},
        volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}],
    )
    spec = {
        "containers": [trainer],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    networks = '[{"name":"rail1","namespace":"kube-rdma","interface":"net1"}]'
    annotations = {"k8s.v1.cni.cncf.io/networks": networks, **annotations}
    labels = _kubeflow_labels("hand-tuned", "worker", 0)
    return make_pod("hand-tuned-worker-0", namespace, labels, annotations, spec)


def request(pod: Json, uid: str = "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77", **fields: Any) -> Json:
    """The `request` of an AdmissionReview creating `pod`."""
    return {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": pod["metadata"].get("name", ""),
        "namespace": pod["metadata"]["namespace"],
        "operation": "CREATE",
        "userInfo": {
            "username": "system:serviceaccount:kubeflow:training-operator",
            "groups": ["system:serviceaccounts", "system:authenticated"],
        },
        "object": copy.deepcopy(pod),
        "oldObject": None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        **fields,
    }
