"""Reading the inputs of a policy decision from files: the Pod, and the Namespace it is decided in.

`gpudra translate` and `gpudra policy explain` take these files; malformed ones are `InputError`s naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dra.documents import parse_yaml
from dra.errors import InputError

__all__ = ["read_inputs"]


def read_inputs(
    pod_file: str | os.PathLike[str], namespace_file: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The Pod of `pod_file` and a Namespace (from `namespace_file`, or a Namespace document beside the pod)."""
    pod: dict[str, Any] | None = None
    namespace: dict[str, Any] | None = None
    for file, wanted in ((pod_file, "Pod"), (namespace_file, "Namespace")):
        if file is None:
            continue
        documents = parse_yaml(Path(file))  # dra.yamlio's strict reader: InputErrors name the file and line
        for document in documents:
            if not isinstance(document, dict):
                raise InputError(f"expected Kubernetes objects (got {type(document).__name__})", source=str(file))
            kind = document.get("kind")
            if kind == "Pod" and pod is None and wanted == "Pod":
                pod = document
            elif kind == "Namespace" and namespace is None:
                namespace = document
        found = pod if wanted == "Pod" else namespace
        if found is None:
            raise InputError(f"no {wanted} object in the file", source=str(file))
    assert pod is not None
    return pod, namespace
