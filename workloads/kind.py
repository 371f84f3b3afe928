"""The record of one workload kind, and the values its fields hold.

A `WorkloadKind` says all gpudra knows about one kind: where it keeps its pod templates, what its controller stamps
on the pods it makes, how a pod names it (label, controller reference, pod name), and the API resource it is read
by. Each operator's module under `workloads.kinds` holds its kinds' records; nothing here knows a kind by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ApiResource",
    "ControllerStamp",
    "Effects",
    "OwnerName",
    "Path",
    "PodTemplate",
    "Stamp",
    "TemplatePath",
    "TranslationEffects",
    "WorkloadKind",
    "dotted",
]

Path = tuple[str | int, ...]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def dotted(path: Path) -> str:
    """A path as a message names a field: `spec.workerGroupSpecs[0].template`, `metadata.labels["app"]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


@dataclass(frozen=True)
class TemplatePath:
    """A path pattern to pod templates: dotted field names, `[*]` for every list item, `{*}` for every map value.

    The role of a match is `role` when set, else the list item's `role_key` field (or its index), else the map key.
    """

    pattern: str
    role: str = ""
    role_key: str = "name"


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of an object: the path to it (empty for a Pod: the object itself), its role, the mapping."""

    path: Path
    role: str
    template: dict[str, Any]

    @property
    def where(self) -> str:
        return dotted(self.path) or "the Pod itself"


@dataclass(frozen=True)
class ControllerStamp:
    """What a controller adds to the pods of one template: labels the template may override (`labels`), labels it
    may not (`forced`), annotations (forced), env (`env_first`: put first unless the container already names them,
    as LWS does; `env_last`: appended), which containers get the env (None: all; `init_env`: init containers too),
    env upserted into single containers (`container_env`, by index), the first container's new command and args
    (KubeRay's `ray start` wrapper), and the controlling owner."""

    labels: dict[str, str] = field(default_factory=dict)
    forced: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    env_first: tuple[dict[str, Any], ...] = ()
    env_last: tuple[dict[str, Any], ...] = ()
    env_containers: tuple[int, ...] | None = None
    init_env: bool = False
    owner: tuple[str, str, str] | None = None  # apiVersion, kind, name
    command: tuple[list[str], list[str]] | None = None  # the first container's new command and args
    container_env: dict[int, tuple[dict[str, Any], ...]] = field(default_factory=dict)  # more env, by container index
    init_containers: tuple[dict[str, Any], ...] = ()  # appended after the template's own
    containers: tuple[dict[str, Any], ...] = ()  # appended after the template's own (KubeRay's autoscaler)
    init_extra_env: tuple[dict[str, Any], ...] = ()  # appended to every init container (KubeRay's FQ_RAY_IP, RAY_IP)


@dataclass(frozen=True)
class TranslationEffects:
    """What else a translated template needs: fields of the object outside the template set to a value (by path
    from the object's root; the last key may be new), and notes for the user."""

    changes: tuple[tuple[Path, Any], ...] = ()
    notes: tuple[str, ...] = ()


# What a controller stamps on the pods of one template of an object (the object, the template).
Stamp = Callable[[Mapping[str, Any], PodTemplate], ControllerStamp]
# What else changes when a template of an object is rewritten (the object, the template, the rewritten pod).
Effects = Callable[[Mapping[str, Any], PodTemplate, Mapping[str, Any]], TranslationEffects]
# The (kind, name) of the workload a pod stands for, from the name of its controller of this kind and its labels.
OwnerName = Callable[[str, Mapping[str, str]], tuple[str, str]]


@dataclass(frozen=True)
class ApiResource:
    """How the kind is served: the apiVersion it is read with and its plural resource name."""

    api_version: str
    plural: str

    @property
    def group(self) -> str:
        """The API group (`""` for the core group)."""
        return self.api_version.rpartition("/")[0]


@dataclass(frozen=True)
class WorkloadKind:
    """A kind gpudra knows: its name, the API groups it is served in, and what every package needs of it.

    - `paths`: where its pod templates are (none: gpudra cannot rewrite it ahead of time; `passed_through` says why
      and `gpu_fields` where it names GPUs outside requests and limits);
    - `reference`: a field that, when set, names another object holding the pod template (an Argo Rollout's
      workloadRef): an object using it and asking for no GPUs itself has nothing to translate;
    - `stamp`: what its controller adds to the pods of each template (None: nothing modelled);
    - `effects`: what else a rewritten template needs (KubeRay's `num-gpus`, notes for Trainer runtimes);
    - `resource`: set for an owner kind, one a GPUSizingRecommendation may target and the recommender reads;
    - the owner rules, from a pod to its workload without the API server: `pod_label` (a label the controller puts
      on every pod, naming the workload; it wins over ownerReferences), `owner` (the workload a pod controlled by an
      object of this kind stands for), `label_owner` (the name of this kind's object a pod without ownerReferences
      names by its labels), `pod_name` (a pattern whose `owner` group names the workload from a pod's name alone).
    """

    kind: str
    groups: tuple[str, ...]
    paths: tuple[TemplatePath, ...] = ()
    reference: str = ""
    stamp: Stamp | None = None
    effects: Effects | None = None
    resource: ApiResource | None = None
    pod_label: str = ""
    owner: OwnerName | None = None
    label_owner: Callable[[Mapping[str, str]], str | None] | None = None
    pod_name: re.Pattern[str] | None = None
    passed_through: str = ""
    gpu_fields: tuple[str, ...] = ()

    def tried(self) -> str:
        """The paths as a message names them (`spec.template` or the Pod itself)."""
        return ", ".join(p.pattern or "the object itself" for p in self.paths)
