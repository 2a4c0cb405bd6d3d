"""Review semantics: which pods the webhook touches, with which profile, and the verdict.

This is the layer between the wire (review.py) and the pure mutation (mutate.py): it applies
the opt-in rules, looks up the namespace's labels only when they matter, and turns the
mutation's result into an allowed, patched or denied response.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.podshape import pod_problem
from kube_rdma.core.quantity import QuantityError
from kube_rdma.core.workloads import training_key
from webhook import review
from webhook.denied import echo
from webhook.dra.attach import template_for
from webhook.dra.kinds import DeviceKind
from webhook.dra.resolve import Resolver
from webhook.dra.source import DraSource, ReviewReads, StaticDra
from webhook.mutate import Denied, Target, mutate
from webhook.namespaces import NamespaceSource
from webhook.patch import diff
from webhook.podsecurity import Level, enforced_level
from webhook.podspec import gpu_count
from webhook.profile_store import ProfileStore
from webhook.profiles import Profile, ProfileSet

log = logging.getLogger("kube_rdma.webhook")

PROTECTED_NAMESPACES = frozenset({"kube-system", "kube-rdma", "kube-rdma-agent", "kube-rdma-plans"})
"""Namespaces never mutated, whatever their labels or the pod's annotations say: the system's,
and kube-rdma's own (manifests/namespaces): the webhook's and the scheduler's, the node agent's
privileged one, and the gang plan records'. The MutatingWebhookConfiguration excludes them
too; this holds where a configuration edited by hand does not (docs/security.md). The
webhook's own namespace (--own-namespace) is added when it is another."""


@dataclass(frozen=True)
class Decision:
    """The response to send and what to record about it."""

    response: Json
    outcome: str
    profile: str = ""


