"""Gather the resource pools a node can use, as upstream's `GatherPools` (pools_experimental.go).

Slices are grouped by (driver, pool) keeping the highest generation; a pool is incomplete when fewer slices
than `resourceSliceCount` exist, invalid when device names repeat or counter references dangle. Node
selection covers nodeName, nodeSelector (core/v1 NodeSelector terms on labels and `metadata.name`),
allNodes and perDeviceNodeSelection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Amount, Node, Slice, SliceDevice
from dra.allocator.features import FeatureSet

__all__ = ["Pool", "gather_pools", "node_matches", "node_selector_matches"]


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[Slice] = field(default_factory=list)  # device slices targeting the node
    slices_not_targeting: list[Slice] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Amount]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


_INT = ("Gt", "Lt")


def _requirement_error(req: dict[str, Any], where: str) -> str | None:
    op = req.get("operator", "")
    values = req.get("values") or []
    if op in ("In", "NotIn"):
        return (
            None if values else f"{where}: values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    if op in ("Exists", "DoesNotExist"):
        return (
            None
            if not values
            else f"{where}: values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    if op in _INT:
        if len(values) != 1:
            return f"{where}: values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        try:
            int(values[0])
        except ValueError:
            return f"{where}: values[0]: Invalid value: {values[0]!r}: must be an integer"
        return None
    return f"{where}: operator: Invalid value: {op!r}: not a valid selector operator"


def _label_requirement_matches(req: dict[str, Any], labels: dict[str, str]) -> bool:
    key = req.get("key", "")
    op = req.get("operator", "")
    values = req.get("values") or []
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if not has:
        return False
    try:
        actual = int(labels[key])
    except ValueError:
        return False
    return actual > int(values[0]) if op == "Gt" else actual < int(values[0])


def node_selector_matches(selector: dict[str, Any], node: Node | None) -> bool:
    """core/v1 NodeSelector semantics (terms ORed, requirements ANDed, empty term matches nothing).

    Raises `AllocationError` for a selector that `nodeaffinity.NewNodeSelector` rejects.
    """
    terms = selector.get("nodeSelectorTerms") or []
    errors = []
    for i, term in enumerate(terms):
        for j, req in enumerate(term.get("matchExpressions") or []):
            err = _requirement_error(req, f"nodeSelectorTerms[{i}].matchExpressions[{j}]")
            if err:
                errors.append(err)
        for j, req in enumerate(term.get("matchFields") or []):
            where = f"nodeSelectorTerms[{i}].matchFields[{j}]"
            if req.get("key") != "metadata.name":
                errors.append(f"{where}.key: Invalid value: {req.get('key')!r}: not a valid field selector key")
            elif req.get("operator") not in ("In", "NotIn") or len(req.get("values") or []) != 1:
                errors.append(f"{where}.values: Required value: must have one element")
    if errors:
        raise AllocationError("; ".join(errors))
    if node is None:
        return False
    labels = node.label_map
    for term in terms:
        exprs = term.get("matchExpressions") or []
        flds = term.get("matchFields") or []
        if not exprs and not flds:
            continue
        if not all(_label_requirement_matches(r, labels) for r in exprs):
            continue
        if not all(_label_requirement_matches(r, {"metadata.name": node.name}) for r in flds):
            continue
        return True
    return False


def node_matches(node: Node | None, node_name: str | None, all_nodes: bool, selector: dict[str, Any] | None) -> bool:
    """Upstream `NodeMatches`: nodeName, then allNodes, then nodeSelector; nothing set matches nothing."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node)
    return False


def _device_matches(node: Node | None, device: SliceDevice) -> bool:
    return node_matches(node, device.node_name, device.all_nodes, device.node_selector)


def _relevant(s: Slice, node: Node | None) -> bool | None:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        try:
            return node_matches(node, s.node_name, s.all_nodes, s.node_selector)
        except AllocationError as err:
            raise AllocationError(
                f"gather pool information: failed to perform node selection for slice {s.name}: {err}"
            ) from None
    if s.per_device_node_selection:
        for d in s.devices:
            try:
                if _device_matches(node, d):
                    return True
            except AllocationError as err:
                raise AllocationError(
                    "gather pool information: failed to perform node selection for device "
                    f"{d.name} in slice {s.name}: {err}"
                ) from None
        return False
    return None  # some unknown future node selection: skipped


