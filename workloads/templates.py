"""Where a Kubernetes object keeps its pod templates: Pods, the built-in workload kinds and the GPU operators' CRDs.

`pod_templates(obj)` finds every pod template of an object of a known kind (`KNOWN_KINDS`: the kind, its API
groups and the paths tried), each with the path to it and its role (`head`, a Ray worker group's name, a
PyTorchJob replica type, `leader`/`worker`, ...). An object of another kind that still holds something shaped like
a pod template, or legacy GPU resources, gets `UnknownWorkload` naming the kind and where those were found; a
malformed object gets `WorkloadShapeError` naming the field. The paths follow the upstream API types:
apps/v1 and batch/v1, ray.io/v1 (KubeRay `raycluster_types.go`, `rayservice_types.go`, `rayjob_types.go`,
`raycronjob_types.go`), kubeflow.org/v1 (training-operator v1.9 `*_types.go`), leaderworkerset.x-k8s.io/v1
(`leaderworkerset_types.go`), jobset.x-k8s.io (`ReplicatedJob.template` is a batch/v1 JobTemplateSpec),
trainer.kubeflow.org (Kubeflow Trainer v2's TrainingRuntime and ClusterTrainingRuntime embed a JobSet template) and
argoproj.io (an Argo Rollout's `spec.template`).

Kinds that ask for GPUs outside any template gpudra could rewrite (`PASSED_THROUGH_KINDS`: a Trainer v2 TrainJob's
`spec.trainer.resourcesPerNode`, a production-stack VLLMRuntime's `spec.deploymentConfig.resources.gpu`) get an
`UnknownWorkload` naming the GPU path and why: the CLI passes them through, and the webhook translates their pods.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra.errors import InputError

__all__ = [
    "KNOWN_KINDS",
    "PASSED_THROUGH_KINDS",
    "PassedThroughKind",
    "PodTemplate",
    "TemplatePath",
    "UnknownWorkload",
    "WorkloadKind",
    "WorkloadShapeError",
    "api_group",
    "dotted",
    "legacy_gpu_paths",
    "pod_templates",
    "workload_kind",
]

Path = tuple[str | int, ...]


class WorkloadShapeError(InputError):
    """A field on the way to a pod template has the wrong JSON type (`field` is its dotted path)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class UnknownWorkload(InputError):
    """An object whose pod templates gpudra cannot find: an unknown kind that holds pod templates or GPU requests,
    or a known kind with none of them at the paths tried."""


@dataclass(frozen=True)
class TemplatePath:
    """A path pattern to pod templates: dotted field names, `[*]` for every list item, `{*}` for every map value.

    The role of a match is `role` when set, else the list item's `role_key` field (or its index), else the map key.
    """

    pattern: str
    role: str = ""
    role_key: str = "name"


