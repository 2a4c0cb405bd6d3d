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
        [
            "F: expected a mapping with `profiles:`, got a list; write `profiles:` then each "
            "profile's name with its settings"
        ],
        id="profiles-not-a-mapping",
    ),
    pytest.param(
        "profiles",
        "",
        2,
        [
            "F: the file is empty; it should hold a mapping with `profiles:`, each profile's "
            "name with its settings (`profiles: {default: {}}` is the built-in one), and "
            "optionally `defaultProfile:`"
        ],
        id="profiles-empty",
    ),
    pytest.param(
        "profiles",
        "profiles:\n  rails:\n    network: {mode: sriov, networks: [r1, r2]}\n"
        "    resources: {perRail: [nvidia.com/r1, nvidia.com/r2, nvidia.com/r3]}\n"
        "defaultProfile: rails\n",
        2,
        [
            "F: profiles.rails: network.networks lists 2 networks but resources.perRail lists 3 "
            "resources: each rail is one Multus network and one resource, in the same order; "
            "list as many of each"
        ],
        id="profiles-rails-disagree",
    ),
    pytest.param(
        "profiles",
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: p}\n"
        "data:\n  profiles.yaml: |\n    profiles: {default: {}}\n",
        0,
        ["F (ConfigMap p, data.profiles.yaml): ok (1 profile: default)"],
        id="profiles-configmap",
    ),
    pytest.param(
        "profiles",
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: p}\n"
        "data:\n  profiles.yaml: |\n    profiles: {default: {ipclock: 1}}\n",
        2,
        [
            "F (ConfigMap p, data.profiles.yaml): profiles.default.ipclock: Extra inputs are not "
            "permitted"
        ],
        id="profiles-configmap-bad",
    ),
    pytest.param(
        "profiles",
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: p}\ndata: {other.yaml: x}\n",
        2,
        [
            "F: ConfigMap p has no data.profiles.yaml (its keys: other.yaml); the service reads "
            "/config/profiles.yaml, its ConfigMap's data.profiles.yaml: put the file there"
        ],
        id="profiles-configmap-without-the-key",
    ),
    pytest.param(
        "weights",
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: w}\n"
        "data:\n  weights.yaml: |\n    weights: {rate: 4}\n",
        0,
        [
            "F (ConfigMap w, data.weights.yaml): ok (weights: affinity 3, rate 4, binpack 2, "
            "locality 1)"
        ],
        id="weights-configmap",
    ),
    pytest.param(
        "weights",
        "kind: ConfigMap\napiVersion: v1\n",
        2,
        [
            "F: ConfigMap without a name has no data.weights.yaml (its keys: none); the service "
            "reads /config/weights.yaml, its ConfigMap's data.weights.yaml: put the file there"
        ],
        id="weights-configmap-without-data",
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


@pytest.mark.parametrize(
    ("kind", "manifest", "ok"),
    [
        (
            "profiles",
            "manifests/overlays/network-operator/profiles.yaml",
            "(ConfigMap kube-rdma-profiles, data.profiles.yaml): ok (1 profile: default)",
        ),
        (
            "profiles",
            "manifests/overlays/kubeflow-trainer/profiles.yaml",
            "(ConfigMap kube-rdma-profiles, data.profiles.yaml): ok (1 profile: default)",
        ),
        (
            "profiles",
            "manifests/webhook/configmap.yaml",
            "(ConfigMap kube-rdma-profiles, data.profiles.yaml): ok (1 profile: default)",
        ),
        (
            "weights",
            "manifests/extender/configmap.yaml",
            "(ConfigMap kube-rdma-weights, data.weights.yaml): ok (weights: affinity 3, rate 1, "
            "binpack 2, locality 1)",
        ),
    ],
)
def test_the_configmaps_manifests_ship_validate(
    kind: str, manifest: str, ok: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ROOT / manifest
    assert main(["validate", kind, str(path)]) == 0
    assert capsys.readouterr().out == f"{path} {ok}\n"
