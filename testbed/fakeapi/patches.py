"""PATCH bodies applied by content type: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and
strategic merge patch.

A strategic merge patch is applied as a JSON merge patch: lists are replaced rather than merged
by their patch merge key, and `$patch`-style directives are refused with 400, so a test that
relies on list merging fails loudly instead of passing against a lenient fake.
"""

from __future__ import annotations

import copy
from typing import Any, Final

import jsonpatch

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError

MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"


def apply_patch(obj: Json, patch: Any, content_type: str) -> Any:
    """`obj` patched as the content type says; `obj` itself is left alone."""
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(400, "a JSON patch must be a list of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise ApiError(422, f"the JSON patch does not apply: {e}") from e
    if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        if not isinstance(patch, dict):
            raise ApiError(400, "a merge patch must be a JSON object")
        return merge_patch(obj, patch, strategic=content_type == STRATEGIC_MERGE_PATCH)
    raise ApiError(415, f"the body of the request was in an unknown format: {content_type}")


def merge_patch(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    """RFC 7386: maps merge key by key, null deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            raise ApiError(400, f"fake apiserver: strategic merge directive {key} is unsupported")
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strategic=strategic)
    return result
