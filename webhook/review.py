"""AdmissionReview (admission.k8s.io/v1) on the wire: decoding requests, building responses.

Two error channels, as in controller-runtime: a body that is not an AdmissionReview is an HTTP
error (400, 413) with a message; everything about the pod itself is answered with HTTP 200 and
the verdict in the response, with the request's uid echoed even when something failed.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson

from kube_rdma.core.logs import cap
from kube_rdma.core.objects import Json

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"

MESSAGE_LIMIT = 1024
"""Bytes (UTF-8) of a denial's message, and of each warning, at most. Both may quote what the
client sent (webhook/denied.py caps each quoted value), and the apiserver hands them on to the
client, its events and its audit log: a message ends in "…(truncated)" where it was cut."""


class BadRequest(Exception):
    """An HTTP body that is not a usable AdmissionReview."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def decode(body: bytes) -> Json:
    """The `request` of an AdmissionReview body; raises BadRequest saying what is wrong."""
    if not body.strip():
        raise BadRequest(f"empty body: expected an {KIND} ({API_VERSION}) JSON document")
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadRequest(
            f"body is not JSON (error at line {e.lineno}, column {e.colno}): expected an {KIND} "
            f"({API_VERSION})"
        ) from e
    if not isinstance(review, dict):
        raise BadRequest(f"body is a JSON {type(review).__name__}, expected an {KIND} object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if kind != KIND or api_version != API_VERSION:
        raise BadRequest(
            f"expected kind {KIND} with apiVersion {API_VERSION}, got kind {kind!r} with "
            f"apiVersion {api_version!r}; list {API_VERSION} in admissionReviewVersions"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadRequest(f"{KIND} has no `request` object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadRequest(f"{KIND} request has no `uid`")
    return request


def _review(uid: str, warnings: Sequence[str], **fields: Any) -> Json:
    response: Json = {"uid": uid, **fields}
    if warnings:
        response["warnings"] = [cap(w, MESSAGE_LIMIT) for w in warnings]
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def allowed(uid: str, warnings: Sequence[str] = ()) -> Json:
    return _review(uid, warnings, allowed=True)


def patched(uid: str, patch: list[Json], warnings: Sequence[str] = ()) -> Json:
    encoded = base64.b64encode(orjson.dumps(patch)).decode()
    return _review(uid, warnings, allowed=True, patchType="JSONPatch", patch=encoded)


def denied(uid: str, message: str, warnings: Sequence[str] = (), code: int = 403) -> Json:
    status = {"code": code, "reason": "Forbidden", "message": cap(message, MESSAGE_LIMIT)}
    return _review(uid, warnings, allowed=False, status=status)


def invalid(uid: str, message: str) -> Json:
    """The review is well-formed but the object in it is not what it claims to be."""
    status = {"code": 400, "reason": "BadRequest", "message": cap(message, MESSAGE_LIMIT)}
    return _review(uid, (), allowed=False, status=status)


def errored(uid: str, message: str) -> Json:
    status = {"code": 500, "reason": "InternalError", "message": cap(message, MESSAGE_LIMIT)}
    return _review(uid, (), allowed=False, status=status)
