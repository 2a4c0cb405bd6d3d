"""Every decoder fed documents generated from their schemas, and broken off them: none raises
anything but its documented error.

The schemas: the Kubernetes OpenAPI's Pod and Node (kubernetes-validate's, at
testbed.schemas.K8S_VERSION), AdmissionReview (admission.k8s.io/v1), the pydantic models' of
the topology document, profiles and weights, the extender's wire messages from
docs/api/extender.openapi.yaml, and cluster snapshots made of generated Nodes (with generated
topology documents) and Pods. Half of the documents the schema accepts, half are broken off it
(testbed/builders/schema_strategies.py). Examples per property: `KUBE_RDMA_FUZZ_EXAMPLES`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from extender import protocol
from extender.cluster.node_topology import read_topology
from extender.cluster.snapshot import SnapshotError, SnapshotSource
from extender.weights import WeightsFile, parse_weights
from kube_rdma.core import keys, topology
from kube_rdma.core.config_file import ConfigError
from testbed import schemas
from testbed.builders.schema_strategies import (
    from_schema,
    fuzz_settings,
    mutated_off,
    off_schema,
    on_and_off,
    raised,
)
from webhook import review
from webhook.profiles import ProfileError, ProfileSet, parse_profiles

FUZZ = fuzz_settings(60)
TOPOLOGY = schemas.model_schema(topology.Topology)


def text(document: Any) -> str:
    return json.dumps(document)  # integers past 64 bits too


@FUZZ
@given(document=from_schema(TOPOLOGY))
def test_topology_documents_the_schema_accepts_are_read(document: Any) -> None:
    topology.decode(text(document))
    found, reason = read_topology("gpu-1", text(document))
    assert (found is not None, reason) == (True, None)


@FUZZ
@given(document=off_schema(from_schema(TOPOLOGY)) | st.text(max_size=20))
def test_broken_topology_documents_are_refused_with_a_reason(document: Any) -> None:
    annotation = document if isinstance(document, str) else text(document)
    raised(lambda: topology.decode(annotation), ValidationError)
    found, reason = read_topology("gpu-1", annotation)
    assert (found is None) == (reason is not None)


@FUZZ
@given(document=on_and_off(schemas.model_schema(ProfileSet)))
def test_profiles_raise_only_profile_errors(document: Any) -> None:
    error = raised(lambda: parse_profiles(text(document), "profiles.yaml"), ProfileError)
    assert error is None or str(error).startswith("profiles.yaml: ")


@FUZZ
@given(document=on_and_off(schemas.model_schema(WeightsFile)))
def test_weights_raise_only_config_errors(document: Any) -> None:
    error = raised(lambda: parse_weights(text(document), "weights.yaml"), ConfigError)
    assert error is None or str(error).startswith("weights.yaml: ")


DECODERS = {
    "ExtenderArgs": protocol.decode_args,
    "ExtenderPreemptionArgs": protocol.decode_preemption,
    "ExtenderBindingArgs": protocol.decode_binding,
}


@pytest.mark.parametrize("message", sorted(DECODERS))
def test_extender_messages_raise_only_protocol_errors(message: str) -> None:
    decode = DECODERS[message]

    @FUZZ
    @given(document=on_and_off(schemas.component("extender", message)))
    def decoded(document: Any) -> None:
        error = raised(lambda: decode(text(document).encode()), protocol.ProtocolError)
        assert error is None or str(error)

    decoded()


@FUZZ
@given(document=on_and_off(schemas.admission_review_schema()))
def test_admission_reviews_raise_only_bad_request(document: Any) -> None:
    error = raised(lambda: review.decode(text(document).encode()), review.BadRequest)
    assert error is None or getattr(error, "status", None) == 400


def _named(kind: str, api_version: str) -> Any:
    """A generated object of `kind`, with the kind, apiVersion and a name (from few, so that
    some repeat) a snapshot reader needs to look further."""

    def shaped(obj: Any, name: str) -> Any:
        if not isinstance(obj, dict):
            return obj
        metadata = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
        return {
            **obj,
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {**metadata, "name": name},
        }

    schema = schemas.kubernetes_schema(schemas.NODE if kind == "Node" else schemas.POD)
    return st.builds(shaped, from_schema(schema), st.sampled_from(["a", "b", "gpu-1"]))


@st.composite
def _annotated_node(draw: st.DrawFn) -> Any:
    """A generated Node carrying a generated topology document (on or off its schema)."""
    node = draw(_named("Node", "v1"))
    if not isinstance(node, dict):
        return node
    document = draw(on_and_off(TOPOLOGY))
    metadata = node["metadata"]
    metadata["annotations"] = {**(metadata.get("annotations") or {}), keys.TOPOLOGY: text(document)}
    return node


SNAPSHOT_OBJECTS = st.lists(
    _annotated_node() | _named("Node", "v1") | _named("Pod", "v1"), max_size=4
)


@st.composite
def _snapshots(draw: st.DrawFn) -> Any:
    snapshot = {"apiVersion": "v1", "kind": "List", "items": draw(SNAPSHOT_OBJECTS)}
    if draw(st.booleans()):
        return draw(mutated_off(snapshot))
    return snapshot


# The cluster model's CEL environment (celpy.Environment) raises the recursion limit to 2,500
# when the first snapshot builds it, which Hypothesis notes and leaves be.
@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
@FUZZ
@given(snapshot=_snapshots())
def test_snapshots_raise_only_snapshot_errors(snapshot: Any) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "cluster.json"
        path.write_text(text(snapshot))
        error = raised(lambda: SnapshotSource.from_file(path), SnapshotError)
        assert error is None or str(error).startswith(f"{path}: ")
