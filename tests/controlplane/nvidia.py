"""The NVIDIA DRA driver's objects (DeviceClasses, ResourceSlices) for the e2e and oracle tests.

Every slice here carries exactly what the driver publishes (driver 25.12's attribute and capacity sets, read from
its source: gpu-kubelet-plugin deviceinfo.go / mig.go / partitions.go), so the builders are thin wrappers over
`dra.gpus` (whose `tests/dra/gpus` tests hold the generators to the driver's sets) for the shapes these tests use.
UUIDs and PCI addresses are the catalog's synthetic ones.
"""

from __future__ import annotations

from typing import Any

from dra.gpus import DRIVER, GPUModel, get, node_resource_slices, synthetic_node
from dra.gpus import device_classes as chart_device_classes

__all__ = [
    "A100_80GB",
    "DRIVER",
    "H100",
    "RESOURCE",
    "counter_set_name",
    "device_classes",
    "dynamic_mig_slices",
    "full_gpu_slice",
    "memory_slices_of",
    "static_mig_slice",
]

RESOURCE = "resource.k8s.io/v1"
H100 = get("H100-SXM5-80GB")
A100_80GB = get("A100-SXM4-80GB")


def device_classes() -> list[dict[str, Any]]:
    """`gpu.nvidia.com` (with the KEP-5004 extended resource name) and `mig.nvidia.com`, as the chart has them."""
    return chart_device_classes(RESOURCE)


def full_gpu_slice(node: str, model: GPUModel = H100, count: int = 8) -> dict[str, Any]:
    """One slice with `count` whole GPUs `gpu-0..` (the driver's default mode)."""
    (only,) = node_resource_slices(synthetic_node(model, node, count), mig_mode="none")
    return only


def static_mig_slice(node: str, layout: list[tuple[str, int]], model: GPUModel = A100_80GB) -> dict[str, Any]:
    """The existing MIG devices of one GPU with MIG mode on: `layout` is [(profile name, placement start), ...]."""
    (only,) = node_resource_slices(synthetic_node(model, node, 1, mig_layouts={0: layout}), mig_mode="static")
    return only


def counter_set_name(minor: int) -> str:
    return f"gpu-{minor}-counter-set"


def dynamic_mig_slices(node: str, gpus: int = 1, model: GPUModel = A100_80GB) -> list[dict[str, Any]]:
    """Partitionable devices (DynamicMIG) in the 1.35+ layout: one sharedCounters-only slice with a counter set
    per GPU, then one device slice per GPU holding every (profile, placement) as a MIG device. The GPUs have MIG
    mode on, as an Ampere GPU must for the driver to announce its partitions (`isDynamicMIGCapable`, nvlib.go)."""
    on: dict[int, list[Any]] = {i: [] for i in range(gpus)}
    return node_resource_slices(
        synthetic_node(model, node, gpus, mig_layouts=on), mig_mode="dynamic", k8s_version="1.35"
    )


def memory_slices_of(device: dict[str, Any]) -> set[int]:
    """The memory-slice indices a partitionable MIG device consumes (from its consumesCounters)."""
    used: set[int] = set()
    for consumption in device.get("consumesCounters", []):
        for counter in consumption["counters"]:
            if counter.startswith("memory-slice-"):
                used.add(int(counter.removeprefix("memory-slice-")))
    return used
