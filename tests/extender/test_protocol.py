"""The extender's wire decoding refuses NodeNames that are not all strings, whatever they hold."""

from __future__ import annotations

import orjson
import pytest

from extender import protocol
from testbed.builders import nodes

POD = nodes.pod("worker")


@pytest.mark.parametrize(
    "names", [["gpu-1", 7], [None], ["gpu-1", ["gpu-2"]], [{"name": "gpu-1"}], [True]]
)
def test_node_names_that_are_not_all_strings_are_refused(names: list[object]) -> None:
    body = orjson.dumps({"Pod": POD, "NodeNames": names})
    with pytest.raises(protocol.ProtocolError, match="NodeNames must be a list of node names"):
        protocol.decode_args(body)


def test_node_names_that_are_strings_are_kept_in_order() -> None:
    body = orjson.dumps({"Pod": POD, "NodeNames": ["b", "a", "", "a"]})
    assert protocol.decode_args(body).names == ["b", "a", "", "a"]


@pytest.mark.parametrize(
    "item", [{}, {"metadata": [1]}, {"metadata": {"name": 3}}, {"metadata": {}}]
)
def test_nodes_without_a_name_are_refused(item: dict[str, object]) -> None:
    body = orjson.dumps({"Pod": POD, "Nodes": {"items": [{"metadata": {"name": "a"}}, item]}})
    with pytest.raises(protocol.ProtocolError, match=r"Nodes.items\[1\] has no metadata.name"):
        protocol.decode_args(body)
