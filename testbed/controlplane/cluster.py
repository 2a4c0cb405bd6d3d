"""etcd, kube-apiserver and kube-controller-manager on loopback ports, in one temporary folder.

The apiserver authorizes with RBAC only and signs service-account tokens; kube-controller-manager
runs the controllers the tests need (service accounts and their token Secrets, namespaces). The
tests act as an admin (a static token in system:masters); every kube-rdma process gets a
kubeconfig with its own ServiceAccount's token instead (`kubeconfig_for`).
"""

from __future__ import annotations

import base64
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed.controlplane.audit import POLICY
from testbed.controlplane.binaries import Binaries
from testbed.controlplane.pki import Pki, make_pki
from testbed.controlplane.processes import Process
from testbed.controlplane.rest import ApiError, Rest
from testbed.net import free_port

ADMIN = "e2e-admin"
TOKEN_WAIT_SECONDS = 30.0


@dataclass
class ControlPlane:
    binaries: Binaries
    folder: Path
    processes: list[Process] = field(default_factory=list)
    admin_token: str = field(default_factory=lambda: secrets.token_hex(16))
    apiserver_port: int = field(default_factory=free_port)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def audit_log(self) -> Path:
        return self.folder / "audit.log"

    @property
    def pki(self) -> Pki:
        return self._pki

    def start(self) -> ControlPlane:
        self._pki = make_pki(self.folder / "pki")
        self.admin = Rest(self.server, self.admin_token, self._pki.ca)
        etcd_url = self._start_etcd()
        self._start_apiserver(etcd_url)
        self._start_controller_manager()
        return self

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def _run(self, name: str, argv: list[str]) -> Process:
        process = Process(name, argv, self.folder / "logs" / f"{name}.log").start()
        self.processes.append(process)
        return process

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        etcd = self._run(
            "etcd",
            [
                self.binaries.etcd,
                "--data-dir", str(self.folder / "etcd"),
                "--listen-client-urls", url, "--advertise-client-urls", url,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"default={peer_url}",
            ],
        )  # fmt: skip
        etcd.wait_ready(lambda: _http_ok(f"{url}/health"))
        return url

    def _start_apiserver(self, etcd_url: str) -> None:
        tokens = self.folder / "tokens.csv"
        tokens.write_text(f'{self.admin_token},{ADMIN},{ADMIN},"system:masters"\n')
        policy = self.folder / "audit-policy.yaml"
        policy.write_text(POLICY)
        pki = self._pki
        apiserver = self._run(
            "kube-apiserver",
            [
                self.binaries.apiserver,
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1", f"--secure-port={self.apiserver_port}",
                "--insecure-port=0", "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
                f"--token-auth-file={tokens}", f"--client-ca-file={pki.ca}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.service_account_public}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
            ],
        )  # fmt: skip
        apiserver.wait_ready(self._apiserver_ready, seconds=120)

    def _apiserver_ready(self) -> bool:
        try:
            # The bootstrap roles exist once the RBAC post-start hook has run.
            self.admin.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:kube-scheduler")
            self.admin.get("/api/v1/namespaces/default")
        except (ApiError, OSError):
            return False
        return True

    def _start_controller_manager(self) -> None:
        kubeconfig = self.write_kubeconfig("kube-controller-manager", self.admin_token)
        self._run(
            "kube-controller-manager",
            [
                self.binaries.controller_manager,
                f"--kubeconfig={kubeconfig}",
                "--controllers=serviceaccount-token,serviceaccount,namespace",
                f"--service-account-private-key-file={self._pki.service_account_key}",
                f"--root-ca-file={self._pki.ca}",
                "--leader-elect=false", "--port=0", "--secure-port=0",
            ],
        )  # fmt: skip

    def write_kubeconfig(self, name: str, token: str) -> Path:
        path = self.folder / "kubeconfigs" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        ca = base64.b64encode(self._pki.ca.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {"server": self.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": "e2e", "user": name}}],
            "current-context": name,
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def service_account_token(self, namespace: str, name: str) -> str:
        """The token Secret kube-controller-manager's token controller made for the account."""
        deadline = time.monotonic() + TOKEN_WAIT_SECONDS
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}"
        while time.monotonic() < deadline:
            # A namespace's `default` account is made by the serviceaccount controller, soon after.
            account = self.admin.get(path) if self.admin.exists(path) else {}
            for ref in account.get("secrets") or []:
                secret = self.admin.get(f"/api/v1/namespaces/{namespace}/secrets/{ref['name']}")
                if secret.get("type") == "kubernetes.io/service-account-token":
                    return base64.b64decode(secret["data"]["token"]).decode()
            time.sleep(0.2)
        raise TimeoutError(f"no token Secret for ServiceAccount {namespace}/{name}")

    def kubeconfig_for(self, namespace: str, account: str) -> Path:
        token = self.service_account_token(namespace, account)
        return self.write_kubeconfig(f"{namespace}.{account}", token)

    def as_account(self, namespace: str, account: str) -> Rest:
        return Rest(self.server, self.service_account_token(namespace, account), self._pki.ca)


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False
