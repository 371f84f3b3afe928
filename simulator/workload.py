"""The simulator's pod: what a trace row, a generated job or a real Pod spec asks for, plus when and how long.

Every reader produces a `Workload`: the pods in arrival order and a `skipped` tally (reason -> count, with
the first few file:line examples) so that nothing is dropped without being counted and shown.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GENERATED_OWNERS", "SimPod", "Workload", "generated_owner", "legacy_pod"]

# The built-in generator's pods belong to a few workloads per class (`generated_owner`), so that observed-usage
# sizing (`--sizing observed:...`, simulator.sizing) has owners to key recommendations by.
GENERATED_OWNERS = 8
POD_TEMPLATE_HASH = "7c9d8f6b5"
_OWNER_KINDS = {
    "embedding": "Deployment",
    "small-inference": "Deployment",
    "llm-serving": "Deployment",
    "fine-tuning": "Job",
    "training": "RayCluster",
}


@dataclass(frozen=True, slots=True)
class SimPod:
    """A pod's demand. `gpu_milli` is the per-GPU compute share (1000 = a whole GPU), `vram_mib` per-GPU VRAM."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    vram_mib: int
    arrival: float = 0.0
    duration: float | None = None  # None: runs until the end of the simulation
    gpu_models: tuple[str, ...] = ()  # allowed GPU models (the trace's gpu_spec); empty = any
    workload_class: str = "trace"
    namespace: str = "default"
    priority: int = 0  # higher may preempt lower when preemption is on
    pod: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    namespace_object: dict[str, Any] | None = field(default=None, compare=False, hash=False)  # for policies
    source: str = ""

    @property
    def is_gpu(self) -> bool:
        return self.num_gpu > 0 and self.gpu_milli > 0

    @property
    def is_shared(self) -> bool:
        """A fraction of one GPU: the only shape that GPU sharing or MIG can right-size."""
        return self.num_gpu == 1 and 0 < self.gpu_milli < 1000

    @property
    def gpu_request(self) -> float:
        """Requested GPU compute in GPUs (0.3 for a 300-milli pod, 4.0 for four whole GPUs)."""
        return self.num_gpu * self.gpu_milli / 1000 if self.is_gpu else 0.0

    def as_pod(self) -> dict[str, Any]:
        """The Pod the policies see: the trace's own Pod spec, or the device-plugin era Pod its demand stands for
        (`legacy_pod`: `nvidia.com/gpu: N`, and the VRAM annotation for a fraction of a GPU)."""
        if self.pod:
            return self.pod
        return legacy_pod(
            self.name, self.cpu_milli, self.memory_mib, self.num_gpu, self.workload_class,
            vram_mib=self.vram_mib if self.is_shared else None,
        )  # fmt: skip

    @property
    def shape(self) -> tuple[int, int, int, int, int, tuple[str, ...]]:
        """The fields placement depends on; pods of one shape get one cached decision."""
        return (self.cpu_milli, self.memory_mib, self.num_gpu, self.gpu_milli, self.vram_mib, self.gpu_models)


@dataclass(slots=True)
class Workload:
    """Pods sorted by arrival, where they came from, and what could not be read (counted, never silent)."""

    pods: list[SimPod]
    source: str
    kind: str  # "openb" | "jsonl" | "generated"
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)  # pods kept but worth knowing about, by reason
    note_examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        seen = self.examples.setdefault(reason, [])
        if len(seen) < 3:
            seen.append(where)

    def note(self, reason: str, where: str) -> None:
        self.notes[reason] += 1
        seen = self.note_examples.setdefault(reason, [])
        if len(seen) < 3:
            seen.append(where)

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "pods": len(self.pods),
            "gpu_pods": sum(1 for p in self.pods if p.is_gpu),
            "skipped": sum(self.skipped.values()),
            "skipped_reasons": {r: {"count": n, "examples": self.examples.get(r, [])} for r, n in self.skipped.items()},
            "kept_notes": {r: {"count": n, "examples": self.note_examples.get(r, [])} for r, n in self.notes.items()},
        }


def generated_owner(name: str, workload_class: str) -> tuple[str, str] | None:
    """The workload owner (kind, name) of a generated pod `<class>-<number>`: `<class>-<letter>`, one of
    `GENERATED_OWNERS` per class by the number (Deployments for serving, Jobs for fine-tuning, RayClusters for
    training); None for any other pod (trace rows have no owner)."""
    kind = _OWNER_KINDS.get(workload_class)
    number = name[len(workload_class) + 1 :] if name.startswith(workload_class + "-") else ""
    if kind is None or not number.isdigit():
        return None
    return kind, f"{workload_class}-{'abcdefghijklmnopqrstuvwxyz'[int(number) % GENERATED_OWNERS]}"


def _owner_metadata(meta: dict[str, Any], owner: tuple[str, str]) -> None:
    """ownerReferences and labels as the owner's controller sets them (read back by `workloads.pod_owner`)."""
    kind, name = owner
    labels = meta["labels"]
    if kind == "Deployment":
        labels["pod-template-hash"] = POD_TEMPLATE_HASH
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-{POD_TEMPLATE_HASH}"}
    elif kind == "Job":
        labels["batch.kubernetes.io/job-name"] = name
        ref = {"apiVersion": "batch/v1", "kind": "Job", "name": name}
    else:  # KubeRay: the RayCluster owns its worker pods and labels them
        labels["ray.io/cluster"] = name
        ref = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": name}
    meta["ownerReferences"] = [{**ref, "uid": f"uid-{ref['name']}", "controller": True, "blockOwnerDeletion": True}]


def legacy_pod(
    name: str, cpu_milli: int, memory_mib: int, gpus: int, workload_class: str, *, vram_mib: int | None = None
) -> dict[str, Any]:
    """A device-plugin era Pod asking for `gpus` whole GPUs, as users write it today.

    Fractional jobs say how much memory they need (`gpudra.io/vram`, read by the right-size policy); LLM
    serving pods run vLLM with `--tensor-parallel-size`, training pods are Ray workers (the multi-gpu policy).
    A generated pod (`<class>-<number>`) names its workload owner as a controller would (`generated_owner`).
    """
    resources: dict[str, Any] = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi"}
    container: dict[str, Any] = {
        "name": "main",
        "image": "registry.example/app:1",
        "resources": {"requests": resources, "limits": {"nvidia.com/gpu": str(gpus)} if gpus else {}},
    }
    labels = {"gpudra.io/workload-class": workload_class}
    annotations: dict[str, str] = {}
    if vram_mib is not None:
        annotations["gpudra.io/vram"] = f"{vram_mib}Mi"
    if workload_class == "llm-serving":
        container["args"] = ["--model", "/models/llm", "--tensor-parallel-size", str(gpus)]
    if workload_class == "training":
        labels["ray.io/node-type"] = "worker"
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    owner = generated_owner(name, workload_class)
    if owner is not None:
        _owner_metadata(meta, owner)
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}