def gather_pools(
    slices_for_node: list[Slice],
    node: Node | None,
    features: FeatureSet,
    slices_of_pool: Callable[[str, str], list[Slice]],
) -> list[Pool]:
    """The pools usable from `node`, sorted by (driver, pool), pools with binding conditions last.

    `slices_of_pool(driver, pool)` gives every slice of a pool, whatever its node (upstream scans all slices).
    """
    pools: dict[tuple[str, str], list[Slice]] = {}
    for s in slices_for_node:
        if not features.PartitionableDevices and (s.per_device_node_selection or s.shared_counters):
            continue
        # Without DRADeviceCompatibilityGroups (not implemented here, off in 1.37) such slices are ignored,
        # which makes their pool incomplete, as upstream.
        if s.uses_compatibility_groups:
            continue
        if not _relevant(s, node):
            continue
        key = (s.driver, s.pool)
        have = pools.get(key)
        if have is None or s.generation > have[0].generation:
            pools[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)

    result: list[Pool] = []
    with_binding: list[Pool] = []
    for (driver, pool_name), pool_slices in pools.items():
        count = pool_slices[0].slice_count
        generation = pool_slices[0].generation
        all_for_pool: list[Slice] | None = None
        if len(pool_slices) != count:
            obsolete = False
            all_for_pool = []
            for s in slices_of_pool(driver, pool_name):
                if s.generation == generation:
                    all_for_pool.append(s)
                elif s.generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            all_for_pool = [s for s in all_for_pool if not s.uses_compatibility_groups]
            if len(all_for_pool) != count:
                result.append(Pool(driver, pool_name, incomplete=True))
                continue
        pool = _build_pool(driver, pool_name, pool_slices, features, all_for_pool)
        (with_binding if _has_binding_conditions(pool) else result).append(pool)
    result.sort(key=lambda p: (p.driver, p.name))
    with_binding.sort(key=lambda p: (p.driver, p.name))
    return result + with_binding


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions is not None for s in pool.slices for d in s.devices)


def _build_pool(
    driver: str, name: str, pool_slices: list[Slice], features: FeatureSet, all_for_pool: list[Slice] | None
) -> Pool:
    pool_slices = sorted(pool_slices, key=lambda s: s.name)
    device_slices: list[Slice] = []
    counter_slices: list[Slice] = []
    not_targeting: list[Slice] = []
    for s in pool_slices:
        (counter_slices if features.PartitionableDevices and s.shared_counters else device_slices).append(s)
    if all_for_pool is not None and len(pool_slices) < len(all_for_pool):
        seen = {s.name for s in pool_slices}
        for s in all_for_pool:
            if s.name in seen:
                continue
            (counter_slices if features.PartitionableDevices and s.shared_counters else not_targeting).append(s)

    names: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in names:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate device name {d.name}")
            names.add(d.name)
    if not features.PartitionableDevices:
        return Pool(driver, name, slices=device_slices)

    counter_sets: dict[str, dict[str, Amount]] = {}
    for s in counter_slices:
        for set_name, set_counters in s.shared_counters:
            if set_name in counter_sets:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate counter set name {set_name}")
            counter_sets[set_name] = set_counters
    for group in (device_slices, not_targeting):
        for s in group:
            for d in s.devices:
                for set_name, counters in d.consumes:
                    cs = counter_sets.get(set_name)
                    if cs is None:
                        return Pool(driver, name, invalid=True, invalid_reason=f"counter set {set_name} not found")
                    for counter, _ in counters:
                        if counter not in cs:
                            return Pool(
                                driver,
                                name,
                                invalid=True,
                                invalid_reason=f"counter {counter} not found in counter set {set_name}",
                            )
    return Pool(driver, name, slices=device_slices, slices_not_targeting=not_targeting, counter_sets=counter_sets)
