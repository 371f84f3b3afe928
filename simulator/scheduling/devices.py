"""The DynamicResources filter on a simulated node: `dra.allocator` places a claim on the node's ResourceSlices.

Each node template gets the ResourceSlices the NVIDIA driver would publish (`dra.gpus.node_resource_slices`;
pool = node name, generated once per template). The node's current pods become one allocated claim. Answers
are memoised by (template, the node's device usage, claim JSON): device names carry no pool, so nodes in equal
states share one answer.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from dra.allocator import Allocator, Claim, Mode, Node, SelectorMatcher, Unsatisfiable, cel_selector_matcher
from dra.gpus import (
    DRIVER,
    DriverGates,
    GPUModel,
    IndexedSlices,
    SliceDevice,
    device_classes,
    get,
    index_devices,
    indexed_node_slices,
    synthetic_node,
    trace_models,
)
from dra.quantity import Quantity

from ..cluster import NodeSpec
from ..state import PLAIN, NodeState, Part
from .scores import prioritized_list_score

__all__ = ["PlacedClaim", "Placer", "Usage", "claim_devices", "node_slices"]

# (device name, consumed memory MiB) per device in use; -1: held exclusively
Usage = tuple[tuple[str, int], ...]
Result = tuple[tuple[str, int, str], ...]  # the allocator's answer: (device, memory as above, request it serves)


@dataclass(frozen=True, slots=True)
class PlacedClaim:
    """Where the allocator put a claim on a node: the pod's parts (real GPU indices), the device names and the
    request (`request` or `request/subrequest`) each serves, in the allocation's results order."""

    parts: tuple[Part, ...]
    devices: tuple[str, ...]
    requests: tuple[str, ...]


def _slice_model(gpu: GPUModel) -> GPUModel:
    """The model the node's slices are generated from: the openb trace's models are published as the catalog
    product their label names (`P100` -> P100-PCIE-16GB), as the simulator has always done."""
    if gpu in trace_models():
        return get(gpu.key)
    return gpu


def node_slices(spec: NodeSpec, name: str, *, gpudra_attributes: bool = False) -> IndexedSlices:
    """The ResourceSlices of node `name` and their device index: the ones a real node published, as they are
    (pool and node renamed), else built as `spec` exactly as the NVIDIA DRA driver (0.5) publishes them: pools
    with the node's `driver_gates` (ConsumableShares: shareable whole GPUs and static MIG devices, memory mode, never
    DynamicMIG's partitions; FabricManagerPartitioning); and, with `gpudra_attributes`, gpudra's
    `gpu.gpudra.io/nvlinkGroup`."""
    assert spec.gpu is not None
    if spec.slices:
        renamed = copy.deepcopy(list(spec.slices))
        for item in renamed:
            item["spec"]["pool"] = {**(item["spec"].get("pool") or {}), "name": name}
            item["spec"]["nodeName"] = name
        return IndexedSlices(renamed, index_devices(spec.slices, spec.gpu))
    layouts: dict[int, list[Any]] | None = (
        {i: list(spec.layout) for i in range(spec.gpu_count)} if spec.layout else None
    )
    if spec.mig == "dynamic":
        # MIG on demand needs MIG mode on where it cannot be toggled without a GPU reset (Ampere): the driver then
        # announces the partitions only (dra.gpus.slices, isDynamicMIGCapable); Hopper and newer are unchanged.
        layouts = {i: [] for i in range(spec.gpu_count)}
    node = synthetic_node(_slice_model(spec.gpu), name, spec.gpu_count, mig_layouts=layouts)
    gates = spec.driver_gates
    if spec.mig == "dynamic":  # applyConsumableShares runs for whole GPUs and static MIG devices only
        gates = DriverGates(gates.enabled - {"ConsumableShares"}, gates.consumable_shares)
    return indexed_node_slices(
        node,
        mig_mode="static" if spec.mig == "static" else spec.mig,  # type: ignore[arg-type]
        gpudra_attributes=gpudra_attributes,
        driver_gates=gates if gates.enabled else None,
    )


