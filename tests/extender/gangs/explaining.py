"""The gang part of what the extender's /explain answers over HTTP, for the native-gang proofs."""

from __future__ import annotations

import aiohttp

from kube_rdma.core.objects import Json


async def gang_part(url: str, namespace: str, pod: str) -> Json:
    """The `gang` part of /explain's answer for the pod, as it came."""
    query = {"namespace": namespace, "name": pod}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/explain", params=query) as answer,
    ):
        body: Json = await answer.json()
    gang: Json = body["gang"]
    return gang


async def explained_gang(url: str, namespace: str, pod: str) -> Json:
    """The pod's gang as /explain names it: name, size, source and the native group."""
    gang = await gang_part(url, namespace, pod)
    return {k: gang[k] for k in ("name", "size", "source", "native") if k in gang}
