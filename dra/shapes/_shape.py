"""`DeviceShape` (one kind of node, as an empty copy the allocator can use) and `DeviceShapes` (a cluster's set).

Both are immutable snapshots made by `ShapeFolder`; each shape keeps the evidence a refusal names later: the
products, the largest device memory, the MIG profiles offered, and a real node that has it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dra.errors import QuantityError
from dra.quantity import Quantity

__all__ = ["DeviceShape", "DeviceShapes", "ShapeEvidence", "shape_evidence"]


@dataclass(frozen=True, slots=True)
class ShapeEvidence:
    """What a shape offers, in the words a reason uses."""

    products: tuple[str, ...]
    mig_profiles: tuple[str, ...]
    devices: int
    largest_memory: int  # bytes; 0 when no device publishes a memory capacity
    largest_memory_device: str  # the device (name, product) that has it


def _named(entries: Mapping[str, Any], name: str) -> Any:
    """`name` or `<domain>/name`: the driver's own attributes are stored without their domain."""
    if name in entries:
        return entries[name]
    for key, value in entries.items():
        if key.rpartition("/")[2] == name:
            return value
    return None


def _bytes(capacity: Any) -> int:
    if not isinstance(capacity, Mapping) or capacity.get("value") is None:
        return 0
    try:
        value = Quantity.parse(str(capacity["value"]).strip()).value
    except QuantityError:
        return 0
    return int(value)


def shape_evidence(slices: Iterable[Mapping[str, Any]]) -> ShapeEvidence:
    """Products, MIG profiles, device count and the largest device memory of a node's slices."""
    products: set[str] = set()
    profiles: set[str] = set()
    devices = 0
    largest = 0
    largest_device = ""
    for raw in slices:
        for device in (raw.get("spec") or {}).get("devices") or []:
            devices += 1
            attributes = device.get("attributes") or {}
            product = (_named(attributes, "productName") or {}).get("string")
            if product:
                products.add(str(product))
            profile = (_named(attributes, "profile") or {}).get("string")
            if profile:
                profiles.add(str(profile))
            memory = _bytes(_named(device.get("capacity") or {}, "memory"))
            if memory > largest:
                largest = memory
                largest_device = f"{device.get('name', '')} ({product})" if product else str(device.get("name", ""))
    return ShapeEvidence(tuple(sorted(products)), tuple(sorted(profiles)), devices, largest, largest_device)


@dataclass(frozen=True, slots=True)
class DeviceShape:
    """One distinct node: its slices as published by an empty copy named `node_name`, and how many nodes have it."""

    key: str
    node_name: str
    slices: tuple[dict[str, Any], ...]
    evidence: ShapeEvidence
    nodes: int
    example: str  # a real node of this shape

    def describe(self) -> str:
        e = self.evidence
        what = ", ".join(e.products) or f"{e.devices} device(s)"
        text = f"{what} ({e.devices} device(s)"
        if e.largest_memory:
            text += f", largest memory {Quantity.from_scaled(e.largest_memory, 0, 'BinarySI')}"
        if e.mig_profiles:
            text += f", MIG {' '.join(e.mig_profiles)}"
        more = f" and {self.nodes - 1} more" if self.nodes > 1 else ""
        return f"{text}; node {self.example}{more})"


@dataclass(frozen=True, slots=True)
class DeviceShapes:
    """A cluster's distinct device shapes at one `generation` (equal generations: equal shapes and classes).

    `limit` says why the view is partial (more distinct shapes than the cap): a check against a partial view can say
    an alternative fits, never that nothing fits. `pending` counts pools not yet complete (not folded)."""

    generation: int
    token: str  # unique per folder and generation: the key memo tables use
    shapes: tuple[DeviceShape, ...]
    classes: tuple[dict[str, Any], ...]
    cluster_slices: tuple[dict[str, Any], ...]  # pools not local to one node, usable from every copy
    nodes: int
    pending: int = 0
    overflow: int = 0
    limit: str | None = None

    @property
    def complete(self) -> bool:
        return self.limit is None

    def largest_memory(self) -> tuple[int, str]:
        """The largest memory one device has in any shape, and which device and node show it (0, "" if none)."""
        best: tuple[int, str] = (0, "")
        for shape in self.shapes:
            e = shape.evidence
            if e.largest_memory > best[0]:
                best = (e.largest_memory, f"{e.largest_memory_device} on node {shape.example}")
        return best

    def shape(self, key: str) -> DeviceShape:
        for shape in self.shapes:
            if shape.key == key:
                return shape
        raise KeyError(key)
