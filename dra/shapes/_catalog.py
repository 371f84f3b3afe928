"""The GPU catalog as device shapes: every model as the NVIDIA DRA driver can publish it, for checks without a cluster.

Per catalog model, one node of its usual GPU count in each way the driver (release `DEFAULT_DRIVER_RELEASE`) can
publish it: whole GPUs as by default; whole GPUs with the gates that add attributes and sharing (ConsumableShares,
FabricManagerPartitioning) and gpudra's NVLink groups; and, for MIG-capable models, DynamicMIG (every profile at
every placement). An alternative no catalog shape satisfies, no cluster of these GPUs can.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from dra.gpus import DEFAULT_DRIVER_RELEASE as _RELEASE
from dra.gpus import all_models, device_classes, node_resource_slices, parse_driver_gates, synthetic_node
from dra.shapes._fold import fold_shapes
from dra.shapes._shape import DeviceShapes

__all__ = ["catalog_shapes", "catalog_slices", "dump_shapes"]

_GATES = ("ConsumableShares", "FabricManagerPartitioning")


def catalog_slices() -> list[dict[str, Any]]:
    """ResourceSlices of one node per catalog model and publishing variant (see the module docstring)."""
    gates = parse_driver_gates(_GATES, _RELEASE)
    slices: list[dict[str, Any]] = []
    for model in all_models():
        base = model.key.lower()
        node = synthetic_node(model, f"catalog-{base}")
        slices += node_resource_slices(node, mig_mode="none")
        rich = synthetic_node(model, f"catalog-{base}-gates")
        slices += node_resource_slices(rich, mig_mode="none", gpudra_attributes=True, driver_gates=gates)
        if model.mig is not None:
            slices += node_resource_slices(synthetic_node(model, f"catalog-{base}-mig"), mig_mode="dynamic")
    return slices


@functools.cache
def catalog_shapes() -> DeviceShapes:
    """The catalog's shapes with the NVIDIA chart's DeviceClasses (built once per process)."""
    return fold_shapes(catalog_slices(), device_classes())


def dump_shapes(objects: Iterable[Mapping[str, Any]]) -> DeviceShapes:
    """The shapes of a cluster dump (`kubectl get resourceslices,deviceclasses -o yaml`, read as objects): its
    ResourceSlices with its DeviceClasses, or the NVIDIA chart's classes when it holds none. Other kinds are ignored."""
    slices: list[Mapping[str, Any]] = []
    classes: list[Mapping[str, Any]] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ResourceSlice":
            slices.append(obj)
        elif kind == "DeviceClass":
            classes.append(obj)
    return fold_shapes(slices, classes or device_classes())
