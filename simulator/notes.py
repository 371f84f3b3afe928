"""Sentences that explain a comparison where the numbers alone would mislead: strategies that came out the same, what
in the cluster left right-sizing nothing to work with, what the protocol measures (no time under FGD's; the demand
it submits), what `unallocated_gpus` counts, and the assumptions the figures rest on (the summary's `explanations`
and `assumptions`)."""

from __future__ import annotations

from typing import Any

from .cluster import OPENB_GPU_MODEL_MAP, ClusterSpec

__all__ = ["IDENTITY_KEYS", "assumptions", "explanations", "identical_groups", "result_notes"]

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


UNALLOCATED = (
    "unallocated_gpus is GPU compute not held by any pod, in GPUs (all GPUs minus the compute held, summed over "
    "GPUs), not a count of idle GPUs: where pods hold a fraction of a GPU (a share or a MIG slice), the rest of that "
    "GPU counts as unallocated though the GPU is in use. A strategy that shares GPUs can therefore show more "
    "unallocated GPUs and a higher allocation at once, where the device plugin gives each fractional pod a whole GPU "
    "(held, not allocated)."
)


def explanations(info: dict[str, Any], strategies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the protocol measures (`time`), the demand it submitted against the workload's pods (`demand`) and what
    `unallocated_gpus` counts; `info` is the summary's `input`."""
    pods = int(info["workload"]["pods"])
    submitted = max((int(row["pods_total"]) for row in strategies.values()), default=pods)
    out: dict[str, Any] = {"unallocated_gpus": UNALLOCATED}
    if info["protocol"] == "fgd":
        load = info["load"]
        out["time"] = (
            "The FGD protocol has no time: pods arrive one after another in a shuffled order and never leave, and a "
            "pod that does not fit when it arrives fails. Waits (mean_pending_seconds, pending_by_gpus) do not exist "
            "here: they are null in the JSON and n/a on the page, never 0. Pending pods are the pods that failed."
        )
        out["demand"] = {
            "workload_pods": pods,
            "submitted_pods": submitted,
            "ratio": round(submitted / pods, 3) if pods else None,
            "text": (
                f"The FGD protocol tunes the workload to {load:g}x the cluster's GPUs (as the FGD paper's simulator "
                f"does): the {pods:,} pods of the workload are shuffled and draws with replacement appended (or pods "
                f"removed) until the GPU demand is {load:g}x the cluster's, so {submitted:,} pods were submitted "
                "(placed + pending). Arrived demand past 100% cannot all fit: pending pods there are by design."
            ),
        }
    else:
        out["time"] = (
            "The replay protocol runs the trace's arrival times and durations; ratios are time-weighted means from the "
            "first to the last arrival, waits run until each pod first ran (or until the run's end)."
        )
    return out


def assumptions(info: dict[str, Any], spec: ClusterSpec) -> dict[str, Any]:
    """What the figures rest on that the inputs do not say: the GPU model behind each trace label, the VRAM model,
    the driver's gates, the scheduler profile and the allocator mode."""
    mapping = {
        n.model_label: n.gpu.key for n in spec.nodes if n.gpu is not None and n.model_label not in ("", n.gpu.key)
    }
    undisclosed = sorted(label for label in mapping if label in OPENB_GPU_MODEL_MAP)
    text = "each node's GPU model as the cluster file names it."
    if mapping:
        text = "trace labels read as catalog models: " + ", ".join(f"{k} -> {v}" for k, v in sorted(mapping.items()))
        if undisclosed:
            text += (
                f". The openb trace does not disclose which GPUs {', '.join(undisclosed)} are: this mapping is an "
                "assumption (override it with gpu_model_map), and every figure for those nodes rests on it."
            )
    vram = info["vram_model"]
    vram_text = {
        "proportional": "the trace records compute shares only: a pod's VRAM per GPU is assumed to be "
        f"max({vram.get('floor_mib')} MiB, share x {vram.get('reference_mib')} MiB).",
        "fixed": f"every GPU pod is assumed to need {vram.get('fixed_mib')} MiB per GPU.",
        "class": "VRAM per GPU drawn per workload class from a log-normal (the generator's model, seeded by pod name).",
    }.get(vram["kind"], "")
    gates = info["driver"]["gates"]
    scheduler = info["scheduler"]
    return {
        "gpu_model_mapping": {"labels": dict(sorted(mapping.items())), "undisclosed": undisclosed, "text": text},
        "vram_model": {**vram, "text": vram_text},
        "driver": {
            **info["driver"],
            "text": f"NVIDIA DRA driver {info['driver']['release']} slices, gates: "
            + (", ".join(gates) if gates else "none (no device can be shared)"),
        },
        "scheduler": {
            "source": scheduler.get("source"),
            "scoring": scheduler.get("node_resources_fit", {}).get("type"),
            "node_score": info.get("node_score"),
        },
        "allocator_mode": info["allocator_mode"],
    }
