"""kube-scheduler v1.37.2's node filters for what a GPU pod can say about nodes: taints and node affinity.

NodeResourcesFit (CPU and memory) and DynamicResources (the claim through `dra.allocator`) are applied by the
callers on a whole node class (`simulator.scheduling.decide`, `simulator.strategies.base`); here is what reads
the Pod object: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go (Filter: NoSchedule and
NoExecute taints must be tolerated; Score: PreferNoSchedule taints not tolerated) and
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (Filter: `nodeSelector` and required terms;
Score: the summed weights of the preferred terms that match), with the matching rules of
k8s.io/component-helpers/scheduling/corev1 (nodeaffinity, ToleratesTaint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "Taint",
    "intolerable_prefer_no_schedule",
    "matches_node_affinity",
    "preferred_affinity_score",
    "tolerates_hard_taints",
]

Taint = tuple[str, str, str]  # (key, value, effect)


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    key, value, effect = taint
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == value


def _tolerations(pod: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    return ((pod or {}).get("spec") or {}).get("tolerations") or ()


def tolerates_hard_taints(pod: Mapping[str, Any] | None, taints: Sequence[Taint]) -> bool:
    """TaintToleration Filter: every NoSchedule and NoExecute taint of the node is tolerated."""
    tolerations = _tolerations(pod)
    return all(
        any(_tolerates(t, taint) for t in tolerations) for taint in taints if taint[2] in ("NoSchedule", "NoExecute")
    )


def intolerable_prefer_no_schedule(pod: Mapping[str, Any] | None, taints: Sequence[Taint]) -> int:
    """TaintToleration Score (before the reversed normalisation): PreferNoSchedule taints no toleration with an
    empty or PreferNoSchedule effect tolerates."""
    soft = [t for t in _tolerations(pod) if not t.get("effect") or t.get("effect") == "PreferNoSchedule"]
    return sum(1 for taint in taints if taint[2] == "PreferNoSchedule" and not any(_tolerates(t, taint) for t in soft))


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expr.get("key", ""), expr.get("operator", "")
    values = [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _term_matches(term: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    """A NodeSelectorTerm: all its label expressions and field expressions (only `metadata.name` exists)."""
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False  # an empty term matches no node
    if not all(_expression_matches(e, labels) for e in expressions):
        return False
    return all(_expression_matches(f, {"metadata.name": name}) for f in fields)


def _node_affinity(pod: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (((pod or {}).get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def matches_node_affinity(pod: Mapping[str, Any] | None, name: str, labels: Mapping[str, str]) -> bool:
    """NodeAffinity Filter: `spec.nodeSelector` (every label equal) and, when given, one of the
    requiredDuringSchedulingIgnoredDuringExecution terms."""
    selector = ((pod or {}).get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(k) != str(v) for k, v in selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(_term_matches(t, name, labels) for t in required.get("nodeSelectorTerms") or ())


def preferred_affinity_score(pod: Mapping[str, Any] | None, name: str, labels: Mapping[str, str]) -> int:
    """NodeAffinity Score (before normalisation): the weights of the preferred terms the node matches."""
    preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return sum(int(p.get("weight", 0)) for p in preferred if _term_matches(p.get("preference") or {}, name, labels))
