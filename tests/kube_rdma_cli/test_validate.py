"""`kube-rdma validate profiles|weights`: the services' own parsers, one line per file that is
good and one per problem, exit 0 or 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube_rdma_cli.dispatch import main

ROOT = Path(__file__).resolve().parents[2]

GDR_WARNING = (
    "scheduling.requireGdr without schedulerName: only the kube-rdma scheduler extender reads "
    "the annotation it writes, so a pod that keeps the default scheduler may land on a node "
    "without GPUDirect RDMA; set schedulerName"
)

CASES = [
    pytest.param(
        "profiles",
        "profiles:\n  default: {}\n  rdma-ib: {}\n",
        0,
        ["F: ok (2 profiles: default, rdma-ib)"],
        id="profiles-ok",
    ),
    pytest.param(
        "profiles",
        "profiles:\n  default: {}\n  gdr:\n    scheduling: {requireGdr: true}\n",
        0,
        ["F: ok (2 profiles: default, gdr)", f"F: profiles.gdr: warning: {GDR_WARNING}"],
        id="profiles-warning",
    ),
    pytest.param(
        "profiles",
        "profiles:\n  default:\n    gid: {strategy: bogus}\n    shm: {bogus: 1}\n",
        2,
        [
            "F: profiles.default.shm.bogus: Extra inputs are not permitted",
            "F: profiles.default.gid.strategy: Input should be 'auto', 'fixed', 'node' or 'pod'",
        ],
        id="profiles-two-problems",
    ),
    pytest.param(
        "profiles",
        "defaultProfile: ib\nprofiles:\n  default: {}\n",
        2,
        [
            "F: defaultProfile 'ib' is not one of the profiles (default); add it or change "
            "defaultProfile"
        ],
        id="profiles-default-missing",
    ),
    pytest.param(
        "profiles",
        "- a list\n",
        2,
        ["F: expected a mapping with `profiles:`, got list"],
        id="profiles-not-a-mapping",
    ),
    pytest.param(
        "weights",
        "weights: {affinity: 5, binpack: 0}\n",
        0,
        ["F: ok (weights: affinity 5, rate 1, binpack 0, locality 1)"],
        id="weights-ok",
    ),
    pytest.param(
        "weights",
        "",
        0,
        ["F: ok (weights: affinity 3, rate 1, binpack 2, locality 1)"],
        id="weights-empty-is-built-in",
    ),
    pytest.param(
        "weights",
        "weights:\n  affinity: -1\n  speed: 2\n",
        2,
        [
            "F: weights.affinity: Input should be greater than or equal to 0",
            "F: weights.speed: Extra inputs are not permitted",
        ],
        id="weights-two-problems",
    ),
    pytest.param(
        "weights",
        "weights: {affinity: 0, rate: 0, binpack: 0, locality: 0}\n",
        2,
        ["F: weights: at least one weight must be above 0"],
        id="weights-all-zero",
    ),
    pytest.param("weights", "weights: [\n", 2, ["F: not valid YAML: "], id="weights-not-yaml"),
]


@pytest.mark.parametrize(("kind", "text", "status", "lines"), CASES)
def test_validate_one_file(
    kind: str,
    text: str,
    status: int,
    lines: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "F"
    path.write_text(text)
    assert main(["validate", kind, str(path)]) == status
    printed = capsys.readouterr().out.replace(str(path), "F").splitlines()
    if lines[-1].endswith(": "):  # YAML's own message goes on; its start is what matters
        printed = [line[: len(lines[-1])] for line in printed]
    assert printed == lines


def test_every_file_is_reported_and_one_bad_file_fails_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "latin1.yaml").write_bytes("weights: {caf\xe9: 1}\n".encode("latin-1"))
    files = [ROOT / "examples" / "profiles.yaml", tmp_path / "missing.yaml"]
    assert main(["validate", "profiles", *map(str, files)]) == 2
    assert main(["validate", "weights", str(tmp_path / "latin1.yaml")]) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"{files[0]}: ok (6 profiles: default, hostnet, mnnvl, rails8, rails8-pod, sriov)",
        f"{files[1]}: cannot read: No such file or directory",
        f"{tmp_path / 'latin1.yaml'}: not UTF-8 text (byte 13)",
    ]
