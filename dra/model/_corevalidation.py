"""Validation of the core/v1 and metav1 pieces DRA objects embed, as k8s.io/kubernetes pkg/apis/core/validation.

ObjectMeta (names, namespace, labels, annotations), NodeSelector, metav1.Condition, and the DRA fields of a Pod
(`spec.resourceClaims`, `resources.claims`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dra._names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from dra.model._fields import Errors, Path
from dra.model.meta import Condition, NodeSelector, NodeSelectorRequirement, ObjectMeta
from dra.model.pod import Container, Pod, PodResourceClaim

__all__ = [
    "validate_conditions",
    "validate_label_name",
    "validate_node_name",
    "validate_node_selector",
    "validate_object_meta",
    "validate_pod",
    "validate_template_object_meta",
]

NameCheck = Callable[[str], list[str]]
_TOTAL_ANNOTATION_SIZE = 256 * 1024


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    """apimachinery NameIsDNSSubdomain; with `prefix` (generateName) a trailing '-' is allowed."""
    if prefix and name.endswith("-"):
        name = name[:-1] + "a"
    return is_dns1123_subdomain(name)


def validate_label_name(errs: Errors, name: str, path: Path) -> None:
    for msg in is_qualified_name(name):
        errs.invalid(path, name, msg)


def validate_label_value(errs: Errors, value: str, path: Path) -> None:
    for msg in is_label_value(value):
        errs.invalid(path, value, msg)


def validate_node_name(errs: Errors, name: str, path: Path) -> None:
    for msg in name_is_dns_subdomain(name):
        errs.invalid(path, name, msg)


def _validate_labels(errs: Errors, labels: dict[str, str] | None, path: Path) -> None:
    for key, value in (labels or {}).items():
        validate_label_name(errs, key, path)
        validate_label_value(errs, value, path)  # upstream reports values at the map, not the key


def _validate_annotations(errs: Errors, annotations: dict[str, str] | None, path: Path) -> None:
    total = 0
    for key, value in (annotations or {}).items():
        for msg in is_qualified_name(key.lower()):
            errs.invalid(path, key, msg)
        total += len(key) + len(value)
    if total > _TOTAL_ANNOTATION_SIZE:
        errs.too_long(path, _TOTAL_ANNOTATION_SIZE)


def validate_object_meta(
    errs: Errors, meta: ObjectMeta, *, namespaced: bool, name_check: NameCheck, path: Path
) -> None:
    """ValidateObjectMeta: name or generateName, name format, namespace, labels, annotations, finalizers."""
    if meta.generate_name:
        for msg in name_is_dns_subdomain(meta.generate_name, prefix=True):
            errs.invalid(path.child("generateName"), meta.generate_name, msg)
    if not meta.name:
        if not meta.generate_name:
            errs.required(path.child("name"), "name or generateName is required")
    else:
        for msg in name_check(meta.name):
            errs.invalid(path.child("name"), meta.name, msg)
    if namespaced:
        if not meta.namespace:
            errs.required(path.child("namespace"))
        else:
            for msg in is_dns1123_label(meta.namespace):
                errs.invalid(path.child("namespace"), meta.namespace, msg)
    _validate_labels(errs, meta.labels, path.child("labels"))
    _validate_annotations(errs, meta.annotations, path.child("annotations"))
    for i, finalizer in enumerate(meta.finalizers or []):
        validate_label_name(errs, finalizer, path.child("finalizers").index(i))


def validate_template_object_meta(errs: Errors, meta: ObjectMeta, path: Path) -> None:
    """ValidateTemplateObjectMeta: only labels and annotations matter in a template."""
    _validate_annotations(errs, meta.annotations, path.child("annotations"))
    _validate_labels(errs, meta.labels, path.child("labels"))


def _validate_requirement(errs: Errors, req: NodeSelectorRequirement, path: Path) -> None:
    values = req.values or []
    if req.operator in ("In", "NotIn"):
        if not values:
            errs.required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")
    elif req.operator in ("Exists", "DoesNotExist"):
        if values:
            errs.forbidden(path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif req.operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.required(path.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        errs.invalid(path.child("operator"), req.operator, "not a valid selector operator")
    validate_label_name(errs, req.key, path.child("key"))
    for i, value in enumerate(values):
        validate_label_value(errs, value, path.child("values").index(i))


def _validate_field_requirement(errs: Errors, req: NodeSelectorRequirement, path: Path) -> None:
    values = req.values or []
    if req.operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.required(
                path.child("values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
    else:
        errs.invalid(path.child("operator"), req.operator, "not a valid selector operator")
    if req.key != "metadata.name":
        errs.invalid(path.child("key"), req.key, "not a valid field selector key")
    else:
        for i, value in enumerate(values):
            validate_node_name(errs, value, path.child("values").index(i))


def validate_node_selector(errs: Errors, selector: NodeSelector, path: Path) -> None:
    """ValidateNodeSelector: at least one term; each requirement's operator, values and key."""
    terms_path = path.child("nodeSelectorTerms")
    if not selector.node_selector_terms:
        errs.required(terms_path, "must have at least one node selector term")
        return
    for i, term in enumerate(selector.node_selector_terms):
        term_path = terms_path.index(i)
        for j, req in enumerate(term.match_expressions or []):
            _validate_requirement(errs, req, term_path.child("matchExpressions").index(j))
        for j, req in enumerate(term.match_fields or []):
            _validate_field_requirement(errs, req, term_path.child("matchFields").index(j))


_REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def validate_conditions(errs: Errors, conditions: list[Condition], path: Path) -> None:
    """metav1validation.ValidateConditions: unique type, status, reason and transition time."""
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        item = path.index(i)
        validate_label_name(errs, condition.type, item.child("type"))
        if condition.type in seen:
            errs.duplicate(item.child("type"), condition.type)
        seen.add(condition.type)
        if condition.status not in ("True", "False", "Unknown"):
            errs.not_supported(item.child("status"), condition.status, ["False", "True", "Unknown"])
        if condition.observed_generation is not None and condition.observed_generation < 0:
            errs.invalid(
                item.child("observedGeneration"), condition.observed_generation, "must be greater than or equal to zero"
            )
        if not condition.last_transition_time:
            errs.required(item.child("lastTransitionTime"), "must be set")
        reason = condition.reason or ""
        if not reason:
            errs.required(item.child("reason"), "must be set")
        else:
            if not _REASON_RE.match(reason):
                errs.invalid(
                    item.child("reason"),
                    reason,
                    "a condition reason must start with alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
                    "'MyReason',  or 'My_Reason',  or 'My:Reason',  or 'my_reason', regex used for validation is "
                    "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                )
            if len(reason) > 1024:
                errs.too_long(item.child("reason"), 1024)
        if len(condition.message or "") > 32768:
            errs.too_long(item.child("message"), 32768)


def _validate_pod_claim(errs: Errors, claim: PodResourceClaim, seen: set[str], path: Path) -> None:
    if not claim.name:
        errs.required(path.child("name"))
    elif claim.name in seen:
        errs.duplicate(path.child("name"), claim.name)
    else:
        # No "final ResourceClaim name" check: generated claims use generateName (truncated), and the 1.37 API
        # server accepts a 250-character pod name with a template claim.
        for msg in is_dns1123_label(claim.name):
            errs.invalid(path.child("name"), claim.name, msg)
        seen.add(claim.name)
    # The API server shows the claim as Go marshals its internal struct: Go field names, nil pointers as null.
    shown = {
        "Name": claim.name,
        "ResourceClaimName": claim.resource_claim_name,
        "ResourceClaimTemplateName": claim.resource_claim_template_name,
    }
    if claim.resource_claim_name is not None and claim.resource_claim_template_name is not None:
        errs.invalid(path, shown, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
    if claim.resource_claim_name is None and claim.resource_claim_template_name is None:
        errs.invalid(path, shown, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
    if claim.resource_claim_name is not None:
        for msg in name_is_dns_subdomain(claim.resource_claim_name):
            errs.invalid(path.child("resourceClaimName"), claim.resource_claim_name, msg)
    if claim.resource_claim_template_name is not None:
        for msg in name_is_dns_subdomain(claim.resource_claim_template_name):
            errs.invalid(path.child("resourceClaimTemplateName"), claim.resource_claim_template_name, msg)


def _validate_container_claims(errs: Errors, container: Container, pod_claims: set[str], path: Path) -> None:
    claims = container.resources.claims if container.resources else None
    keys: set[str] = set()
    for i, claim in enumerate(claims or []):
        item = path.index(i)
        if not claim.name:
            errs.required(item.child("name"))
            continue
        key = claim.name
        if claim.request:
            for msg in is_dns1123_label(claim.request):
                errs.invalid(item.child("request"), claim.request, msg)
            key += "/" + claim.request
        if key in keys:
            errs.duplicate(item, key)
        keys.add(key)
        if claim.name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            errs.not_found(item, claim.name, detail)


def validate_pod(errs: Errors, pod: Pod) -> None:
    """The DRA rules of pod validation: pod claims (names, exactly one source) and container claim references."""
    spec = Path("spec")
    seen: set[str] = set()
    for i, claim in enumerate(pod.spec.resource_claims or []):
        _validate_pod_claim(errs, claim, seen, spec.child("resourceClaims").index(i))
    groups = (
        ("initContainers", pod.spec.init_containers or []),
        ("containers", pod.spec.containers),
        ("ephemeralContainers", pod.spec.ephemeral_containers or []),
    )
    for field_name, containers in groups:
        for i, container in enumerate(containers):
            claims_path = spec.child(field_name).index(i).child("resources", "claims")
            if field_name == "ephemeralContainers" and container.resources and container.resources.claims:
                errs.forbidden(claims_path, "cannot be set for an ephemeral container")
                continue
            _validate_container_claims(errs, container, seen, claims_path)
    if pod.spec.resources is not None and pod.spec.resources.claims:
        errs.forbidden(spec.child("resources", "claims"), "claims cannot be set for Resources at pod-level")