@dataclass(frozen=True)
class WorkloadKind:
    """A kind gpudra knows the pod templates of: its name, the API groups it is served in, and the paths."""

    kind: str
    groups: tuple[str, ...]
    paths: tuple[TemplatePath, ...]
    # A field that, when set, names another object holding the pod template (an Argo Rollout's workloadRef): an
    # object using it and asking for no GPUs itself has nothing to translate here.
    reference: str = ""

    def tried(self) -> str:
        """The paths as a message names them (`spec.template` or the Pod itself)."""
        return ", ".join(p.pattern or "the object itself" for p in self.paths)


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of an object: the path to it (empty for a Pod: the object itself), its role, the mapping."""

    path: Path
    role: str
    template: dict[str, Any]

    @property
    def where(self) -> str:
        return dotted(self.path) or "the Pod itself"


def _ray_cluster(prefix: str) -> tuple[TemplatePath, ...]:
    return (
        TemplatePath(f"{prefix}.headGroupSpec.template", role="head"),
        TemplatePath(f"{prefix}.workerGroupSpecs[*].template", role_key="groupName"),
    )


def _replica_specs(field: str) -> tuple[TemplatePath, ...]:
    return (TemplatePath(f"spec.{field}{{*}}.template"),)


_APPS = ("apps", "extensions")
_SPEC_TEMPLATE = (TemplatePath("spec.template"),)
_RAY = ("ray.io",)
_KUBEFLOW = ("kubeflow.org",)
_JOBSET_TEMPLATES = "spec.replicatedJobs[*].template.spec.template"

KNOWN_KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("Pod", ("",), (TemplatePath(""),)),
    WorkloadKind("PodTemplate", ("",), (TemplatePath("template"),)),
    WorkloadKind("ReplicationController", ("",), _SPEC_TEMPLATE),
    WorkloadKind("Deployment", _APPS, _SPEC_TEMPLATE),
    WorkloadKind("StatefulSet", ("apps",), _SPEC_TEMPLATE),
    WorkloadKind("DaemonSet", _APPS, _SPEC_TEMPLATE),
    WorkloadKind("ReplicaSet", _APPS, _SPEC_TEMPLATE),
    WorkloadKind("Job", ("batch",), _SPEC_TEMPLATE),
    WorkloadKind("CronJob", ("batch",), (TemplatePath("spec.jobTemplate.spec.template"),)),
    WorkloadKind("RayCluster", _RAY, _ray_cluster("spec")),
    WorkloadKind("RayService", _RAY, _ray_cluster("spec.rayClusterConfig")),
    WorkloadKind(
        "RayJob",
        _RAY,
        (*_ray_cluster("spec.rayClusterSpec"), TemplatePath("spec.submitterPodTemplate", role="submitter")),
    ),
    WorkloadKind(
        "RayCronJob",
        _RAY,
        (
            *_ray_cluster("spec.jobTemplate.rayClusterSpec"),
            TemplatePath("spec.jobTemplate.submitterPodTemplate", role="submitter"),
        ),
    ),
    WorkloadKind("PyTorchJob", _KUBEFLOW, _replica_specs("pytorchReplicaSpecs")),
    WorkloadKind("TFJob", _KUBEFLOW, _replica_specs("tfReplicaSpecs")),
    WorkloadKind("MPIJob", _KUBEFLOW, _replica_specs("mpiReplicaSpecs")),
    WorkloadKind("XGBoostJob", _KUBEFLOW, _replica_specs("xgbReplicaSpecs")),
    WorkloadKind("PaddleJob", _KUBEFLOW, _replica_specs("paddleReplicaSpecs")),
    WorkloadKind("JAXJob", _KUBEFLOW, _replica_specs("jaxReplicaSpecs")),
    WorkloadKind(
        "LeaderWorkerSet",
        ("leaderworkerset.x-k8s.io",),
        (
            TemplatePath("spec.leaderWorkerTemplate.leaderTemplate", role="leader"),
            TemplatePath("spec.leaderWorkerTemplate.workerTemplate", role="worker"),
        ),
    ),
    WorkloadKind("JobSet", ("jobset.x-k8s.io",), (TemplatePath(_JOBSET_TEMPLATES),)),
    # Kubeflow Trainer v2 (pkg/apis/trainer/v1alpha1/trainingruntime_types.go): a runtime's `spec.template` is a
    # JobSetTemplateSpec, so its pod templates sit where a JobSet's do, one level down.
    *(
        WorkloadKind(kind, ("trainer.kubeflow.org",), (TemplatePath(f"spec.template.{_JOBSET_TEMPLATES}"),))
        for kind in ("TrainingRuntime", "ClusterTrainingRuntime")
    ),
    # Argo Rollouts (pkg/apis/rollouts/v1alpha1/types.go): RolloutSpec.Template, a PodTemplateSpec; a Rollout with
    # `workloadRef` instead names a Deployment and holds no template (passed through).
    WorkloadKind("Rollout", ("argoproj.io",), _SPEC_TEMPLATE, reference="spec.workloadRef"),
)

_BY_KIND: dict[str, WorkloadKind] = {k.kind: k for k in KNOWN_KINDS}


def api_group(obj: Mapping[str, Any]) -> str | None:
    """The API group of `apiVersion` (`""` for the core group), or None when the object has no apiVersion."""
    version = obj.get("apiVersion")
    if not isinstance(version, str) or not version:
        return None
    return version.rpartition("/")[0]


def workload_kind(obj: Mapping[str, Any]) -> WorkloadKind | None:
    """The known kind of `obj` (its kind served in one of the kind's API groups), else None."""
    kind = obj.get("kind")
    known = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if known is None:
        return None
    group = api_group(obj)
    return known if group is None or group in known.groups else None


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


_STEP = re.compile(r"^([^.\[{]+)(\[\*\]|\{\*\})?$")


def _steps(pattern: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, str]] = []
    for part in pattern.split(".") if pattern else []:
        match = _STEP.match(part)
        if match is None:
            raise ValueError(f"bad template path pattern {pattern!r}")
        steps.append((match.group(1), match.group(2) or ""))
    return steps


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _walk(
    value: Any, steps: list[tuple[str, str]], path: Path, spec: TemplatePath, role: str
) -> Iterator[tuple[Path, str, Any]]:
    """Every (path, role, value) the remaining `steps` reach from `value`; absent fields end a branch quietly."""
    if not steps:
        yield path, role, value
        return
    (name, each), rest = steps[0], steps[1:]
    if not isinstance(value, dict):
        raise WorkloadShapeError(f"{dotted(path)} must be an object (got {_type_name(value)})", field=dotted(path))
    child = value.get(name)
    if child is None:
        return
    here = (*path, name)
    if each == "[*]":
        if not isinstance(child, list):
            raise WorkloadShapeError(f"{dotted(here)} must be a list (got {_type_name(child)})", field=dotted(here))
        for index, item in enumerate(child):
            key = item.get(spec.role_key) if isinstance(item, dict) else None
            item_role = spec.role or (key if isinstance(key, str) and key else str(index))
            yield from _walk(item, rest, (*here, index), spec, item_role)
    elif each == "{*}":
        if not isinstance(child, dict):
            raise WorkloadShapeError(f"{dotted(here)} must be an object (got {_type_name(child)})", field=dotted(here))
        for key, item in child.items():
            yield from _walk(item, rest, (*here, str(key)), spec, spec.role or str(key))
    else:
        yield from _walk(child, rest, here, spec, role)


