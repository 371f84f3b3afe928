"""Every workload kind gpudra knows, gathered from the operators' modules under `workloads.kinds`.

The modules are found, not listed: each holds `KINDS` (its records) and `ORDER` (where its kinds stand when gpudra
names them, the built-ins first), so adding a kind touches its module alone. Lookups by kind name and by object.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from . import kinds as _kinds
from .kind import WorkloadKind

__all__ = ["KINDS", "KNOWN_KINDS", "OWNER_KINDS", "PASSED_THROUGH_KINDS", "api_group", "kind_named", "workload_kind"]


def _records(module: ModuleType) -> tuple[int, tuple[WorkloadKind, ...]]:
    order, records = getattr(module, "ORDER", None), getattr(module, "KINDS", None)
    if not isinstance(order, int) or not isinstance(records, tuple):
        raise TypeError(f"{module.__name__} must define ORDER (an int) and KINDS (a tuple of WorkloadKind)")
    if not all(isinstance(r, WorkloadKind) for r in records):
        raise TypeError(f"{module.__name__}.KINDS holds something that is not a WorkloadKind")
    return order, records


def _discover() -> tuple[WorkloadKind, ...]:
    found = [
        (*_records(importlib.import_module(f"{_kinds.__name__}.{info.name}")), info.name)
        for info in pkgutil.iter_modules(_kinds.__path__)
        if not info.name.startswith("_")
    ]
    found.sort(key=lambda entry: (entry[0], entry[2]))
    records = tuple(r for _, module_records, _ in found for r in module_records)
    names = [r.kind for r in records]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TypeError(f"workload kinds defined twice: {', '.join(twice)}")
    return records


KINDS: tuple[WorkloadKind, ...] = _discover()
# The kinds whose pod templates gpudra rewrites, in the order messages list them.
KNOWN_KINDS: tuple[WorkloadKind, ...] = tuple(k for k in KINDS if k.paths)
# The kinds that ask for GPUs outside any template gpudra could rewrite.
PASSED_THROUGH_KINDS: tuple[WorkloadKind, ...] = tuple(k for k in KINDS if k.passed_through)
# The kinds a GPUSizingRecommendation may target (the CRD's targetRef.kind) and the recommender reads.
OWNER_KINDS: tuple[WorkloadKind, ...] = tuple(k for k in KINDS if k.resource is not None)

_BY_KIND: dict[str, WorkloadKind] = {k.kind: k for k in KINDS}


def kind_named(kind: str) -> WorkloadKind | None:
    """The record of `kind` (a kind name, whatever its API group), else None."""
    return _BY_KIND.get(kind)


def api_group(obj: Mapping[str, Any]) -> str | None:
    """The API group of `apiVersion` (`""` for the core group), or None when the object has no apiVersion."""
    version = obj.get("apiVersion")
    if not isinstance(version, str) or not version:
        return None
    return version.rpartition("/")[0]


def workload_kind(obj: Mapping[str, Any]) -> WorkloadKind | None:
    """The record of `obj`'s kind when it is served in one of the kind's API groups (or names no apiVersion)."""
    kind = obj.get("kind")
    known = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if known is None:
        return None
    group = api_group(obj)
    return known if group is None or group in known.groups else None
