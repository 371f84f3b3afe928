"""Decision → ResourceClaimTemplate + RFC 6902 JSONPatch against the original pod (DESIGN.md translation rules).

Legacy GPU resources of the decided containers are removed from requests and limits, each container gets a
`resources.claims` entry naming its request, and one `spec.resourceClaims` entry points at a template named
from a hash of its spec. A pod without legacy resources (already DRA, or already translated) is left alone.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jsonpatch

from policyengine import HAMI_RESOURCES, Decision
from policyengine.decision import canonical_json, claim_digest

__all__ = [
    "CLAIM_NAME",
    "MANAGED_BY",
    "POLICY_ANNOTATION",
    "TEMPLATE_PREFIX",
    "TRANSLATED_ANNOTATION",
    "WOULD_SIZE_ANNOTATION",
    "WOULD_TRANSLATE_ANNOTATION",
    "Translation",
    "claim_template",
    "pointer",
    "template_name",
    "translate",
    "translation_key",
]

CLAIM_NAME = "gpudra"
TEMPLATE_PREFIX = "gpudra"
TRANSLATED_ANNOTATION = "gpudra.io/translated"
POLICY_ANNOTATION = "gpudra.io/policy"
WOULD_TRANSLATE_ANNOTATION = "gpudra.io/would-translate"
WOULD_SIZE_ANNOTATION = "gpudra.io/would-size"  # audit: container -> the size observed usage or a model gave
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpudra"}


@dataclass(frozen=True)
class Translation:
    """The templates to create, the patch that turns the pod into the mutated one, and warnings.

    `pod` (the mutated pod) is built on first access by applying the patch to a copy of `source`: the webhook
    only sends the patch, so it never pays for the copy.
    """

    source: Mapping[str, Any]
    templates: tuple[dict[str, Any], ...] = ()
    patch: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def pod(self) -> dict[str, Any]:
        original: dict[str, Any] = _copy(dict(self.source))
        if not self.patch:
            return original
        mutated: dict[str, Any] = jsonpatch.apply_patch(original, _copy(list(self.patch)), in_place=True)
        return mutated

    @property
    def changed(self) -> bool:
        return bool(self.patch)

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "templates": list(self.templates),
            "patch": list(self.patch),
            "warnings": list(self.warnings),
        }


def _copy(data: Any) -> Any:
    """A deep copy of JSON data (several times faster than `copy.deepcopy`, which tracks shared references)."""
    if type(data) is dict:
        return {k: _copy(v) for k, v in data.items()}
    if type(data) is list:
        return [_copy(v) for v in data]
    return data if type(data) in (str, int, float, bool) or data is None else copy.deepcopy(data)


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer: `~` becomes `~0` and `/` becomes `~1` in each part."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


_canonical = canonical_json


def template_name(claim: Mapping[str, Any], prefix: str = TEMPLATE_PREFIX, digest: str = "") -> str:
    """`<prefix>-<10 hex>` from the SHA-256 of the claim spec's canonical JSON: identical requests share it.
    `digest`: that SHA-256 (`claim_digest(claim)`) when the caller has it.

    The webhook's prefix is always `gpudra`; `gpudra translate` names a workload's templates after the workload.
    """
    return f"{prefix}-" + (digest or claim_digest(claim))[:10]


def claim_template(
    claim: Mapping[str, Any], namespace: str, prefix: str = TEMPLATE_PREFIX, digest: str = "", blob: bytes | None = None
) -> dict[str, Any]:
    """The ResourceClaimTemplate (resource.k8s.io/v1, Kubernetes JSON) for `claim` in `namespace`. `digest` and
    `blob` (the claim's pickle, `Decision.claim_blob`) are what the caller already has of it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(claim, prefix, digest), "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": {"spec": pickle.loads(blob) if blob is not None else _copy(dict(claim))},
    }


def _claim_entry_name(pod: Mapping[str, Any]) -> str:
    taken = {c.get("name") for c in (pod.get("spec") or {}).get("resourceClaims") or [] if isinstance(c, dict)}
    name, n = CLAIM_NAME, 1
    while name in taken:
        n += 1
        name = f"{CLAIM_NAME}-{n}"
    return name


