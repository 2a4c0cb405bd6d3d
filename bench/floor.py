"""The do-nothing floor: an aiohttp server that decodes what the extender or the webhook is sent
and answers a body of the same shape, doing no work of its own.

A latency is only meaningful against what the stack under it costs: the HTTP server, JSON
decode and encode, the client, the loopback, TLS for the webhook. This server pays exactly that
and nothing else, served like the real one (`web.run_app`, no access log, one process), so the
benches can report the real server's latency as a ratio to it, measured in the same run:
- `POST /filter`: every name passes (an ExtenderFilterResult naming them all),
- `POST /prioritize`: one fixed score per name (a HostPriorityList),
- `POST /mutate`: the AdmissionReview allowed, with an empty JSONPatch.

    python -m bench.floor --port 8080 [--tls-cert-file F --tls-key-file K]
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

import orjson
from aiohttp import web

FIXED_SCORE = 5
EMPTY_PATCH = base64.b64encode(b"[]").decode()


def _json(body: object) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def handle_filter(request: web.Request) -> web.Response:
    args = orjson.loads(await request.read())
    nodes = args.get("Nodes")
    names = args["NodeNames"] if nodes is None else [n["metadata"]["name"] for n in nodes["items"]]
    return _json(
        {
            "NodeNames": names,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
            "Nodes": nodes,
        }
    )


async def handle_prioritize(request: web.Request) -> web.Response:
    args = orjson.loads(await request.read())
    return _json([{"Host": name, "Score": FIXED_SCORE} for name in args["NodeNames"]])


async def handle_mutate(request: web.Request) -> web.Response:
    review = orjson.loads(await request.read())
    response = {
        "uid": review["request"]["uid"],
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": EMPTY_PATCH,
    }
    return _json({"apiVersion": review["apiVersion"], "kind": review["kind"], "response": response})


def create_app() -> web.Application:
    app = web.Application(client_max_size=16 << 20)
    app.router.add_post("/filter", handle_filter)
    app.router.add_post("/prioritize", handle_prioritize)
    app.router.add_post("/mutate", handle_mutate)
    app.router.add_get("/healthz", handle_healthz)
    return app


async def handle_healthz(request: web.Request) -> web.Response:
    """What the benches wait for before they start: the server runs, not merely a bound port."""
    return web.Response(text="ok\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls-cert-file", type=Path)
    parser.add_argument("--tls-key-file", type=Path)
    args = parser.parse_args()
    context = None
    if args.tls_cert_file:
        # The webhook's own TLS set-up (certs/reload.py), so both pay the same handshake and
        # record costs.
        from certs.reload import CertificateReloader

        context = CertificateReloader(args.tls_cert_file, args.tls_key_file).context
    web.run_app(
        create_app(), host=args.host, port=args.port, ssl_context=context, print=None,
        access_log=None,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
