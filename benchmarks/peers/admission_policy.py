"""The MutatingAdmissionPolicy peer (`mutatingadmissionpolicy.yaml` beside this file): its manifests, and whether a
pod came out of the API server mutated by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parent / "mutatingadmissionpolicy.yaml"
# The label of the namespaces the policy's binding selects, as the manifests write it.
NAMESPACE_LABEL = "gpudra.io/benchmark-map"
LEGACY_RESOURCE = "nvidia.com/gpu"


def manifests() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The policy, its binding and the ResourceClaimTemplate each served namespace needs, checked to fit together."""
    docs = [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d]
    kinds = [d.get("kind") for d in docs]
    if kinds != ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ResourceClaimTemplate"]:
        raise ValueError(f"{MANIFESTS}: expected a policy, its binding and a template in that order, found {kinds}")
    policy, binding, template = docs
    if binding["spec"]["policyName"] != policy["metadata"]["name"]:
        raise ValueError(f"{MANIFESTS}: the binding names policy {binding['spec']['policyName']!r}")
    selected = binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"]
    if selected != {NAMESPACE_LABEL: "true"}:
        raise ValueError(f"{MANIFESTS}: the binding selects {selected}, expected {{{NAMESPACE_LABEL}: 'true'}}")
    return policy, binding, template


def mutated(pod: dict[str, Any], template_name: str) -> bool:
    """Whether `pod`, as stored, is what the policy makes of a legacy pod whose every container asks for
    `nvidia.com/gpu` (the benchmark's): one pod-level claim from `template_name`, every container's `nvidia.com/gpu`
    gone and a claim on it in its place."""
    spec = pod.get("spec", {})
    claims = spec.get("resourceClaims") or []
    if [(c.get("name"), c.get("resourceClaimTemplateName")) for c in claims] != [("gpu", template_name)]:
        return False
    for container in spec.get("containers", []):
        resources = container.get("resources") or {}
        if any(LEGACY_RESOURCE in (resources.get(key) or {}) for key in ("limits", "requests")):
            return False
        if {"name": "gpu"} not in (resources.get("claims") or []):
            return False
    return True
