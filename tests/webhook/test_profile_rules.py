"""Profile validation: every refused profile's exact message, and the load-time warnings of
profiles that work only on some hardware."""

from __future__ import annotations

import pytest

from webhook.profiles import ProfileError, parse_profiles

SRIOV = (
    "network: {mode: sriov, networks: [sriov-rdma]}, "
    "resources: {fixed: {nvidia.com/sriov_rdma_vf: 1}}"
)
LOAD_WARNINGS = [
    ("macvlan-auto", "network: {mode: macvlan, networks: [r1]}", ()),
    ("sriov-pod", f"{SRIOV}, gid: {{strategy: pod}}", ()),
    (
        "sriov-fixed",
        f"{SRIOV}, gid: {{strategy: fixed, index: 3}}",
        (
            "gid.strategy fixed with network.mode sriov: a VF in its own network namespace "
            "usually has its IPv4 RoCE v2 GID at index 3, but not on every NIC and firmware; "
            "strategy pod reads each pod's own GID table",
        ),
    ),
    (
        "sriov-pf-names",
        f"{SRIOV}, nccl: {{ibHca: [mlx5_0]}}",
        (
            "nccl.ibHca with network.mode sriov: the pod sees its VF's RDMA device under the "
            "VF's own name, not the PF's; list the VFs' names, or use strategy pod, which writes "
            "the devices the pod got",
        ),
    ),
    ("gdr-through-the-extender", "schedulerName: rdma, scheduling: {requireGdr: true}", ()),
    ("resolver-the-release-image", "gid: {strategy: pod}", ()),
    (
        "resolver-pinned",
        f"gid: {{strategy: pod, image: 'registry.example.com/kr:1@sha256:{'ab' * 32}'}}",
        (),
    ),
    (
        "resolver-pinned-without-tag",
        f"gid: {{strategy: pod, image: 'registry.example.com/kr@sha256:{'0f' * 32}'}}",
        (),
    ),
    ("resolver-unused", "gid: {strategy: auto, image: 'registry.example.com/kr:1'}", ()),
    (
        "resolver-by-tag",
        "gid: {strategy: pod, image: 'registry.example.com/kr:1'}",
        (
            "gid.image registry.example.com/kr:1 is not pinned by digest: it runs as an init "
            "container in every pod of this profile, and whoever can push its tag decides what "
            "runs there; name it as image@sha256:<digest>",
        ),
    ),
    (
        "resolver-short-digest",
        "gid: {strategy: pod, image: 'registry.example.com/kr@sha256:abc'}",
        (
            "gid.image registry.example.com/kr@sha256:abc is not pinned by digest: it runs as an "
            "init container in every pod of this profile, and whoever can push its tag decides "
            "what runs there; name it as image@sha256:<digest>",
        ),
    ),
    ("ready-default-scheduler", "scheduling: {requireRdmaReady: true}", ()),
    (
        "levels-default-scheduler",
        "scheduling: {topologyRequired: nvlink}",
        (
            "scheduling.topologyRequired or topologyPreferred without schedulerName: only the "
            "kube-rdma scheduler extender reads the annotations they write; set schedulerName",
        ),
    ),
    (
        "gdr-default-scheduler",
        "scheduling: {requireGdr: true}",
        (
            "scheduling.requireGdr without schedulerName: only the kube-rdma scheduler extender "
            "reads the annotation it writes, so a pod that keeps the default scheduler may land "
            "on a node without GPUDirect RDMA; set schedulerName",
        ),
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [w[1:] for w in LOAD_WARNINGS], ids=[w[0] for w in LOAD_WARNINGS]
)
def test_profiles_that_work_only_on_some_hardware_load_with_warnings(
    body: str, expected: tuple[str, ...]
) -> None:
    profiles = parse_profiles(f"profiles: {{default: {{}}, p: {{{body}}}}}", "f.yaml")
    assert profiles.load_warnings() == ({"p": expected} if expected else {})


INVALID = [
    ("not-yaml", "profiles: [", "f.yaml: not valid YAML: "),
    (
        "not-a-mapping",
        "- a",
        "f.yaml: expected a mapping with `profiles:`, got a list; write `profiles:` then each "
        "profile's name with its settings",
    ),
    (
        "empty",
        "# nothing yet\n",
        "f.yaml: the file is empty; it should hold a mapping with `profiles:`, each profile's "
        "name with its settings (`profiles: {default: {}}` is the built-in one), and "
        "optionally `defaultProfile:`",
    ),
    (
        "a-word",
        "profiles",
        "f.yaml: expected a mapping with `profiles:`, got the text 'profiles'; write "
        "`profiles:` then each profile's name with its settings",
    ),
    (
        "a-number",
        "3",
        "f.yaml: expected a mapping with `profiles:`, got the value 3; write `profiles:` then "
        "each profile's name with its settings",
    ),
    (
        "rails-disagree",
        "profiles: {default: {network: {mode: sriov, networks: [r1, r2]},"
        " resources: {perRail: [a/r1, a/r2, a/r3]}}}",
        "f.yaml: profiles.default: network.networks lists 2 networks but resources.perRail "
        "lists 3 resources: each rail is one Multus network and one resource, in the same "
        "order; list as many of each",
    ),
    (
        "rails-disagree-one",
        "profiles: {default: {network: {mode: macvlan, networks: [r1, r2], },"
        " gid: {strategy: pod}, resources: {perRail: [a/r1]}}}",
        "f.yaml: profiles.default: network.networks lists 2 networks but resources.perRail "
        "lists 1 resource: each rail is one Multus network and one resource, in the same "
        "order; list as many of each",
    ),
    ("no-profiles", "{}", "f.yaml: profiles: Field required"),
    (
        "default-missing",
        "profiles: {rails: {}}",
        "f.yaml: defaultProfile 'default' is not one of the profiles (rails); add it or change "
        "defaultProfile",
    ),
    (
        "unknown-field",
        "profiles: {default: {ipclock: true}}",
        "f.yaml: profiles.default.ipclock: Extra inputs are not permitted",
    ),
    (
        "scheduling-unknown-field",
        "profiles: {default: {scheduling: {requireGDR: true}}}",
        "f.yaml: profiles.default.scheduling.requireGDR: Extra inputs are not permitted",
    ),
    (
        "macvlan-fixed-gid",
        "profiles: {default: {network: {mode: macvlan, networks: [r1]},"
        " gid: {strategy: fixed, index: 3}}}",
        "f.yaml: profiles.default: gid.strategy fixed with network.mode macvlan: under macvlan "
        "each pod gets its own GID indexes, so one fixed index is wrong for most pods; use "
        "strategy pod, or auto with addrRange set to the rail subnet",
    ),
    (
        "fixed-without-index",
        "profiles: {default: {gid: {strategy: fixed}}}",
        "f.yaml: profiles.default.gid: strategy fixed needs index (the host's RoCE v2 GID index, "
        "often 3)",
    ),
    (
        "range-wrong-family",
        "profiles: {default: {gid: {addrRange: 'fd00::/64'}}}",
        "f.yaml: profiles.default.gid: addrRange fd00::/64 is not an AF_INET range",
    ),
    (
        "range-not-cidr",
        "profiles: {default: {gid: {addrRange: 10.0.0.0/33}}}",
        "f.yaml: profiles.default.gid: addrRange '10.0.0.0/33' is not a CIDR: '10.0.0.0/33' "
        "does not appear to be an IPv4 or IPv6 network",
    ),
    (
        "host-network-needs-host-mode",
        "profiles: {default: {network: {hostNetwork: true}}}",
        "f.yaml: profiles.default.network: hostNetwork: true needs mode: host, not ib",
    ),
    (
        "macvlan-needs-networks",
        "profiles: {default: {network: {mode: macvlan}}}",
        "f.yaml: profiles.default.network: mode macvlan needs the Multus networks of the rails "
        "in `networks`",
    ),
    (
        "plugin-needs-resource",
        "profiles: {default: {devices: plugin, resources: {fixed: {}}}}",
        "f.yaml: profiles.default: devices: plugin relies on an RDMA resource to make the device "
        "plugin inject /dev/infiniband; set resources.fixed or resources.perRail, or use hostPath",
    ),
    (
        "both-resource-forms",
        "profiles: {default: {resources: {fixed: {rdma/hca: 1}, perRail: [rdma/hca1]}}}",
        "f.yaml: profiles.default.resources: set either fixed or perRail, not both",
    ),
    (
        "hca-with-prefix",
        "profiles: {default: {nccl: {ibHca: ['=mlx5_0']}}}",
        "f.yaml: profiles.default.nccl.ibHca: '=mlx5_0' is not an HCA name; list bare names like "
        "mlx5_0 or mlx5_0:1 (kube-rdma adds the exact-match '=' or '^=' itself)",
    ),
    (
        "node-with-hca",
        "profiles: {default: {gid: {strategy: node}, nccl: {ibHca: [mlx5_0]}}}",
        "f.yaml: profiles.default: gid.strategy node also sets NCCL_IB_HCA from the node; remove "
        "nccl.ibHca or use strategy auto or fixed",
    ),
    (
        "bad-quantity",
        "profiles: {default: {shm: {size: lots}}}",
        "f.yaml: profiles.default.shm.size: 'lots' is not a Kubernetes quantity (expected e.g. "
        "16Gi, 512Mi, 1G or 8)",
    ),
    (
        "min-above-max",
        "profiles: {default: {shm: {min: 8Gi, max: 4Gi}}}",
        "f.yaml: profiles.default.shm: shm.min is larger than shm.max",
    ),
    (
        "bad-env-name",
        "profiles: {default: {nccl: {extraEnv: {'NCCL DEBUG': INFO}}}}",
        "f.yaml: profiles.default.nccl.extraEnv: 'NCCL DEBUG' is not a valid environment "
        "variable name",
    ),
    (
        "bad-network-ref",
        "profiles: {default: {network: {mode: sriov, networks: ['Rail 1']}}}",
        "f.yaml: profiles.default.network.networks: 'Rail 1' is not a Multus network reference "
        "(namespace/name)",
    ),
    (
        "extra-env-collides",
        "profiles: {default: {nccl: {extraEnv: {NCCL_IB_DISABLE: '1'}}}}",
        "f.yaml: profiles.default.nccl.extraEnv: NCCL_IB_DISABLE is set from the profile's own "
        "fields (nccl, gid); set it there, not in extraEnv",
    ),
    (
        "per-rail-empty",
        "profiles: {default: {resources: {perRail: []}}}",
        "f.yaml: profiles.default.resources: perRail must list at least one resource",
    ),
    (
        "per-rail-duplicate",
        "profiles: {default: {resources: {perRail: [rdma/hca1, rdma/hca1]}}}",
        "f.yaml: profiles.default.resources: perRail lists the same resource twice",
    ),
    (
        "fixed-pattern",
        "profiles: {default: {resources: {fixed: {'rdma/*': 1}}}}",
        "f.yaml: profiles.default.resources: 'rdma/*': patterns belong in rdmaResources, not "
        "fixed or perRail",
    ),
    (
        "shm-zero",
        "profiles: {default: {shm: {size: 0}}}",
        "f.yaml: profiles.default.shm: shm.size must be at least 1Mi (a zero sizeLimit means none)",
    ),
    (
        "node-macvlan",
        "profiles: {default: {network: {mode: macvlan, networks: [r1]}, gid: {strategy: node}}}",
        "f.yaml: profiles.default: gid.strategy node with network.mode macvlan: the node's GID "
        "index and HCA names are the host's, but each macvlan pod sees its own GIDs at its own "
        "indexes; use strategy pod, or auto with NCCL 2.21.5 or newer",
    ),
    (
        "node-sriov",
        "profiles: {default: {network: {mode: sriov, networks: [vf]}, gid: {strategy: node}}}",
        "f.yaml: profiles.default: gid.strategy node with network.mode sriov: the node's GID "
        "index and HCA names are the host's, but an SR-IOV pod sees its VF's device, under the "
        "VF's name, with its own GIDs; use strategy pod, or auto with NCCL 2.21.5 or newer",
    ),
    (
        "node-with-exclude",
        "profiles: {default: {gid: {strategy: node}, nccl: {ibHcaExclude: [mlx5_bond_0]}}}",
        "f.yaml: profiles.default: gid.strategy node also sets NCCL_IB_HCA from the node; remove "
        "nccl.ibHcaExclude or use strategy auto or fixed",
    ),
    (
        "pod-with-hca-and-ifname",
        "profiles: {default: {gid: {strategy: pod}, nccl: {ibHca: [mlx5_0], socketIfname: eth0}}}",
        "f.yaml: profiles.default: gid.strategy pod writes NCCL_IB_HCA and NCCL_SOCKET_IFNAME "
        "from the pod's own devices and default route, and a value in the environment would "
        "override the file; remove nccl.ibHca and nccl.socketIfname",
    ),
    (
        "pod-with-exclude",
        "profiles: {default: {gid: {strategy: pod}, nccl: {ibHcaExclude: [mlx5_bond_0]}}}",
        "f.yaml: profiles.default: gid.strategy pod writes NCCL_IB_HCA and NCCL_SOCKET_IFNAME "
        "from the pod's own devices and default route, and a value in the environment would "
        "override the file; remove nccl.ibHcaExclude",
    ),
    (
        "pod-with-host-network",
        "profiles: {default: {network: {mode: host, hostNetwork: true}, gid: {strategy: pod}}}",
        "f.yaml: profiles.default: gid.strategy pod with network.hostNetwork: true: a pod in the "
        "host's network namespace sees the host's GID table, so there is nothing to resolve per "
        "pod; use strategy auto or fixed",
    ),
    (
        "host-network-socket-ifname",
        "profiles: {default: {network: {mode: host, hostNetwork: true},"
        " nccl: {socketIfname: bond0}}}",
        "f.yaml: profiles.default: nccl.socketIfname with network.hostNetwork: true: every pod "
        "of this profile runs in the host's network namespace; set the host's interface in "
        "network.hostSocketIfname instead",
    ),
    (
        "host-network-with-networks",
        "profiles: {default: {network: {mode: host, hostNetwork: true, networks: [r1]}}}",
        "f.yaml: profiles.default.network: hostNetwork: true with networks: Multus never wires a "
        "pod in the host's network namespace; remove networks",
    ),
    (
        "hca-and-exclude",
        "profiles: {default: {nccl: {ibHca: [mlx5_0], ibHcaExclude: [mlx5_1]}}}",
        "f.yaml: profiles.default.nccl: set either ibHca (the devices to use) or ibHcaExclude "
        "(the devices to leave out), not both: NCCL_IB_HCA holds only one of the two",
    ),
    (
        "extra-env-nccl-net",
        "profiles: {default: {nccl: {extraEnv: {NCCL_NET: IB}}}}",
        "f.yaml: profiles.default.nccl.extraEnv: NCCL_NET is set from the profile's own "
        "fields (nccl, gid); set it there, not in extraEnv",
    ),
    (
        "bad-level",
        "profiles: {default: {scheduling: {topologyRequired: 'NVLink domain'}}}",
        "f.yaml: profiles.default.scheduling.topologyRequired: 'NVLink domain' is not a level: "
        "give `nvlink` or a node label key such as kube-rdma.io/leaf or "
        "fabric.topograph.run/tier-1",
    ),
    (
        "bad-rdma-pattern",
        "profiles: {default: {resources: {rdmaResources: ['rdma/[a-z]']}}}",
        "f.yaml: profiles.default.resources: 'rdma/[a-z]' is not a resource pattern "
        "(domain/name, letters, digits, '-', '_', '.', with '*' as a wildcard)",
    ),
    (
        "bad-conf-path",
        "profiles: {default: {gid: {strategy: pod, confPath: home}}}",
        "f.yaml: profiles.default.gid.confPath: Input should be 'etc' or 'env'",
    ),
    (
        "bad-on-missing",
        "profiles: {default: {gid: {strategy: pod, onMissing: ignore}}}",
        "f.yaml: profiles.default.gid.onMissing: Input should be 'fail' or 'warn'",
    ),
    (
        "bad-roce-version",
        "profiles: {default: {gid: {roceVersion: 3}}}",
        "f.yaml: profiles.default.gid.roceVersion: Input should be 1 or 2",
    ),
    (
        "bad-existing",
        "profiles: {default: {network: {existing: replace}}}",
        "f.yaml: profiles.default.network.existing: Input should be 'keep' or 'merge'",
    ),
    (
        "image-with-space",
        "profiles: {default: {gid: {strategy: pod, image: 'kube-rdma 0.1'}}}",
        "f.yaml: profiles.default.gid.image: String should match pattern '^\\S+$'",
    ),
    (
        "deeply-nested",
        "[" * 5000,
        "f.yaml: not valid YAML: ",
    ),
    (
        "bad-profile-name",
        "defaultProfile: Default\nprofiles: {Default: {}}",
        "f.yaml: profile name 'Default' must be lowercase letters, digits, - or .",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_profiles_are_explained(text: str, message: str) -> None:
    with pytest.raises(ProfileError) as error:
        parse_profiles(text, "f.yaml")
    if message.endswith(": "):
        assert str(error.value).startswith(message)
    else:
        assert str(error.value) == message