def _removals(container: Mapping[str, Any], base: str, replaces: Mapping[str, int]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    resources = container.get("resources") or {}
    for part in ("requests", "limits"):
        values = resources.get(part)
        if not isinstance(values, dict):
            continue
        present = [name for name in sorted(values) if name in replaces]
        if not present:
            continue
        if len(present) == len(values):
            ops.append({"op": "remove", "path": f"{base}/resources/{part}"})
        else:
            ops.extend({"op": "remove", "path": f"{base}/resources/{part}/{pointer(n)[1:]}"} for n in present)
    return ops


_HAMI_MEANING = {
    "nvidia.com/gpumem": "MiB of device memory per GPU",
    "nvidia.com/gpumem-percentage": "percent of the device's memory",
    "nvidia.com/gpucores": "percent of the device's SMs",
}


def _hami(container: Mapping[str, Any]) -> dict[str, Any]:
    """The HAMi resources of a container (limits win over requests), which no cluster without HAMi can satisfy."""
    resources = container.get("resources") or {}
    found: dict[str, Any] = {}
    for part in ("requests", "limits"):
        values = resources.get(part)
        if isinstance(values, dict):
            found.update((name, values[name]) for name in HAMI_RESOURCES if name in values)
    return found


def _request_summary(claim: Mapping[str, Any], request: str) -> str:
    for entry in (claim.get("devices") or {}).get("requests") or []:
        if entry.get("name") != request:
            continue
        if entry.get("firstAvailable"):
            return "the first available of " + ", ".join(str(sub.get("name")) for sub in entry["firstAvailable"])
        exactly = entry.get("exactly") or {}
        if exactly.get("allocationMode") == "All":
            return f"all matching {exactly.get('deviceClassName')} devices"
        return f"{exactly.get('count', 1)} x {exactly.get('deviceClassName')}"
    return "its DRA request"


def _hami_warnings(pod: Mapping[str, Any], decision: Decision, described: list[str]) -> list[str]:
    """One warning per HAMi resource removed from a translated container, unless a policy warning already says what
    it became (names the resource and `container '<name>'`)."""
    warnings: list[str] = []
    for request in decision.containers:
        container = pod["spec"][request.kind][request.index]
        for name, value in _hami(container).items():
            mark = f"container '{request.container}'"
            if any(name in w and mark in w for w in described):
                continue
            warnings.append(
                f"HAMi resource {name}: {value} ({_HAMI_MEANING[name]}) removed from {mark}: GPUClaimPolicy "
                f"'{decision.policy}' does not read it, the container's DRA request asks for "
                f"{_request_summary(decision.claim or {}, request.request)}"
            )
    return warnings


def _annotation_ops(pod: Mapping[str, Any], values: dict[str, str]) -> list[dict[str, Any]]:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return [{"op": "add", "path": "/metadata", "value": {"annotations": values}}]
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        return [{"op": "add", "path": "/metadata/annotations", "value": values}]
    return [{"op": "add", "path": pointer("metadata", "annotations", k), "value": v} for k, v in values.items()]


def _patch(pod: Mapping[str, Any], decision: Decision, template: str) -> list[dict[str, Any]]:
    spec = pod["spec"]
    entry = _claim_entry_name(pod)
    ops: list[dict[str, Any]] = []
    for request in decision.containers:
        containers = spec.get(request.kind) or []
        if request.index >= len(containers) or containers[request.index].get("name") != request.container:
            raise ValueError(
                f"decision does not belong to this pod: spec.{request.kind}[{request.index}] "
                f"is not container {request.container!r}"
            )
        container = containers[request.index]
        base = pointer("spec", request.kind, request.index)
        ops.extend(_removals(container, base, {**request.replaces, **_hami(container)}))
        refs = [{"name": entry, "request": name} for name in request.requests]
        if isinstance((container.get("resources") or {}).get("claims"), list):
            ops.extend({"op": "add", "path": f"{base}/resources/claims/-", "value": ref} for ref in refs)
        elif isinstance(container.get("resources"), dict):
            ops.append({"op": "add", "path": f"{base}/resources/claims", "value": refs})
        else:
            ops.append({"op": "add", "path": f"{base}/resources", "value": {"claims": refs}})
    claim_ref = {"name": entry, "resourceClaimTemplateName": template}
    if isinstance(spec.get("resourceClaims"), list):
        ops.append({"op": "add", "path": "/spec/resourceClaims/-", "value": claim_ref})
    else:
        ops.append({"op": "add", "path": "/spec/resourceClaims", "value": [claim_ref]})
    ops.extend(_annotation_ops(pod, {TRANSLATED_ANNOTATION: template, POLICY_ANNOTATION: decision.policy or ""}))
    return ops


def _container_key(container: Any) -> tuple[Any, ...] | None:
    """What `_patch` and `_hami_warnings` read of a decided container besides its name (None: not a shape they
    read without raising, so not keyed)."""
    if type(container) is not dict:
        return None
    resources = container.get("resources")
    if resources and not isinstance(resources, dict):
        return None
    resources = resources or {}
    hami = _hami(container)
    parts: list[Any] = [isinstance(container.get("resources"), dict), isinstance(resources.get("claims"), list)]
    for part in ("requests", "limits"):
        values = resources.get(part)
        # which of them are removed is a matter of the request's `replaces` and the HAMI names, both in the key
        parts.append(tuple(sorted(values)) if isinstance(values, dict) else None)
    # repr tells 1, 1.0, True and "1" apart (they are equal as keys), and the warning prints the value
    parts.append(tuple((name, repr(value)) for name, value in hami.items()))
    return tuple(parts)


def translation_key(pod: Mapping[str, Any], decision: Decision) -> tuple[Any, ...] | None:
    """Everything `translate(pod, decision)` reads, for an enforced claim: pods and decisions with equal keys get
    equal templates, patches and warnings (of their own source pod). None when the translation is not keyed (not an
    enforced claim with its pickle, or a pod shape `translate` would fail on: it is then translated, and fails, as
    it would).

    Of the decision: its mode, policy, namespace, warnings, claim (its pickle: equal bytes, an equal claim in the same
    key order) and each container request; of the pod: the claim entry's name and whether `spec.resourceClaims` is a
    list, whether metadata and annotations are objects, and of each decided container its name, whether its
    resources and their claims are an object and a list, the names of its requests and limits, and its HAMI values.
    """
    if (
        not decision.allowed
        or decision.mode != "enforce"
        or decision.claim is None
        or decision.claim_blob is None
        or not decision.containers
    ):
        return None
    spec = pod.get("spec")
    metadata = pod.get("metadata")
    if type(spec) is not dict:
        return None
    parts: list[Any] = [
        decision.policy,
        decision.namespace,
        decision.claim_digest,
        decision.claim_blob,
        tuple(decision.warnings),
        _claim_entry_name(pod),
        isinstance(spec.get("resourceClaims"), list),
        0 if not isinstance(metadata, dict) else 1 if not isinstance(metadata.get("annotations"), dict) else 2,
    ]
    for request in decision.containers:
        containers = spec.get(request.kind) or []
        if type(containers) is not list or request.index >= len(containers):
            return None
        container = containers[request.index]
        shape = _container_key(container)
        if shape is None or container.get("name") != request.container:
            return None
        parts.append(
            (
                request.kind,
                request.index,
                request.container,
                request.request,
                tuple(request.requests),
                tuple(request.replaces),
                shape,
            )
        )
    return tuple(parts)


def translate(pod: Mapping[str, Any], decision: Decision, template_prefix: str = TEMPLATE_PREFIX) -> Translation:
    """Apply `decision` to `pod`: enforce → template + patch; audit → the would-be claim in warnings only.

    `pod` is read, never modified or copied here; the patch shares no objects with it. `template_prefix` starts
    the template's name (`<prefix>-<hash>`).
    """
    warnings = list(decision.warnings)
    if not decision.allowed or decision.claim is None or not decision.containers:
        return Translation(pod, warnings=tuple(warnings))
    template = claim_template(
        decision.claim, decision.namespace, template_prefix, decision.claim_digest, decision.claim_blob
    )
    name = template["metadata"]["name"]
    if decision.mode != "enforce":
        containers = ", ".join(c.container for c in decision.containers)
        summary = _canonical({"template": name, "claim": decision.claim})
        warnings.append(
            f"audit: GPUClaimPolicy '{decision.policy}' would replace the legacy GPU resources of "
            f"{containers} with ResourceClaimTemplate {name}: {summary}"
        )
        annotations = {WOULD_TRANSLATE_ANNOTATION: summary}
        for container, note in sorted(decision.sizing.items()):  # observed usage or a model estimate sized it
            warnings.append(f"audit: would size container {container} to {note}")
        if decision.sizing:
            annotations[WOULD_SIZE_ANNOTATION] = _canonical(dict(decision.sizing))
        return Translation(pod, warnings=tuple(warnings), audit_annotations=annotations)
    ops = _patch(pod, decision, name)
    warnings.extend(_hami_warnings(pod, decision, warnings))
    return Translation(pod, (template,), tuple(ops), tuple(warnings))
