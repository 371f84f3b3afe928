"""Objects of every known kind for the tests: each operator's test module (`tests/workloads/kinds/test_*.py`) holds
`EXAMPLES`, kind -> (apiVersion, body made around a pod-template factory), beside the checks on its kinds.

`make_workload(kind, template)` builds an object with `template` at every path the kind keeps one; `pod_of` is the pod
its controller makes from one of them, as `gpudra translate` decides it.
"""

from __future__ import annotations

import copy
import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from dra.documents import Document
from manifest_translation import translate_documents
from policyengine import PolicySet, load_policies

NAMESPACE = "team-ml"
POLICIES: PolicySet = load_policies()

Template = Callable[[], dict[str, Any]]
Example = tuple[str, Callable[[Template], dict[str, Any]]]


@functools.cache
def examples() -> dict[str, Example]:
    """Every operator test module's `EXAMPLES`, merged."""
    package = importlib.import_module("tests.workloads.kinds")
    found: dict[str, Example] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("test_"):
            found.update(getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "EXAMPLES", {}))
    return found


def make_workload(kind: str, template: dict[str, Any]) -> dict[str, Any]:
    """An object of `kind` (named `wl` in `NAMESPACE`) with a copy of `template` at every path the kind keeps one."""
    meta = {"name": "wl", "namespace": NAMESPACE}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, **template.get("metadata", {})},
                "spec": copy.deepcopy(template["spec"])}  # fmt: skip
    version, body = examples()[kind]
    return {"apiVersion": version, "kind": kind, "metadata": dict(meta), **body(lambda: copy.deepcopy(template))}


def gpu_template(gpus: int, **container: Any) -> dict[str, Any]:
    """A pod template with one container `main` asking for `gpus` legacy GPUs (and `container`'s other fields)."""
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": gpus}}, **container}
            ]
        },  # fmt: skip
    }


def pod_of(obj: dict[str, Any], index: int = -1) -> dict[str, Any]:
    """The pod the controller of `obj` makes from its `index`th template, as the shipped policies decide it."""
    objects, errors = translate_documents([Document(obj, "w.yaml", 1)], POLICIES)
    assert not errors
    return objects[0].templates[index].pod.decided
