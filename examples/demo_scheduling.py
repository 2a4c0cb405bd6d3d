"""The demo's scheduling half: the calls kube-scheduler makes to the extender, printed readably.

kube-scheduler asks `/filter` which nodes can take a pod (a node that fails is busy when it
could take the pod once other pods leave, unsuitable when it cannot as it is), `/prioritize`
how good each passing node is (0-10), and `/bind` to bind the pod to the node it chose. A gang's
binds wait for each other, so they are sent at once, as kube-scheduler's binding cycles run.
"""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from examples.demo_cluster import FINETUNE, MEMBERS, NAMESPACE
from kube_rdma.core.objects import Json

INDENT = "     "


def call(url: str, body: Json | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return json.loads(text) if text.lstrip().startswith(("{", "[")) else text


class Scheduler:
    """kube-scheduler's side of the extender protocol, for the demo's pods."""

    def __init__(self, base: str, pods: dict[str, Json], nodes: list[str]) -> None:
        self.base, self.pods, self.nodes = base, pods, nodes

    def filter(self, name: str) -> Json:
        answer: Json = call(
            f"{self.base}/filter", {"Pod": self.pods[name], "NodeNames": self.nodes}
        )
        return answer

    def prioritize(self, name: str, passed: list[str]) -> list[tuple[str, int]]:
        scores = call(f"{self.base}/prioritize", {"Pod": self.pods[name], "NodeNames": passed})
        ranked = sorted(((s["Host"], int(s["Score"])) for s in scores), key=lambda s: -s[1])
        return ranked

    def bind(self, name: str, node: str) -> str:
        body = {"PodName": name, "PodNamespace": NAMESPACE, "PodUID": f"uid-{name}", "Node": node}
        return str(call(f"{self.base}/bind", body).get("Error", ""))

    def explain(self, name: str, table: bool = True) -> Any:
        form = "&format=table" if table else ""
        return call(f"{self.base}/explain?namespace={NAMESPACE}&name={name}{form}")


def verdicts(filtered: Json) -> str:
    return (
        f"{len(filtered['NodeNames'])} pass, {len(filtered['FailedNodes'])} busy, "
        f"{len(filtered['FailedAndUnresolvableNodes'])} unsuitable"
    )


def gang_step(scheduler: Scheduler) -> None:
    """The job's four pods: explained, planned whole at the first filter, bound together."""
    first = MEMBERS[1]
    print(
        f"\n2. extender: the PyTorchJob {NAMESPACE}/llama-70b, 4 pods like the one above. "
        f"`kube-rdma explain {NAMESPACE}/{first}` before kube-scheduler calls:"
    )
    for line in str(scheduler.explain(first)).splitlines():
        print(INDENT + line)
    print("\n   kube-scheduler's calls, one pod per cycle:")
    chosen = {}
    for name in MEMBERS:
        filtered = scheduler.filter(name)
        ranked = scheduler.prioritize(name, filtered["NodeNames"])
        chosen[name] = ranked[0][0]
        print(
            f"{INDENT}{name}: filter {verdicts(filtered)}; prioritize "
            + ", ".join(f"{node} {score}" for node, score in ranked)
        )
        if name == MEMBERS[0]:
            print(f"{INDENT}  {plan_line(scheduler.explain(name, table=False))}")
    with ThreadPoolExecutor(len(MEMBERS)) as pool:
        errors = dict(zip(MEMBERS, pool.map(scheduler.bind, MEMBERS, chosen.values()), strict=True))
    print(f"{INDENT}bind, sent together; each waits at the gang's barrier for the others:")
    for name in MEMBERS:
        print(f"{INDENT}  {name} -> {chosen[name]}: {errors[name] or 'bound'}")


def plan_line(body: Json) -> str:
    gang = body["gang"]
    plan = gang.get("plan")
    if not plan:
        return f"gang {gang.get('name', '?')}: not planned"
    return (
        f"its filter planned the gang whole, in the narrowest domain that holds all "
        f"{gang['size']}: {plan['domain']} ({', '.join(plan['nodes'])}); every other node "
        "now fails for its pods"
    )


def single_step(scheduler: Scheduler) -> None:
    """A 4-GPU pod after the gang: bin-packing steers it to the half-used node."""
    filtered = scheduler.filter(FINETUNE)
    ranked = scheduler.prioritize(FINETUNE, filtered["NodeNames"])
    print(
        f"\n3. extender: {NAMESPACE}/{FINETUNE}, 4 GPUs and no gang, after the job; "
        "bin-packing prefers the node it fills most:"
    )
    print(f"{INDENT}filter {verdicts(filtered)}")
    for node, reason in sorted(filtered["FailedNodes"].items())[:2]:
        print(f"{INDENT}  busy {node}: {reason}")
    for node, reason in sorted(filtered["FailedAndUnresolvableNodes"].items())[:3]:
        print(f"{INDENT}  unsuitable {node}: {reason}")
    print(f"{INDENT}prioritize " + ", ".join(f"{node} {score}" for node, score in ranked))
    best = ranked[0][0]
    print(f"{INDENT}bind -> {best} ({scheduler.bind(FINETUNE, best) or 'bound'})")
