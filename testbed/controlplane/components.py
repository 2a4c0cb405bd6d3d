"""kube-rdma's components beside the control plane, each under its manifests' ServiceAccount.

`Stack.start` applies the namespaces, RBAC and ConfigMaps of manifests/ (render.py), and runs
the webhook, the extender with a real kube-scheduler beside it, as the Deployments of
manifests/ would: the same arguments, the ConfigMaps' data as the mounted files, each process
with a kubeconfig holding its own ServiceAccount's token. Nothing of kube-rdma runs as admin.
"""

from __future__ import annotations

import ssl
import subprocess
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from testbed.controlplane import render
from testbed.controlplane.apply import apply_all
from testbed.controlplane.cluster import ControlPlane
from testbed.controlplane.pki import kube_rdma_command
from testbed.controlplane.processes import Process
from testbed.net import free_port, listening

NAMESPACE = "kube-rdma"
WEBHOOK_ACCOUNT = (NAMESPACE, "kube-rdma-webhook")
SCHEDULER_ACCOUNT = (NAMESPACE, "rdma-scheduler")
AGENT_ACCOUNT = ("kube-rdma-agent", "kube-rdma-agent")
PLAN_NAMESPACE = "kube-rdma-plans"  # the gang plan records', as manifests/scheduler passes it
ENV = {"POD_NAMESPACE": NAMESPACE}


def user(account: tuple[str, str]) -> str:
    """The apiserver's name for a ServiceAccount."""
    return f"system:serviceaccount:{account[0]}:{account[1]}"


@dataclass
class Stack:
    plane: ControlPlane
    extender_port: int = field(default_factory=free_port)
    extender_metrics_port: int = field(default_factory=free_port)
    webhook_port: int = field(default_factory=free_port)
    extender: Process | None = None
    scheduler: Process | None = None
    webhook: Process | None = None

    @property
    def folder(self) -> Path:
        return self.plane.folder

    def start(self) -> Stack:
        admin = self.plane.admin
        for name in render.BUILT_IN_NAMESPACES:
            admin.patch(f"/api/v1/namespaces/{name}", render.name_label_patch(name))
        apply_all(admin, render.namespaces())
        apply_all(admin, render.rbac())
        maps = render.configmaps()
        apply_all(admin, maps.values())
        files = self.folder / "config"
        files.mkdir(exist_ok=True)
        (files / "profiles.yaml").write_text(maps["kube-rdma-profiles"]["data"]["profiles.yaml"])
        (files / "weights.yaml").write_text(maps["kube-rdma-weights"]["data"]["weights.yaml"])
        self._start_webhook()
        self.start_extender()
        self.start_scheduler()
        return self

    def stop(self) -> None:
        for process in (self.scheduler, self.extender, self.webhook):
            if process is not None:
                process.stop()

    def _process(self, name: str, argv: list[str]) -> Process:
        log = self.folder / "logs" / f"{name}.log"
        return Process(name, [*kube_rdma_command(), *argv], log, ENV).start()

    def _start_webhook(self) -> None:
        certs = self.folder / "webhook-tls"
        subprocess.run(
            [
                *kube_rdma_command(),
                "certs", "generate", "--service", "kube-rdma-webhook", "--namespace", NAMESPACE,
                "--localhost", "--out", str(certs),
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        kubeconfig = self.plane.kubeconfig_for(*WEBHOOK_ACCOUNT)
        self.webhook = self._process(
            "webhook",
            [
                "webhook",
                "--tls-cert-file", str(certs / "tls.crt"), "--tls-key-file", str(certs / "tls.key"),
                "--profiles", str(self.folder / "config" / "profiles.yaml"),
                "--kubeconfig", str(kubeconfig),
                "--host", "127.0.0.1", "--port", str(self.webhook_port),
            ],
        )  # fmt: skip
        self.webhook.wait_ready(lambda: _ready(f"https://127.0.0.1:{self.webhook_port}/readyz"))
        url = f"https://127.0.0.1:{self.webhook_port}/mutate"
        configuration = render.webhook_configuration(url, (certs / "ca.crt").read_bytes())
        apply_all(self.plane.admin, [configuration])

    def start_extender(self) -> Process:
        kubeconfig = self.plane.kubeconfig_for(*SCHEDULER_ACCOUNT)
        self.extender = self._process(
            "extender",
            [
                "extender",
                "--kubeconfig", str(kubeconfig),
                "--weights", str(self.folder / "config" / "weights.yaml"),
                "--host", "127.0.0.1", "--port", str(self.extender_port),
                "--metrics-port", str(self.extender_metrics_port),
                "--plan-namespace", PLAN_NAMESPACE,
            ],
        )  # fmt: skip
        self.extender.wait_ready(lambda: _ready(f"http://127.0.0.1:{self.extender_port}/readyz"))
        return self.extender

    def start_scheduler(self) -> Process:
        kubeconfig = self.plane.kubeconfig_for(*SCHEDULER_ACCOUNT)
        config = self.folder / "config" / "scheduler.yaml"
        config.write_text(render.scheduler_configuration(self.extender_port, kubeconfig))
        port = free_port()
        self.scheduler = Process(
            "kube-scheduler",
            [
                self.plane.binaries.scheduler,
                f"--config={config}",
                "--port=0", f"--secure-port={port}", "--bind-address=127.0.0.1",
                f"--cert-dir={self.folder / 'scheduler-certs'}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
            ],
            self.folder / "logs" / "kube-scheduler.log",
        ).start()  # fmt: skip
        self.scheduler.wait_ready(lambda: listening(port))
        return self.scheduler

    def start_agent(self, node: str, sysfs: Path, proc: Path) -> Process:
        kubeconfig = self.plane.kubeconfig_for(*AGENT_ACCOUNT)
        return self._process(
            f"agent-{node}",
            [
                "agent", "run",
                "--kubeconfig", str(kubeconfig), "--node-name", node,
                "--sysfs-root", str(sysfs), "--proc-root", str(proc),
                "--interval", "1", "--taint-unhealthy",
            ],
        )  # fmt: skip


def _ready(url: str) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=1, context=context) as response:
            return bool(response.status == 200)
    except OSError:
        return False
