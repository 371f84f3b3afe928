"""The Kyverno peer (`kyverno-clusterpolicy.yaml` beside this file): its ClusterPolicy, and whether a pod came out of
the API server mutated by it. It does what the MutatingAdmissionPolicy peer does, so a pod it mutated is stored
exactly as that one's (`admission_policy.mutated`), claiming from the same ResourceClaimTemplate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchmarks.peers import admission_policy

MANIFEST = Path(__file__).resolve().parent / "kyverno-clusterpolicy.yaml"
# The label of the namespaces the policy matches (and Kyverno's webhooks are limited to), as the manifest writes it.
NAMESPACE_LABEL = "gpudra.io/benchmark-kyverno"


def policy() -> dict[str, Any]:
    """The ClusterPolicy, checked to match only namespaces labelled NAMESPACE_LABEL=true in every rule."""
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    if [d.get("kind") for d in docs] != ["ClusterPolicy"]:
        raise ValueError(f"{MANIFEST}: expected one ClusterPolicy, found {[d.get('kind') for d in docs]}")
    (cluster_policy,) = docs
    for rule in cluster_policy["spec"]["rules"]:
        for match in rule["match"]["any"]:
            selected = match["resources"].get("namespaceSelector", {}).get("matchLabels")
            if selected != {NAMESPACE_LABEL: "true"}:
                raise ValueError(
                    f"{MANIFEST}: rule {rule['name']!r} selects {selected}, expected {{{NAMESPACE_LABEL}: 'true'}}"
                )
    return dict(cluster_policy)


def template() -> dict[str, Any]:
    """The ResourceClaimTemplate the policy's claims name, made beforehand in each namespace (the MAP peer's)."""
    return admission_policy.manifests()[2]


def mutated(pod: dict[str, Any]) -> bool:
    """Whether `pod`, as stored, is what the policy makes of the benchmark's legacy pod."""
    return admission_policy.mutated(pod, template()["metadata"]["name"])
