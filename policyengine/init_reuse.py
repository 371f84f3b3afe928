"""The extra request of an init container that asks for more devices than the requests it shares hold.

The kubelet's device manager reuses an init container's devices for the containers started after it, so a pod asks
for the most any phase needs, not the sum (`facts.reusing_targets`). In a claim an init container references the
requests of the later containers and, for the devices they lack, an extra request: a copy of the first shared
request (the same DeviceClass, selectors, capacity and firstAvailable alternatives) asking for the difference, named
after the init container, placed under the same constraints (a matchAttribute on the shared request, or on one of
its alternatives, holds the extra's devices too) and given the same opaque config (MPS, time-slicing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Extra", "with_extra_requests"]

# (the request it copies, its name: the init container's, its devices)
Extra = tuple[str, str, int]


def _counted(device: Mapping[str, Any], count: int) -> dict[str, Any]:
    out = dict(device)
    if out.get("allocationMode") != "All":
        out["count"] = count
    return out


def _copy(request: Mapping[str, Any], name: str, count: int) -> dict[str, Any] | None:
    """`request` renamed `name`, asking for `count` devices per alternative; None when it allocates all matching
    devices (then it holds whatever an extra could add)."""
    if "firstAvailable" in request:
        subs = request["firstAvailable"]
        if any(s.get("allocationMode") == "All" for s in subs):
            return None
        return {"name": name, "firstAvailable": [_counted(s, count) for s in subs]}
    exactly = request.get("exactly") or {}
    if exactly.get("allocationMode") == "All":
        return None
    out = {k: v for k, v in request.items() if k not in ("name", "exactly")}
    return {"name": name, **out, "exactly": _counted(exactly, count)}


def _joined(entries: Sequence[Mapping[str, Any]], base: str, name: str) -> list[Mapping[str, Any]]:
    """`entries` (constraints or config) with the extra's names beside each name of `base` or its alternatives."""
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        names = list(entry.get("requests") or [])
        added = [name + ref[len(base) :] for ref in names if ref == base or ref.startswith(base + "/")]
        added = [a for a in added if a not in names]
        out.append({**entry, "requests": names + added} if added else entry)
    return out


def with_extra_requests(
    requests: Sequence[Mapping[str, Any]],
    constraints: Sequence[Mapping[str, Any]],
    config: Sequence[Mapping[str, Any]],
    extras: Sequence[Extra],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The claim's requests, constraints and config with each extra request added (new objects where they change;
    the given ones are never modified). An extra whose request is missing or allocates all devices is left out."""
    by_name = {r.get("name"): r for r in requests}
    out_requests, out_constraints, out_config = list(requests), list(constraints), list(config)
    for base, name, count in extras:
        found = by_name.get(base)
        built = _copy(found, name, count) if found is not None and count > 0 and name not in by_name else None
        if built is None:
            continue
        out_requests.append(built)
        by_name[name] = built
        out_constraints = _joined(out_constraints, base, name)
        out_config = _joined(out_config, base, name)
    return out_requests, out_constraints, out_config
