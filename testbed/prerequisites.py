"""What `make test` needs besides Python, checked before any test runs.

The manifest tests build every kustomization with `kubectl kustomize` and the plugin tests run
`kubectl plugin list`. Without kubectl they would skip (and fail under CI=true, where a skip
is a failure): this says what is missing, once, before the suite starts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

OLDEST_KUBECTL = (1, 32)
"""One minor older than the oldest Kubernetes the manifests target (1.33), as kubectl's version
skew policy allows; its kubectl bundles kustomize v5."""

INSTALL = "install kubectl 1.32 or newer (https://kubernetes.io/docs/tasks/tools/)"


def kubectl_problem(path: str | None = None) -> str | None:
    """What is wrong with the kubectl on `path` (default: $PATH), or None."""
    found = shutil.which("kubectl", path=path)
    if found is None:
        return (
            "kubectl is not on PATH; the manifest tests build the kustomizations with it: "
            f"{INSTALL}, then run make test again"
        )
    shown = subprocess.run(
        [found, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    try:
        client = json.loads(shown.stdout)["clientVersion"]
        version = (int(client["major"]), int(re.sub(r"\D.*", "", client["minor"])))
    except (ValueError, KeyError, TypeError):
        return f"{found} does not say its version (kubectl version --client -o json): {INSTALL}"
    if version < OLDEST_KUBECTL:
        return f"{found} is kubectl {client['gitVersion']}, older than 1.32: {INSTALL}"
    return None


def main() -> int:
    problem = kubectl_problem()
    if problem:
        print(f"make test: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