def _checked_template(value: Any, path: Path) -> dict[str, Any]:
    where = dotted(path) or "the object"
    if not isinstance(value, dict):
        raise WorkloadShapeError(f"{where} must be a pod template object (got {_type_name(value)})", field=where)
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        field = dotted((*path, "metadata"))
        raise WorkloadShapeError(f"{field} must be an object (got {_type_name(metadata)})", field=field)
    if not isinstance(value.get("spec"), dict):
        field = dotted((*path, "spec"))
        raise WorkloadShapeError(f"{field} must be an object (got {_type_name(value.get('spec'))})", field=field)
    return value


def _looks_like_pod_template(value: Any) -> bool:
    spec = value.get("spec") if isinstance(value, dict) else None
    return isinstance(spec, dict) and isinstance(spec.get("containers"), list)


def _is_legacy_gpu(resource: Any) -> bool:
    return isinstance(resource, str) and (resource == "nvidia.com/gpu" or resource.startswith("nvidia.com/mig-"))


def _scan(value: Any, path: Path, skip: frozenset[Path], templates: list[Path], gpus: list[Path]) -> None:
    if path in skip:
        return
    if isinstance(value, dict):
        if path and _looks_like_pod_template(value):
            templates.append(path)
        for key, item in value.items():
            if key in ("requests", "limits") and isinstance(item, dict):
                gpus.extend((*path, key, name) for name in item if _is_legacy_gpu(name))
            _scan(item, (*path, str(key)), skip, templates, gpus)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _scan(item, (*path, index), skip, templates, gpus)


def legacy_gpu_paths(obj: Mapping[str, Any], skip: frozenset[Path] = frozenset()) -> tuple[list[Path], list[Path]]:
    """(paths of pod-template-shaped objects, paths of legacy GPU resources in requests/limits) in `obj`, outside
    the subtrees at `skip`."""
    templates: list[Path] = []
    gpus: list[Path] = []
    _scan(dict(obj), (), skip, templates, gpus)
    return templates, gpus