@dataclass(slots=True)
class _Template:
    slices: list[dict[str, Any]]
    devices: dict[str, SliceDevice]  # name -> GPU index, MIG profile, start
    names: dict[tuple[int, str, int], str]  # (GPU index, profile, start) -> MIG device name
    whole: dict[int, str]  # GPU index -> the whole GPU's device name
    memory: int
    matcher: SelectorMatcher
    allocator: Allocator  # with nothing allocated; `with_allocated` reuses its parsed slices and selector results


_POOL = "node"  # the pool (= node) name templates are generated with; answers are mapped to the real node
_NODE = Node(_POOL)


class Placer:
    """Asks `dra.allocator` where a claim goes on a node; memoised by node template, device usage and claim."""

    def __init__(self, mode: Mode, *, memoize: bool = True, gpudra_attributes: bool = False) -> None:
        self.mode = mode
        self.memoize = memoize
        self.gpudra_attributes = gpudra_attributes
        self.classes = device_classes()
        self._templates: dict[tuple[Any, ...], _Template] = {}
        self._memo: dict[tuple[Any, ...], Result | None] = {}
        self._specs: dict[int, tuple[NodeSpec, _Template]] = {}  # by identity: `NodeSpec.template` is slow to hash
        self.calls = 0  # allocator calls (memo misses)

    def _template(self, spec: NodeSpec) -> _Template:
        known = self._specs.get(id(spec))
        if known is not None and known[0] is spec:
            return known[1]
        found = self._templates.get(spec.template)
        if found is None:
            assert spec.gpu is not None
            made = node_slices(spec, _POOL, gpudra_attributes=self.gpudra_attributes)
            names = {(d.gpu, d.profile.name, d.start): n for n, d in made.devices.items() if d.profile is not None}
            whole = {d.gpu: n for n, d in made.devices.items() if d.profile is None}
            matcher = _memo_matcher(cel_selector_matcher())
            base = Allocator(slices=made.slices, classes=self.classes, selector_matcher=matcher)
            found = self._templates[spec.template] = _Template(
                made.slices, made.devices, names, whole, spec.gpu.memory_mib, matcher, base
            )
        self._specs[id(spec)] = (spec, found)
        return found

    def device_parts(self, spec: NodeSpec, results: list[dict[str, Any]], share_milli: int = 1000) -> tuple[Part, ...]:
        """An allocation's results (device names as the node publishes them) as parts, real GPU indices; a
        result with `consumedCapacity.memory` is a share of its GPU. KeyError names a device the node lacks."""
        tmpl = self._template(spec)
        parts = []
        for result in results:
            device = tmpl.devices[str(result["device"])]
            consumed = (result.get("consumedCapacity") or {}).get("memory")
            if device.profile is not None:
                prof = device.profile
                parts.append(Part(device.gpu, "mig", prof.compute_milli, prof.memory_mib, prof, device.start))
            elif consumed is not None:
                memory = math.ceil(Quantity.parse(str(consumed)).value / 2**20)
                parts.append(Part(device.gpu, "share", share_milli, memory))
            else:
                parts.append(Part(device.gpu, "whole", 1000, tmpl.memory))
        return tuple(parts)

    def usage(self, node: NodeState, compute_milli: int = 0) -> Usage:
        """The node's devices in use, pool-free and in a canonical order; with `compute_milli`, a shared GPU with
        less compute than that left is offered as held (the compute-bound model of `PolicyClaims`)."""
        tmpl = self._template(node.spec)
        used: dict[str, int] = {}
        if compute_milli:
            for index, gpu in enumerate(node.gpus):
                if gpu.mode == PLAIN and gpu.free_milli < compute_milli:
                    used[tmpl.whole[index]] = -1
        for alloc in node.pods.values():
            for part in alloc.parts:
                if part.kind == "mig":
                    assert part.profile is not None
                    used[tmpl.names[(part.gpu, part.profile.name, part.start)]] = -1
                elif part.kind == "share":
                    name = tmpl.whole[part.gpu]
                    if used.get(name, 0) >= 0:
                        used[name] = used.get(name, 0) + part.vram
                else:
                    used[tmpl.whole[part.gpu]] = -1
        return tuple(sorted(used.items()))

    def place(
        self, node: NodeState, claim_key: str, claim: Claim, share_milli: int, *, compute_bound: bool = False
    ) -> PlacedClaim | None:
        """The parts (real GPU indices) the allocator gives `claim` on `node`, or None when it cannot; with
        `compute_bound`, only GPUs with `share_milli` of compute left are offered."""
        if node.spec.gpu is None:
            return None
        tmpl = self._template(node.spec)
        usage = self.usage(node, share_milli if compute_bound else 0)
        key = (id(tmpl), usage, claim_key)
        result = self._memo.get(key, ()) if self.memoize else ()
        if result == ():
            result = self._allocate(tmpl, usage, claim)
            if self.memoize:
                self._memo[key] = result
        if result is None:
            return None
        parts = []
        for name, memory, _request in result:
            device = tmpl.devices[name]
            profile = device.profile
            if profile is not None:
                parts.append(Part(device.gpu, "mig", profile.compute_milli, profile.memory_mib, profile, device.start))
            elif 0 <= memory < tmpl.memory:  # a share of all the memory is the whole GPU
                parts.append(Part(device.gpu, "share", share_milli, memory))
            else:
                parts.append(Part(device.gpu, "whole", 1000, tmpl.memory))
        return PlacedClaim(tuple(parts), tuple(r[0] for r in result), tuple(r[2] for r in result))

    def _allocate(self, tmpl: _Template, usage: Usage, claim: Claim) -> Result | None:
        self.calls += 1
        results = []
        for k, (name, memory) in enumerate(usage):
            entry: dict[str, Any] = {"request": "r", "driver": DRIVER, "pool": _POOL, "device": name}
            if memory >= 0:
                entry |= {"shareID": f"share-{k}", "consumedCapacity": {"memory": f"{memory}Mi"}}
            results.append(entry)
        in_use = {
            "metadata": {"name": "in-use", "namespace": "default"},
            "spec": {"devices": {"requests": []}},
            "status": {"allocation": {"devices": {"results": results}}},
        }
        allocator = tmpl.allocator.with_allocated([in_use] if results else [])
        try:
            (allocation,) = allocator.allocate([claim], node=_NODE, mode=self.mode)
        except Unsatisfiable:
            return None
        answer = []
        for r in allocation["devices"]["results"]:
            consumed = (r.get("consumedCapacity") or {}).get("memory")
            memory = -1 if consumed is None else math.ceil(Quantity.parse(str(consumed)).value / 2**20)
            answer.append((str(r["device"]), memory, str(r.get("request", ""))))
        return tuple(answer)


