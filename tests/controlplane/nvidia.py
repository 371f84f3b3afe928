"""Small builders of the NVIDIA DRA driver's objects (DeviceClasses, ResourceSlices) for the e2e tests.

Shapes follow kubernetes-sigs/dra-driver-nvidia-gpu (chart templates/deviceclass-*.yaml, gpu-kubelet-plugin
deviceinfo.go / partitions.go); values such as UUIDs and product strings are illustrative. These builders are
deliberately tiny and independent of the product's catalog generators in `dra/gpus/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DRIVER = "gpu.nvidia.com"
RESOURCE = "resource.k8s.io/v1"


def device_classes() -> list[dict[str, Any]]:
    """`gpu.nvidia.com` (with the KEP-5004 extended resource name) and `mig.nvidia.com`, as the chart has them."""

    def cls(name: str, kind: str, extended: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "selectors": [
                {
                    "cel": {
                        "expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
                    }
                }
            ]
        }
        if extended is not None:
            spec["extendedResourceName"] = extended
        return {"apiVersion": RESOURCE, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}

    return [cls("gpu.nvidia.com", "gpu", "nvidia.com/gpu"), cls("mig.nvidia.com", "mig", None)]


@dataclass(frozen=True)
class GpuModel:
    product_name: str
    architecture: str
    compute_capability: str
    memory: str


H100 = GpuModel("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")
A100_80GB = GpuModel("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "80Gi")


@dataclass(frozen=True)
class MigProfile:
    name: str
    gi_profile_id: int
    memory_slices: int
    starts: tuple[int, ...]
    multiprocessors: int
    memory: str


# A100-80GB GI profiles (NVIDIA MIG user guide, "Supported MIG Profiles"); SM counts from nvidia-smi -lgipp.
A100_80GB_PROFILES = (
    MigProfile("1g.10gb", 19, 1, (0, 1, 2, 3, 4, 5, 6), 14, "10Gi"),
    MigProfile("1g.20gb", 15, 2, (0, 2, 4, 6), 14, "20Gi"),
    MigProfile("2g.20gb", 14, 2, (0, 2, 4), 28, "20Gi"),
    MigProfile("3g.40gb", 9, 4, (0, 4), 42, "40Gi"),
    MigProfile("4g.40gb", 5, 4, (0,), 56, "40Gi"),
    MigProfile("7g.80gb", 0, 8, (0,), 98, "80Gi"),
)
A100_MULTIPROCESSORS = 98
MEMORY_SLICES = 8


def _attrs(values: dict[str, str], versions: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {k: {"string": v} for k, v in values.items()}
    out.update({k: {"version": v} for k, v in (versions or {}).items()})
    return out


def _gpu_attributes(model: GpuModel, node: str, minor: int) -> dict[str, Any]:
    return _attrs(
        {
            "type": "gpu",
            "uuid": f"GPU-{node}-{minor:02d}",
            "productName": model.product_name,
            "brand": "Nvidia",
            "architecture": model.architecture,
            "resource.kubernetes.io/pciBusID": f"0000:{0x18 + minor:02x}:00.0",
            "resource.kubernetes.io/pcieRoot": f"pci0000:{0x15 + 0x10 * (minor // 2):02x}",
        },
        {"cudaComputeCapability": model.compute_capability, "driverVersion": "580.95.5", "cudaDriverVersion": "13.0.0"},
    )


def _slice(name: str, node: str, pool_slices: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": pool_slices},
            **spec,
        },
    }


def full_gpu_slice(node: str, model: GpuModel = H100, count: int = 8) -> dict[str, Any]:
    """One slice with `count` whole GPUs `gpu-0..` (the driver's default mode)."""
    devices = [
        {
            "name": f"gpu-{minor}",
            "attributes": _gpu_attributes(model, node, minor),
            "capacity": {"memory": {"value": model.memory}},
        }
        for minor in range(count)
    ]
    return _slice(f"{node}-{DRIVER}", node, 1, {"devices": devices})


def _mig_name(minor: int, profile: MigProfile, start: int) -> str:
    return f"gpu-{minor}-mig-{profile.name.replace('.', '')}-{profile.gi_profile_id}-{start}"


def _mig_device(node: str, minor: int, profile: MigProfile, start: int, model: GpuModel) -> dict[str, Any]:
    parent = _gpu_attributes(model, node, minor)
    attrs = {k: v for k, v in parent.items() if k not in {"type", "uuid"}}
    attrs.update(_attrs({"type": "mig", "profile": profile.name, "parentUUID": parent["uuid"]["string"]}))
    return {
        "name": _mig_name(minor, profile, start),
        "attributes": attrs,
        "capacity": {"memory": {"value": profile.memory}, "multiprocessors": {"value": str(profile.multiprocessors)}},
    }


def static_mig_slice(
    node: str, layout: list[tuple[str, int]], model: GpuModel = A100_80GB, minor: int = 0
) -> dict[str, Any]:
    """Existing MIG devices on one GPU: `layout` is [(profile name, placement start), ...]."""
    by_name = {p.name: p for p in A100_80GB_PROFILES}
    devices = []
    for name, start in layout:
        profile = by_name[name]
        dev = _mig_device(node, minor, profile, start, model)
        dev["attributes"]["uuid"] = {"string": f"MIG-{node}-{minor}-{start}"}
        for i in range(start, start + profile.memory_slices):
            dev["capacity"][f"memorySlice{i}"] = {"value": "1"}
        devices.append(dev)
    return _slice(f"{node}-{DRIVER}-mig", node, 1, {"devices": sorted(devices, key=lambda d: str(d["name"]))})


def counter_set_name(minor: int) -> str:
    return f"gpu-{minor}-counter-set"


def dynamic_mig_slices(node: str, gpus: int = 1, model: GpuModel = A100_80GB) -> list[dict[str, Any]]:
    """Partitionable devices in the 1.35+ layout: one sharedCounters-only slice with a counter set per GPU,
    then one device slice per GPU holding the full GPU and every (profile, placement) as a MIG device."""
    counters = {
        "multiprocessors": {"value": str(A100_MULTIPROCESSORS)},
        "memory": {"value": model.memory},
        **{f"memory-slice-{i}": {"value": "1"} for i in range(MEMORY_SLICES)},
    }
    pool_slices = gpus + 1
    slices = [
        _slice(
            f"{node}-{DRIVER}-counters",
            node,
            pool_slices,
            {"sharedCounters": [{"name": counter_set_name(m), "counters": counters} for m in range(gpus)]},
        )
    ]
    for minor in range(gpus):
        full = {
            "name": f"gpu-{minor}",
            "attributes": _gpu_attributes(model, node, minor),
            "capacity": {"memory": {"value": model.memory}},
            "consumesCounters": [{"counterSet": counter_set_name(minor), "counters": counters}],
        }
        devices = [full]
        for profile in A100_80GB_PROFILES:
            for start in profile.starts:
                dev = _mig_device(node, minor, profile, start, model)
                used = {
                    "multiprocessors": {"value": str(profile.multiprocessors)},
                    "memory": {"value": profile.memory},
                    **{f"memory-slice-{i}": {"value": "1"} for i in range(start, start + profile.memory_slices)},
                }
                dev["consumesCounters"] = [{"counterSet": counter_set_name(minor), "counters": used}]
                devices.append(dev)
        devices.sort(key=lambda d: str(d["name"]))
        slices.append(_slice(f"{node}-{DRIVER}-gpu-{minor}", node, pool_slices, {"devices": devices}))
    return slices


def memory_slices_of(device: dict[str, Any]) -> set[int]:
    """The memory-slice indices a partitionable MIG device consumes (from its consumesCounters)."""
    used: set[int] = set()
    for consumption in device.get("consumesCounters", []):
        for counter in consumption["counters"]:
            if counter.startswith("memory-slice-"):
                used.add(int(counter.removeprefix("memory-slice-")))
    return used
