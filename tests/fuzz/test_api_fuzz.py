"""schemathesis against the real processes, from the OpenAPI descriptions in docs/api/: every
operation of the extender (`kube-rdma extender --cluster-snapshot`, over HTTP) and of the webhook
(`kube-rdma webhook` with certificates from `kube-rdma certs generate`, over HTTPS) gets requests
generated from its description, inside it (positive) and outside it (negative).

Every answer: no 5xx, a status and content type the description lists, a body matching its
schema, and a JSON body for the verbs; the process logs no error and no traceback while it
answers. Examples per operation: `KUBE_RDMA_FUZZ_EXAMPLES` (default below), derandomized.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from testbed import schemas
from testbed.builders.schema_strategies import fuzz_settings
from testbed.net import wait_healthy
from testbed.processes import Child
from tests.extender.test_app import NODES, PODS

FUZZ = fuzz_settings(50)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# The coverage phase is off: from the Kubernetes Pod schema it derives some 50,000 cases (a
# minute and more to collect on 2 cores); the fuzzing phase draws from the same schemas.
CONFIG = {
    "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
    "generation": {"deterministic": True, "database": "none", "no-shrink": True},
}
EXTENDER = schemathesis.openapi.from_dict(
    schemas.openapi("extender"), config=SchemathesisConfig.from_dict(CONFIG)
)
WEBHOOK = schemathesis.openapi.from_dict(
    schemas.openapi("webhook"), config=SchemathesisConfig.from_dict(CONFIG)
)


@dataclass
class Server:
    child: Child
    url: str
    verify: str | bool = True

    def errors_since(self, offset: int) -> list[Any]:
        """The log lines from `offset` on at level ERROR or with a traceback. (Split at
        newlines only: a logged value may hold U+0085 or U+2028, which JSON leaves as they are
        and str.splitlines would split at.)"""
        found = []
        for line in self.child.stderr.text[offset:].split("\n"):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                found.append(line)  # not a log line: a traceback printed by Python itself
                continue
            if record.get("level") in ("ERROR", "CRITICAL") or "exc_info" in record:
                found.append(record)
        return found


def _stopped(server: Server) -> None:
    server.child.process.terminate()
    assert server.child.wait() == 0, server.child.stderr.text


@pytest.fixture(scope="module")
def extender(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    snapshot = tmp_path_factory.mktemp("api-fuzz") / "cluster.json"
    snapshot.write_bytes(
        orjson.dumps({"apiVersion": "v1", "kind": "List", "items": [*NODES, *PODS]})
    )
    argv: list[str | Path] = [sys.executable, "-m", "kube_rdma_cli", "extender"]
    argv += ["--cluster-snapshot", snapshot]
    with Child([*argv, "--host", "127.0.0.1", "--port", "0"]) as child:
        said = child.stderr.wait_for(r"extender listening on (http://127\.0\.0\.1:\d+)")
        assert wait_healthy(said.group(1)), child.stderr.text
        server = Server(child, said.group(1))
        yield server
        _stopped(server)


@pytest.fixture(scope="module")
def webhook(cert_dir: Path) -> Iterator[Server]:
    argv: list[str | Path] = [sys.executable, "-m", "kube_rdma_cli", "webhook"]
    argv += ["--tls-cert-file", cert_dir / "tls.crt", "--tls-key-file", cert_dir / "tls.key"]
    with Child([*argv, "--host", "127.0.0.1", "--port", "0"]) as child:
        port = child.stderr.wait_for(r"webhook listening on https://127\.0\.0\.1:(\d+)")[1]
        server = Server(child, f"https://localhost:{port}", str(cert_dir / "ca.crt"))
        yield server
        _stopped(server)


def _called(server: Server, case: schemathesis.Case[Any]) -> None:
    offset = len(server.child.stderr.text)
    response = case.call(base_url=server.url, verify=server.verify, timeout=30)
    case.validate_response(response, checks=CHECKS)
    if case.method.upper() != case.operation.method.upper():
        assert response.status_code == 405, (case.method, case.path, response.text)
    elif case.method.upper() == "POST":
        content_type = response.headers.get("content-type", [""])[0]
        assert content_type.startswith("application/json"), (case.method, case.path, response.text)
        json.loads(response.text)
    assert server.errors_since(offset) == [], case.as_curl_command()


@EXTENDER.parametrize()
@FUZZ
def test_extender_api(case: schemathesis.Case[Any], extender: Server) -> None:
    _called(extender, case)


@WEBHOOK.parametrize()
@FUZZ
def test_webhook_api(case: schemathesis.Case[Any], webhook: Server) -> None:
    _called(webhook, case)