class Admitter:
    def __init__(
        self,
        profiles: ProfileStore,
        namespaces: NamespaceSource,
        own_namespace: str | None,
        default_level: Level = Level.PRIVILEGED,
        dra: DraSource | None = None,
    ) -> None:
        self._profiles = profiles
        self._namespaces = namespaces
        self._dra = dra if dra is not None else StaticDra()
        self._default_level = default_level
        self._protected = PROTECTED_NAMESPACES | ({own_namespace} if own_namespace else set())

    async def review(self, request: Json) -> Decision:
        uid = request["uid"]
        if not _is_pod_create(request):
            return Decision(review.allowed(uid), "ignored")
        pod = request.get("object")
        if not isinstance(pod, dict):
            raise review.BadRequest("a Pod CREATE review needs the pod in request.object")
        problem = pod_problem(pod)
        if problem:
            return Decision(
                review.invalid(uid, f"request.object is not a Pod: {problem}"), "invalid"
            )
        namespace = request.get("namespace") or (pod.get("metadata") or {}).get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise review.BadRequest("a Pod CREATE review needs request.namespace")
        if namespace in self._protected:
            log.warning(
                "asked to review a pod in namespace %s, which kube-rdma never mutates; allowed "
                "unchanged. Exclude it in the MutatingWebhookConfiguration's namespaceSelector",
                namespace,
                extra={"uid": uid, "namespace": namespace},
            )
            return Decision(review.allowed(uid), "ignored")
        profiles = self._profiles.current
        reads = ReviewReads(self._dra)
        try:
            name = await self._opted_in_profile(pod, namespace, profiles, reads)
        except Denied as e:
            return Decision(review.denied(uid, str(e)), "denied")
        if name is None:
            return Decision(review.allowed(uid), "not-selected")
        labels = await self._namespaces.labels(namespace)
        level, warning = enforced_level(labels, self._default_level)
        warnings = [warning] if warning else []
        profile = profiles.profiles[name]
        try:
            target = await self._target(
                pod, name, profile, Target(namespace, level), reads, warnings
            )
            outcome = mutate(pod, name, profile, target)
        except Denied as e:
            return Decision(review.denied(uid, str(e), warnings), "denied", name)
        warnings += outcome.warnings
        patch = diff(pod, outcome.pod)
        if not patch:
            return Decision(review.allowed(uid, warnings), "unchanged", name)
        return Decision(review.patched(uid, patch, warnings), "patched", name)

    @staticmethod
    async def _target(
        pod: Json,
        name: str,
        profile: Profile,
        target: Target,
        reads: ReviewReads,
        warnings: list[str],
    ) -> Target:
        """`target` with what the pod's claims give and the template the profile attaches."""
        resolver = Resolver(reads, target.namespace, profile.dra)
        resolved = await resolver.pod_claims(pod)
        warnings += resolved.warnings
        try:
            plan, reason = template_for(pod, profile, resolved.claims)
        except QuantityError as e:
            raise Denied(f"{e}; fix the pod's resources") from e
        warnings += filter(None, [reason])
        if plan is None:
            return replace(target, claims=resolved.claims)
        template = await resolver.template(plan.template)
        if template is None:
            raise Denied(_missing_template(target.namespace, name, plan.template, plan.gpus))
        devices = await resolver.devices({**template, "kind": "ResourceClaimTemplate"})
        # Judging the template's classes may warn too (a class that counts as neither kind).
        warnings += [w for w in resolved.warnings if w not in warnings]
        given = {k for d in devices.values() for k in d.kinds}
        missing = [k.value for k in (DeviceKind.GPU, DeviceKind.NIC) if k not in given]
        if missing:
            raise Denied(
                f"ResourceClaimTemplate {target.namespace}/{plan.template}, which RDMA profile "
                f'"{name}" attaches to pods with {plan.gpus} GPUs, requests no '
                + " and no ".join(missing)
                + " device class the profile knows (dra.gpuClasses, gpuDrivers, nicClasses, "
                "nicDrivers); fix the template or the profile"
            )
        claims = resolved.claims.with_entry(plan.claim_name, devices)
        return replace(target, claims=claims, attach=plan)

    async def _opted_in_profile(
        self, pod: Json, namespace: str, profiles: ProfileSet, reads: ReviewReads
    ) -> str | None:
        """The profile the pod opted into, or None; raises Denied for a bad choice."""
        metadata = pod.get("metadata") or {}
        annotations: Mapping[str, str] = metadata.get("annotations") or {}
        inject = annotations.get(keys.INJECT)
        if inject is not None and inject.lower() not in ("true", "false"):
            raise Denied(f'{keys.INJECT} must be "true" or "false", not {echo(inject)}')
        if inject is not None and inject.lower() == "false":
            return None
        chosen = annotations.get(keys.PROFILE)
        if chosen is not None:
            if chosen not in profiles.profiles:
                raise Denied(
                    f"RDMA profile {echo(chosen)} (annotation {keys.PROFILE}) does not exist; "
                    f"valid profiles: {', '.join(sorted(profiles.profiles))}"
                )
            return chosen
        if inject is not None:
            return profiles.default_profile
        metadata = pod.get("metadata") or {}
        if not training_key(metadata.get("labels") or {}, metadata.get("annotations") or {}):
            return None
        labels = await self._namespaces.labels(namespace)
        if labels.get(keys.INJECTION) != keys.INJECTION_ENABLED:
            return None
        if await _requests_gpus(pod, namespace, profiles.default, reads):
            return profiles.default_profile
        return None


async def _requests_gpus(pod: Json, namespace: str, profile: Profile, reads: ReviewReads) -> bool:
    """Whether a container asks for GPUs: as a resource, or (read only then) by a claim."""
    containers = (pod.get("spec") or {}).get("containers") or []
    try:
        if any(gpu_count(c, profile.gpu_resources) > 0 for c in containers):
            return True
    except QuantityError as e:
        raise Denied(f"{e}; fix the pod's resources") from e
    if not (pod.get("spec") or {}).get("resourceClaims"):
        return False
    claims = (await Resolver(reads, namespace, profile.dra).pod_claims(pod)).claims
    return any(claims.gpus(c) for c in containers)


def _missing_template(namespace: str, profile: str, template: str, gpus: int) -> str:
    return (
        f'ResourceClaimTemplate "{template}" does not exist in namespace "{namespace}". RDMA '
        f'profile "{profile}" gives pods with {gpus} GPUs their GPUs and RDMA NICs through it '
        "(dra.claimTemplates), and a pod can only use a template of its own namespace: ask the "
        f"cluster admin to create it in {namespace} (kube-rdma's manifests/examples/dra holds "
        f'one), or opt this pod out with {keys.INJECT}: "false"'
    )


def _is_pod_create(request: Json) -> bool:
    kind = request.get("kind")
    return (
        isinstance(kind, dict)
        and kind.get("kind") == "Pod"
        and kind.get("group", "") == ""
        and not request.get("subResource")
        and request.get("operation") == "CREATE"
    )
