"""What a bind writes for pods that take NCCL settings from the node."""

from __future__ import annotations

import pytest

from extender.binding import node_settings
from extender.cluster.model import Cluster
from extender.cluster.source import BindError
from extender.pairing import rails
from extender.podview import pod_view
from kube_rdma.core.topology import Gid, Topology
from testbed.builders import nodes


def settings_for(topology: Topology, gpus: int = 8) -> dict[str, str]:
    cluster = Cluster()
    cluster.replace_nodes([nodes.node("n1", topology)])
    node = cluster.node("n1")
    assert node is not None
    pod = pod_view(nodes.pod("w", gpus=gpus, node_settings=True))
    return node_settings(pod, node, rails(topology, pod.link_layer, None))


def test_all_rails() -> None:
    assert settings_for(nodes.hgx()) == {
        "kube-rdma.io/gid-index": "3",
        "kube-rdma.io/hca": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
    }


def test_two_gpus_get_their_own_switch_nics() -> None:
    assert settings_for(nodes.hgx(), gpus=2) == {
        "kube-rdma.io/gid-index": "3",
        "kube-rdma.io/hca": "=mlx5_0,mlx5_1",
    }


def test_a_down_rail_is_left_out() -> None:
    hca = settings_for(nodes.hgx(down=(3,)), gpus=4)["kube-rdma.io/hca"]
    assert hca == "=mlx5_0,mlx5_1,mlx5_2,mlx5_4"


def test_gid_indexes_that_differ_between_nics_are_an_error() -> None:
    topology = nodes.hgx()
    nic = topology.nics[1]
    port = nic.ports[0]
    moved = port.model_copy(
        update={"gids": (Gid(index=5, gid="::ffff:10.1.0.7", type="RoCE v2", ip="10.1.0.7"),)}
    )
    nics = list(topology.nics)
    nics[1] = nic.model_copy(update={"ports": (moved,)})
    with pytest.raises(BindError) as error:
        settings_for(topology.model_copy(update={"nics": tuple(nics)}))
    assert str(error.value) == (
        "node n1: no GID index is a RoCE v2 IPv4 GID on every chosen NIC (mlx5_0, mlx5_1, "
        "mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7); NCCL_IB_GID_INDEX must be the same "
        "for all of them"
    )
