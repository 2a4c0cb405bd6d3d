"""`make release-manifests`: the root kustomization as one all-in-one YAML, stamped with the
release's version.

Admins who do not use kustomize install a release the way they install Volcano or the NVIDIA
Network Operator's manifests: one `kubectl apply -f` of one file. That file must be exactly what
`kubectl apply -k manifests/` installs, or the two install paths drift; so it is built from the
root kustomization and differs from it only where the version is stamped: the tag of every
kube-rdma image (the containers, and the resolver image named inside the profiles ConfigMap),
taken from pyproject.toml's version, the one place a release sets it. kube-scheduler's tag is
the cluster's business (manifests/scheduler/kustomization.yaml) and is left alone.

With `--digest sha256:...` (the digest the registry gave the pushed image), every kube-rdma
image is pinned by it as well (`ghcr.io/kube-rdma/kube-rdma:<version>@sha256:...`): a tag can
be moved to another image, and the resolver image runs as an init container in every pod of a
profile with gid.strategy pod (docs/security.md).

Run from the repository root:
`python3 -m testbed.release_manifests [--out dist/kube-rdma.yaml] [--digest sha256:...]`.
Needs kubectl (its built-in kustomize) or a kustomize binary on PATH.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "ghcr.io/kube-rdma/kube-rdma"
# A reference to the image with any tag, as kustomize writes it and as profiles.yaml names it.
_IMAGE_REF = re.compile(rf"{re.escape(IMAGE)}:[A-Za-z0-9_][A-Za-z0-9_.-]*(@sha256:[0-9a-f]{{64}})?")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def project_version(root: Path = ROOT) -> str:
    """The version in pyproject.toml."""
    version: str = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    return version


def build(directory: Path) -> str:
    """`kubectl kustomize directory`, or `kustomize build` where there is no kubectl."""
    if shutil.which("kubectl"):
        command = ["kubectl", "kustomize", str(directory)]
    elif shutil.which("kustomize"):
        command = ["kustomize", "build", str(directory)]
    else:
        raise SystemExit("release-manifests: needs kubectl or kustomize on PATH")
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout


def stamp(built: str, version: str, digest: str | None = None) -> str:
    """`built` with every kube-rdma image tagged `version` (and pinned by `digest`, given one),
    under a header naming it."""
    if digest is not None and not _DIGEST.fullmatch(digest):
        raise ValueError(f"not an image digest: {digest!r} (expected sha256: and 64 hex digits)")
    reference = f"{IMAGE}:{version}" + (f"@{digest}" if digest else "")
    header = (
        f"# kube-rdma {version}: everything `kubectl apply -k manifests/` installs, in one file.\n"
        "# Install or upgrade: kubectl apply -f kube-rdma.yaml (docs/install.md).\n"
    )
    return header + _IMAGE_REF.sub(reference, built)


def release(out: Path, root: Path = ROOT, digest: str | None = None) -> Path:
    """Write the stamped all-in-one YAML to `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(stamp(build(root / "manifests"), project_version(root), digest))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "kube-rdma.yaml")
    parser.add_argument("--digest", help="sha256:... of the pushed image: pin every reference")
    args = parser.parse_args()
    print(release(args.out, digest=args.digest))


if __name__ == "__main__":
    main()
