"""The pod a workload's controller makes from one of its templates, as the webhook will see it at admission.

A policy reading what a controller adds (a label, an env variable) decides a template as `gpudra translate` and its
pod as `gpudra serve` alike only if the template is decided as that pod: `controller_pod` applies the stamp of the
object's kind (its operator's module models the controller, citing its source; random values get fixed stand-ins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._fields import STAND_IN_UID
from .kind import ControllerStamp, PodTemplate
from .registry import workload_kind

__all__ = ["controller_pod", "controller_stamp"]


def controller_stamp(obj: Mapping[str, Any], template: PodTemplate) -> ControllerStamp | None:
    """What the controller of `obj` adds to the pods of `template` (its kind's `stamp`); None for a Pod, a
    PodTemplate or a kind without a controller modelled."""
    known = workload_kind(obj)
    stamp = known.stamp if known is not None and template.path else None
    return stamp(obj, template) if stamp is not None else None


def _with_env(
    container: Any, stamp: ControllerStamp, upsert: tuple[dict[str, Any], ...] = (), chosen: bool = True
) -> Any:
    """The container with the stamp's env (when `chosen`) and `upsert` (replacing variables of the same name, as
    Kubeflow Trainer's apply.UpsertEnvVars does)."""
    if not isinstance(container, Mapping) or not (chosen or upsert):
        return container
    env = container.get("env")
    current = list(env) if isinstance(env, list) else []
    names = {e.get("name") for e in current if isinstance(e, Mapping)}
    first = [e for e in stamp.env_first if e["name"] not in names] if chosen else []
    rest = [e for e in current if not (isinstance(e, Mapping) and e.get("name") in {f["name"] for f in first})]
    result = [*first, *rest, *(stamp.env_last if chosen else ())]
    for variable in upsert:
        at = next(
            (i for i, e in enumerate(result) if isinstance(e, Mapping) and e.get("name") == variable["name"]), None
        )
        if at is None:
            result.append(variable)
        else:
            result[at] = variable
    return {**container, "env": result}


def _appended_env(container: Any, env: tuple[dict[str, Any], ...]) -> Any:
    if not env or not isinstance(container, Mapping):
        return container
    current = container.get("env")
    return {**container, "env": [*(current if isinstance(current, list) else []), *env]}


def controller_pod(obj: Mapping[str, Any], template: PodTemplate, pod: Mapping[str, Any]) -> dict[str, Any]:
    """`pod` (the template as a pod) as `obj`'s controller creates it: a new mapping sharing what it leaves alone.
    `pod` itself is returned for a Pod and a kind whose controller adds nothing modelled here."""
    stamp = controller_stamp(obj, template)
    if stamp is None:
        return dict(pod)
    metadata = dict(pod.get("metadata") or {})
    own = metadata.get("labels")
    metadata["labels"] = {**stamp.labels, **(own if isinstance(own, Mapping) else {}), **stamp.forced}
    if stamp.annotations:
        notes = metadata.get("annotations")
        metadata["annotations"] = {**(notes if isinstance(notes, Mapping) else {}), **stamp.annotations}
    if stamp.owner is not None:
        api_version, kind, name = stamp.owner
        metadata["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name, "uid": STAND_IN_UID,
                                        "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    spec = dict(pod.get("spec") or {})
    if stamp.env_first or stamp.env_last or stamp.container_env:
        containers = spec.get("containers")
        if isinstance(containers, list):
            chosen = range(len(containers)) if stamp.env_containers is None else stamp.env_containers
            spec["containers"] = [
                _with_env(c, stamp, stamp.container_env.get(i, ()), i in chosen) for i, c in enumerate(containers)
            ]
    if stamp.containers and isinstance(spec.get("containers"), list):
        spec["containers"] = [*spec["containers"], *stamp.containers]
    if stamp.command is not None and isinstance(spec.get("containers"), list) and spec["containers"]:
        first = spec["containers"][0]
        if isinstance(first, Mapping):
            command, args = stamp.command
            spec["containers"] = [{**first, "command": command, "args": args}, *spec["containers"][1:]]
    init = spec.get("initContainers")
    if stamp.init_env and isinstance(init, list):
        spec["initContainers"] = init = [_with_env(c, stamp) for c in init]
    if stamp.init_containers or stamp.init_extra_env:
        init = [*(init if isinstance(init, list) else []), *stamp.init_containers]
        spec["initContainers"] = [_appended_env(c, stamp.init_extra_env) for c in init]
    return {**pod, "metadata": metadata, "spec": spec}
