"""Finding an object's pod templates by its kind's template paths, and naming what is wrong when there are none.

`pod_templates(obj)` walks the paths of `obj`'s kind (`KNOWN_KINDS`), each template with its path and role. An
unknown kind holding pod templates or legacy GPU resources, or a kind that asks for GPUs outside any template
(`PASSED_THROUGH_KINDS`), gets `UnknownWorkload` saying where and why; a malformed object `WorkloadShapeError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from dra.errors import InputError

from .kind import Path, PodTemplate, TemplatePath, dotted
from .registry import KNOWN_KINDS, workload_kind

__all__ = ["UnknownWorkload", "WorkloadShapeError", "legacy_gpu_paths", "pod_templates"]


class WorkloadShapeError(InputError):
    """A field on the way to a pod template has the wrong JSON type (`field` is its dotted path)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class UnknownWorkload(InputError):
    """An object whose pod templates gpudra cannot find: an unknown kind that holds pod templates or GPU requests,
    or a known kind with none of them at the paths tried."""


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


def _passed_through(obj: Mapping[str, Any]) -> UnknownWorkload | None:
    """The pass-through error for an object of a `PASSED_THROUGH_KINDS` kind that asks for GPUs, else None."""
    known = workload_kind(obj)
    if known is None or not known.passed_through:
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
        f"{known.passed_through}"
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
    if known is None or not known.paths:
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
