"""Turn a finished search into ResourceClaim `status.allocation` dicts exactly as upstream builds them.

Results keep the search order and carry `req` or `req/sub` names; the config list holds each class's
configs once (FromClass) and then the claim's matching configs (FromClaim), with `requests` dropped when a
config covers every request; the node selector pins node-local devices to the node by `metadata.name`.
"""

from __future__ import annotations

from typing import Any

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Claim, canonical_quantity
from dra.allocator.requests import RequestData
from dra.allocator.search import DeviceResult

__all__ = ["build_allocation"]


def _tolerations(claim: Claim, result: DeviceResult) -> list[dict[str, Any]]:
    # Upstream looks the request up again by name in the claim (internalDeviceResult.lookupRequest).
    req = result.request
    for cr in claim.requests:
        if cr.name != (req.parent or req.name):
            continue
        if req.parent is None:
            return list(cr.exact.tolerations) if cr.exact is not None else []
        for sub in cr.subrequests:
            if sub.name == req.name:
                return list(sub.tolerations)
    return []


def _device_result(claim: Claim, r: DeviceResult, binding: bool) -> dict[str, Any]:
    cand = r.candidate
    out: dict[str, Any] = {
        "request": r.name,
        "driver": cand.slice.driver,
        "pool": cand.slice.pool,
        "device": cand.device.name,
    }
    if r.admin_access:
        out["adminAccess"] = True
    tolerations = _tolerations(claim, r)
    if tolerations:
        out["tolerations"] = tolerations
    if binding:
        if cand.device.binding_conditions:
            out["bindingConditions"] = list(cand.device.binding_conditions)
        if cand.device.binding_failure_conditions:
            out["bindingFailureConditions"] = list(cand.device.binding_failure_conditions)
    if r.share_id is not None:
        out["shareID"] = r.share_id
    if r.consumed:
        out["consumedCapacity"] = {name: canonical_quantity(text) for name, (_, text) in r.consumed.items()}
    return out


def _selected(data: dict[tuple[int, int, int], RequestData], ci: int, ri: int) -> RequestData:
    rd = data[(ci, ri, 0)]
    if rd.parent is not None:
        rd = data[(ci, ri, rd.selected_sub)]
    return rd


def _configs(claim: Claim, ci: int, data: dict[tuple[int, int, int], RequestData]) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.requests)):
        rd = _selected(data, ci, ri)
        cls = rd.device_class
        if cls is None:
            continue
        if cls.name in class_ranges:
            lo, hi = class_ranges[cls.name]
            for i in range(lo, hi):
                configs[i]["requests"].append(rd.name)
            continue
        lo = len(configs)
        for cfg in cls.config:
            entry: dict[str, Any] = {"source": "FromClass", "requests": [rd.name]}
            entry.update({k: v for k, v in cfg.items() if k != "requests"})
            configs.append(entry)
        class_ranges[cls.name] = (lo, len(configs))

    def selected_name(ri: int) -> str | None:
        rd = data[(ci, ri, 0)]
        if rd.parent is None:
            return None
        sub = claim.requests[ri].subrequests[rd.selected_sub]
        return f"{claim.requests[ri].name}/{sub.name}"

    for cfg in claim.config:
        wanted = cfg.get("requests") or []
        body = {k: v for k, v in cfg.items() if k != "requests"}
        if not wanted:
            configs.append({"source": "FromClaim", **({"requests": list(wanted)} if wanted else {}), **body})
            continue
        for ri, cr in enumerate(claim.requests):
            name = selected_name(ri)
            if cr.name in wanted or (name is not None and name in wanted):
                configs.append({"source": "FromClaim", "requests": list(wanted), **body})
                break

    for entry in configs:
        requests = entry.get("requests")
        if not requests:
            continue
        covers_all = True
        for ri, cr in enumerate(claim.requests):
            if cr.name in requests:
                continue
            name = selected_name(ri)
            if name is not None and name in requests:
                continue
            covers_all = False
            break
        if covers_all:
            del entry["requests"]
    return configs


def _requirement_key(req: dict[str, Any]) -> tuple[str, str, frozenset[str]]:
    return req.get("key", ""), req.get("operator", ""), frozenset(req.get("values") or ())


def _node_selector(results: list[DeviceResult], node_name: str) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = []
    exprs: list[dict[str, Any]] = []
    for r in results:
        s = r.candidate.slice
        d = r.candidate.device
        if s.per_device_node_selection:
            name, selector = d.node_name, d.node_selector
        else:
            name, selector = s.node_name, s.node_selector
        if name is not None or d.binds_to_node:
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if not terms:
            continue
        for source, target in (
            (terms[0].get("matchFields") or [], fields),
            (terms[0].get("matchExpressions") or [], exprs),
        ):
            for req in source:
                if _requirement_key(req) not in {_requirement_key(t) for t in target}:
                    target.append(req)
    if not fields and not exprs:
        return None
    term: dict[str, Any] = {}
    if exprs:
        term["matchExpressions"] = exprs
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def build_allocation(
    claim: Claim,
    ci: int,
    results: list[DeviceResult],
    data: dict[tuple[int, int, int], RequestData],
    node_name: str,
    binding: bool,
) -> dict[str, Any]:
    """The `status.allocation` of one claim."""
    devices: dict[str, Any] = {}
    rows = [_device_result(claim, r, binding) for r in results]
    if rows:
        devices["results"] = rows
    configs = _configs(claim, ci, data)
    if configs:
        devices["config"] = configs
    out: dict[str, Any] = {"devices": devices}
    try:
        selector = _node_selector(results, node_name)
    except AllocationError as err:
        raise AllocationError(f"create NodeSelector for claim {claim.name}: {err}") from None
    if selector is not None:
        out["nodeSelector"] = selector
    return out