def _label(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    version = obj.get("apiVersion")
    text = str(kind) if isinstance(kind, str) and kind else "an object without a kind"
    text += f" {name!r}" if isinstance(name, str) and name else ""
    return text + (f" ({version})" if isinstance(version, str) and version else "")


def _found(templates: list[Path], gpus: list[Path]) -> str:
    parts = []
    if templates:
        parts.append("pod templates at " + ", ".join(dotted(p) for p in templates[:5]))
    if gpus:
        parts.append("GPU resources at " + ", ".join(dotted(p) for p in gpus[:5]))
    return "; ".join(parts)


# Count fields of the workload kinds (Deployment/StatefulSet replicas, Job parallelism/completions, KubeRay and
# Kubeflow replicas): integers in the API, which refuses `replicas: "two"`, so gpudra does too.
_COUNT_FIELDS = frozenset({"replicas", "minReplicas", "maxReplicas", "parallelism", "completions"})


def _check_counts(value: Any, path: Path, skip: frozenset[Path]) -> None:
    """A `WorkloadShapeError` naming the first count field (outside the pod templates) that is not an integer."""
    if path in skip:
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            here = (*path, str(key))
            if key in _COUNT_FIELDS and len(path) >= 1 and path[0] == "spec" and not isinstance(child, Mapping | list):
                if isinstance(child, bool) or not isinstance(child, int):
                    where = dotted(here)
                    raise WorkloadShapeError(f"{where} must be an integer (got {_type_name(child)} {child!r:.40})",
                                             field=where)  # fmt: skip
            else:
                _check_counts(child, here, skip)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _check_counts(child, (*path, index), skip)


@dataclass(frozen=True)
class PassedThroughKind:
    """A kind that asks for GPUs outside any pod template gpudra could rewrite: its group, where it names GPUs
    (beside legacy GPU resources in requests/limits, which are found anywhere) and why it cannot be rewritten."""

    kind: str
    groups: tuple[str, ...]
    gpu_fields: tuple[str, ...]
    why: str


PASSED_THROUGH_KINDS: tuple[PassedThroughKind, ...] = (
    # kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go: Trainer.ResourcesPerNode; and
    # pkg/runtime/core/trainingruntime.go, which merges it over the runtime's `node` container's requests and limits
    # and rebuilds that container's resources from them alone (its `claims` do not survive); trainjob_types.go's
    # PodSpecPatch (runtimePatches) has no resourceClaims field.
    PassedThroughKind(
        "TrainJob",
        ("trainer.kubeflow.org",),
        (),
        "Kubeflow Trainer builds its pods from the runtime it names, with spec.trainer.resourcesPerNode replacing "
        "the trainer `node` container's resources (a DRA claim reference there would not survive), and "
        "spec.runtimePatches cannot add a pod's resourceClaims",
    ),
    # vllm-project/production-stack operator/api/v1alpha1 (common.go): DeploymentConfig.Resources is the operator's
    # own {cpu, memory, gpu, gpuType}; operator/internal/controller/resources.go buildResourceRequirements writes
    # `gpu` as the Deployment container's requests and limits of gpuType (default nvidia.com/gpu).
    PassedThroughKind(
        "VLLMRuntime",
        ("production-stack.vllm.ai",),
        ("spec.deploymentConfig.resources.gpu", "spec.deploymentConfig.sidecarConfig.resources.gpu"),
        "the production-stack operator writes the Deployment from spec.deploymentConfig.resources (its own cpu, "
        "memory, gpu fields), which has no place for a DRA claim",
    ),
)
_PASSED_BY_KIND = {k.kind: k for k in PASSED_THROUGH_KINDS}


def _passed_through(obj: Mapping[str, Any]) -> UnknownWorkload | None:
    """The pass-through error for an object of a `PASSED_THROUGH_KINDS` kind that asks for GPUs, else None."""
    kind = obj.get("kind")
    known = _PASSED_BY_KIND.get(kind) if isinstance(kind, str) else None
    if known is None or api_group(obj) not in (None, *known.groups):
        return None
    _, gpus = legacy_gpu_paths(obj)
    where = [dotted(p) for p in gpus]
    for pattern in known.gpu_fields:
        value = _field(obj, pattern)
        if value not in (None, "", 0, "0"):
            where.append(f"{pattern} ({value})")
    if not where:
        return None
    return UnknownWorkload(
        f"{_label(obj)}: asks for GPUs at {', '.join(where[:5])}, which gpudra cannot rewrite ahead of time: "
        f"{known.why}"
    )


def _field(obj: Mapping[str, Any], dotted_path: str) -> Any:
    value: Any = obj
    for part in dotted_path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def pod_templates(obj: Mapping[str, Any]) -> list[PodTemplate]:
    """The pod templates of `obj` in document order; [] for an object that has none and asks for no GPUs.

    Raises `UnknownWorkload` for an unknown kind holding pod templates or GPU requests (it names the kind, what
    was found where, and the kinds gpudra knows), or a known kind with no pod template at the paths tried;
    `WorkloadShapeError` for a wrong type on the way.
    """
    known = workload_kind(obj)
    if known is None:
        passed = _passed_through(obj)
        if passed is not None:
            raise passed
        templates, gpus = legacy_gpu_paths(obj)
        if _looks_like_pod_template(obj):
            templates.insert(0, ("spec",))
        if not templates and not gpus:
            return []
        raise UnknownWorkload(
            f"{_label(obj)}: not a kind whose pod templates gpudra knows, so nothing in it was translated; "
            f"searching the whole object found {_found(templates, gpus)}; gpudra tries the pod template paths of "
            f"{', '.join(k.kind for k in KNOWN_KINDS)} (listed in docs/policy-authoring.md)"
        )
    found: list[PodTemplate] = []
    for spec in known.paths:
        for path, role, value in _walk(obj, _steps(spec.pattern), (), spec, spec.role):
            found.append(PodTemplate(path, role, _checked_template(value, path)))
    if not found and known.reference and _field(obj, known.reference) is not None and not legacy_gpu_paths(obj)[1]:
        return []  # the pods come from the referenced object's template, translated where that object is written
    if not found:
        raise UnknownWorkload(f"{_label(obj)}: no pod template at {known.tried()} (the paths tried for {known.kind})")
    _check_counts(obj, (), frozenset(t.path for t in found))
    _, stray = legacy_gpu_paths(obj, frozenset(t.path for t in found))
    if stray:
        raise UnknownWorkload(
            f"{_label(obj)}: GPU resources at {', '.join(dotted(p) for p in stray[:5])}, outside the pod templates "
            f"gpudra knows for {known.kind} (tried {known.tried()})"
        )
    return found
