"""`gpudra allocate` as a function: read Kubernetes YAML/JSON files, allocate, and shape the answer.

Files may hold several documents or `kind: List` objects (as `kubectl get -o yaml` writes them); objects
are picked by `kind`. The answer is `{"allocation": ...}` (or `"allocations"` for several claims),
`{"unsatisfiable": reason}` with exit code 1, or `{"error": message}` with exit code 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dra.allocator._allocator import Allocator, Mode
from dra.allocator._errors import AllocationError, Unsatisfiable
from dra.allocator.features import FeatureSet
from dra.errors import GpudraError, InputError

__all__ = ["allocate_files", "load_kind"]


def _documents(path: Path) -> list[dict[str, Any]]:
    try:
        from dra.documents import load_documents
    except ImportError:  # dra.documents not in this checkout: plain PyYAML
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as err:
            raise InputError(str(err), source=str(path)) from None
    else:
        docs = load_documents(path)
    out: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise InputError(f"expected a Kubernetes object (got {type(doc).__name__})", source=str(path))
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            out.extend(i for i in doc["items"] if isinstance(i, dict))
        else:
            out.append(doc)
    return out


def load_kind(paths: Sequence[Path], *kinds: str) -> list[dict[str, Any]]:
    """Every object of the given kinds in the files, in file order."""
    found: list[dict[str, Any]] = []
    for path in paths:
        for doc in _documents(path):
            if doc.get("kind") in kinds:
                found.append(doc)
    return found


def _node(name: str | None, node_file: Path | None, slices: list[dict[str, Any]]) -> dict[str, Any]:
    if node_file is not None:
        nodes = load_kind([node_file], "Node")
        if len(nodes) != 1:
            raise InputError(f"expected exactly one Node (got {len(nodes)})", source=str(node_file))
        return nodes[0]
    if name is None:
        names = sorted({s["spec"]["nodeName"] for s in slices if (s.get("spec") or {}).get("nodeName")})
        if len(names) != 1:
            raise InputError(f"--node is required: the slices name {len(names)} nodes ({', '.join(names)})")
        name = names[0]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def allocate_files(
    *,
    slices: Sequence[Path],
    classes: Sequence[Path],
    claim: Path,
    allocated: Sequence[Path] = (),
    node: str | None = None,
    node_file: Path | None = None,
    mode: Mode = "upstream",
    features: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """(exit code, answer) for one `gpudra allocate` invocation."""
    try:
        feature_set = FeatureSet.parse(features) if features else FeatureSet.latest()
        slice_objs = load_kind(slices, "ResourceSlice")
        class_objs = load_kind(classes, "DeviceClass")
        claims = load_kind([claim], "ResourceClaim", "ResourceClaimTemplate")
        if not claims:
            raise InputError("no ResourceClaim or ResourceClaimTemplate found", source=str(claim))
        done = load_kind(allocated, "ResourceClaim")
        allocator = Allocator(slices=slice_objs, classes=class_objs, allocated=done, features=feature_set)
        result = allocator.allocate(claims, node=_node(node, node_file, slice_objs), mode=mode)
    except Unsatisfiable as err:
        return 1, {"unsatisfiable": err.reason}
    except (AllocationError, GpudraError) as err:
        return 2, {"error": str(err)}
    if len(result) == 1:
        return 0, {"allocation": result[0]}
    return 0, {"allocations": result}
