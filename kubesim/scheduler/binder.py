"""The binding cycle's call: through the extender's /bind when it binds the pod's kind, else the
default binder's POST of a Binding to the apiserver; what came of it either way.

As kube-scheduler's binding cycle, it runs while the next pods are scheduled; the caller keeps
the pod assumed on its node until the call returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import ApiError
from kubesim.scheduler.apiserver import ApiCalls
from kubesim.scheduler.clock import Clock
from kubesim.scheduler.extender_client import ExtenderClient, ExtenderError
from kubesim.scheduler.pods import PodKey, pod_key


@dataclass(frozen=True)
class BindOutcome:
    """One binding cycle."""

    pod: PodKey
    node: str
    via: Literal["extender", "apiserver"]
    error: str
    started: float
    finished: float

    @property
    def ok(self) -> bool:
        return not self.error


class Binder:
    """Binds through `extender` (None: the extender does not bind) for the pods it is interested
    in, through `apiserver` for the others."""

    def __init__(self, apiserver: ApiCalls, extender: ExtenderClient | None, clock: Clock) -> None:
        self._apiserver, self._extender, self._clock = apiserver, extender, clock

    async def bind(self, pod: Json, node: str) -> BindOutcome:
        key, started = pod_key(pod), self._clock.now()
        extender = self._extender
        if extender is not None and not extender.interested(pod):
            extender = None
        try:
            if extender is not None:
                await extender.bind(pod, node)
            else:
                await self._apiserver.bind(*key, (pod.get("metadata") or {}).get("uid"), node)
            error = ""
        except ExtenderError as e:
            error = str(e)
        except ApiError as e:  # its text begins "binding <namespace>/<name> to <node>: "
            error = str(e)
        via: Literal["extender", "apiserver"] = "apiserver" if extender is None else "extender"
        return BindOutcome(key, node, via, error, started, self._clock.now())
