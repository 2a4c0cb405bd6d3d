"""A pod of the wrong shape in a verb's body gets 400 naming the field, never a 500: each part
the extender reads (metadata, spec, status and what they hold) of the wrong JSON type."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from extender.cluster.trim import trim_pod
from tests.extender.test_app import NAMES, WORKER, Client, client  # noqa: F401 - the fixture

WRONG = [
    ({"status": []}, "status is a JSON list, expected an object"),
    ({"status": "Pending"}, "status is a JSON string, expected an object"),
    ({"status": {"phase": 3}}, "status.phase is a JSON number, expected a string"),
    ({"status": {"conditions": {}}}, "status.conditions is a JSON object, expected a list"),
    ({"status": {"conditions": [None]}}, "status.conditions[0] is null, expected an object"),
    ({"spec": []}, "spec is a JSON list, expected an object"),
    ({"spec": {"tolerations": {}}}, "spec.tolerations is a JSON object, expected a list"),
    (
        {"spec": {"tolerations": [{"key": 5}]}},
        "spec.tolerations[0].key is a JSON number, expected a string",
    ),
    ({"spec": {"nodeSelector": []}}, "spec.nodeSelector is a JSON list, expected an object"),
    ({"spec": {"affinity": "x"}}, "spec.affinity is a JSON string, expected an object"),
    (
        {
            "spec": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
            }
        },
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is a JSON "
        "list, expected an object",
    ),
    ({"spec": {"priority": "2000000000"}}, "spec.priority is a JSON string, expected an integer"),
]


def wrong(change: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = orjson.loads(orjson.dumps(WORKER))
    for part, value in change.items():
        if isinstance(value, dict) and isinstance(pod.get(part), dict):
            pod[part] = {**pod[part], **value}
        else:
            pod[part] = value
    return pod


@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
@pytest.mark.parametrize(("change", "message"), WRONG)
async def test_a_part_of_the_wrong_type_is_400_with_the_field(
    client: Client,  # noqa: F811 - the fixture
    verb: str,
    change: dict[str, Any],
    message: str,
) -> None:
    body = {"Pod": wrong(change), "NodeNames": NAMES}
    status, answer = await client.post(verb, body)
    assert (status, answer) == (400, {"error": f"ExtenderArgs.Pod is not a Pod: {message}"})


async def test_metadata_of_the_wrong_type_is_400(client: Client) -> None:  # noqa: F811
    status, answer = await client.post(
        "filter", {"Pod": {**WORKER, "metadata": []}, "NodeNames": NAMES}
    )
    assert (status, answer) == (
        400,
        {"error": "ExtenderArgs.Pod must be a Pod object with metadata"},
    )


@pytest.mark.parametrize(("change", "message"), WRONG)
def test_trim_pod_takes_a_part_of_the_wrong_type_as_absent(
    change: dict[str, Any], message: str
) -> None:
    """The cache's trimming never raises either (a watch never delivers such a pod, but a
    caller that skipped the check must not crash the extender)."""
    trimmed = trim_pod(wrong(change))
    assert trimmed["metadata"]["name"] == "worker-0"
    assert isinstance(trimmed["spec"], dict)