def claim_devices(
    placer: Placer,
    node: NodeState,
    claim_key: str,
    claim: Claim,
    requests: list[dict[str, Any]],
    share_milli: int,
    *,
    compute_bound: bool = False,
) -> tuple[tuple[Part, ...], tuple[str, ...], int] | None:
    """The DynamicResources filter and score on `node`: the claim's parts in the node's canonical GPU order, the
    device names, and the prioritized-list score of the subrequests picked (None: the claim does not fit)."""
    placed = placer.place(node, claim_key, claim, share_milli, compute_bound=compute_bound)
    if placed is None:
        return None
    position = {real: canonical for canonical, real in enumerate(node.canon)}
    parts = tuple(Part(position[p.gpu], p.kind, p.milli, p.vram, p.profile, p.start) for p in placed.parts)
    return parts, placed.devices, prioritized_list_score(requests, [{"request": r} for r in placed.requests])


def _memo_matcher(matcher: SelectorMatcher) -> SelectorMatcher:
    """`matcher` memoised by (device name, expression) across the allocators of one template's slices."""
    memo: dict[tuple[str, str], bool | Exception] = {}

    def matches(driver: str, device: Any, expression: str) -> bool:
        key = (device.name, expression)
        hit = memo.get(key)
        if hit is None:
            try:
                hit = matcher(driver, device, expression)
            except Exception as err:  # noqa: BLE001 - the allocator's SelectorCache re-raises what the matcher raised
                hit = err
            memo[key] = hit
        if isinstance(hit, Exception):
            raise hit
        return hit

    return matches
