"""Sentences that explain a comparison where the numbers alone would mislead: strategies that came out the same, and
what in the cluster left right-sizing nothing to work with."""

from __future__ import annotations

from typing import Any

from .cluster import ClusterSpec

__all__ = ["IDENTITY_KEYS", "identical_groups", "result_notes"]

# the KPIs that must agree (to 6 digits) for two strategies to count as the same result
IDENTITY_KEYS = (
    "pods_placed",
    "pods_pending",
    "gpu_allocation_ratio",
    "vram_waste_ratio",
    "fragmentation_ratio",
    "mean_pending_seconds",
)


def identical_groups(strategies: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Groups (of two or more, in run order) of strategies whose `IDENTITY_KEYS` agree to six digits."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, row in strategies.items():
        key = tuple(round(row[k], 6) if isinstance(row.get(k), float) else row.get(k) for k in IDENTITY_KEYS)
        groups.setdefault(key, []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def _cluster_reasons(spec: ClusterSpec) -> list[str]:
    gpu_nodes = [n for n in spec.nodes if n.gpu is not None and n.gpu_count]
    reasons = []
    if gpu_nodes and all(n.gpu is not None and n.gpu.mig is None for n in gpu_nodes):
        reasons.append("no GPU in the cluster is MIG-capable, so a right-sized claim cannot get a partition")
    if gpu_nodes and not any(n.sharing for n in gpu_nodes):
        reasons.append(
            "no device on the driver's slices can be shared (no consumable capacity: see --consumable-capacity), so "
            "a pod asking for a fraction of a GPU still holds a whole one"
        )
    return reasons


def result_notes(spec: ClusterSpec, strategies: dict[str, dict[str, Any]]) -> list[str]:
    """What a reader of the table should know: identical results and, where gpudra is among them or could not
    right-size anything, the cluster's reasons."""
    notes = []
    reasons = _cluster_reasons(spec)
    for names in identical_groups(strategies):
        text = f"{', '.join(names[:-1])} and {names[-1]} give the same results"
        notes.append(text + (": " + "; ".join(reasons) if reasons else "") + ".")
    whole_only = len(reasons) == 2  # neither a partition nor a share: every claim is whole GPUs
    if whole_only and not notes and any(name.startswith("gpudra") for name in strategies):
        notes.append("gpudra could only place whole GPUs here: " + "; ".join(reasons) + ".")
    return notes
