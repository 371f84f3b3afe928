"""ResourceSlices in the NVIDIA DRA driver's shape (gpu-kubelet-plugin, HEAD), as Kubernetes JSON dicts.

Three modes, as the driver publishes them: `none` (every GPU whole), `static` (the default driver: GPUs with MIG
mode on publish their existing MIG devices with `memorySlice<i>` capacities, the others the whole GPU) and
`dynamic` (DynamicMIG, KEP-4815 partitionable devices: one counter set `gpu-<minor>-counter-set` per GPU, the
whole GPU consuming all of it, every (profile, placement) a device consuming its share and its memory slices;
1.34 layout = one slice per GPU, 1.35 layout = counter-only slices first, then one device-only slice per GPU).
Devices carry exactly the attributes the chosen driver release publishes (`dra.gpus.driver_versions`: 25.8 or
25.12, the default); gpudra's own `gpu.gpudra.io/nvlinkGroup` is added to whole GPUs only with
`gpudra_attributes=True` (docs/gpu-catalog.md). `passthrough=True` (the driver's PassthroughSupport feature gate)
adds the `gpu-vfio-<i>` devices, built from the sysfs facts a recorded node carries (`PhysicalGpu.vfio`).
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dra.errors import InputError
from dra.gpus.catalog import GPUModel
from dra.gpus.devices import MigInstance, NodeGpus, PhysicalGpu, VfioFacts
from dra.gpus.driver_gates import DriverGates, fabric_partitions
from dra.gpus.driver_versions import (
    DEFAULT_DRIVER_RELEASE,
    PCI_BUS_ID_ATTRIBUTE,
    PCIE_ROOT_ATTRIBUTE,
    DriverShape,
    driver_shape,
)
from dra.gpus.mig import MigProfile
from dra.gpus.topology import NVLINK_GROUP_ATTRIBUTE
from dra.model import KINDS, LIMITS, LIMITS_1_34, K8sModel, ResourceSlice
from dra.quantity import Quantity

__all__ = [
    "DRIVER",
    "GPU_DEVICE_CLASSES",
    "IndexedSlices",
    "MigMode",
    "SliceDevice",
    "VFIO_DEVICE_CLASS",
    "device_classes",
    "index_devices",
    "indexed_node_slices",
    "node_resource_slices",
    "parse_k8s_version",
    "resource_slices",
    "slice_limit_errors",
    "supports_mig_mode_toggle",
    "to_models",
    "vfio_device_uuid",
]

DRIVER = "gpu.nvidia.com"
VFIO_DEVICE_CLASS = "vfio.gpu.nvidia.com"
# The NVIDIA driver's DeviceClasses whose devices are GPUs (whole, MIG, passthrough): what GPU caps count.
GPU_DEVICE_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com", VFIO_DEVICE_CLASS})
MigMode = Literal["none", "static", "dynamic"]
API_VERSION = "resource.k8s.io/v1"


# The API server's limits (dra.model.LIMITS; 1.34's counter limits in LIMITS_1_34).
MAX_DEVICES = LIMITS["ResourceSliceMaxDevices"]
MAX_DEVICES_WITH_COUNTERS_135 = LIMITS["ResourceSliceMaxDevicesWithAdvancedFeatures"]
MAX_ATTRIBUTES_AND_CAPACITIES = LIMITS["ResourceSliceMaxAttributesAndCapacitiesPerDevice"]
MAX_COUNTERS_PER_SLICE_134 = LIMITS_1_34["ResourceSliceMaxSharedCounters"]
MAX_COUNTERS_PER_DEVICE_134 = LIMITS_1_34["ResourceSliceMaxCountersPerDevice"]
MAX_DEVICE_COUNTER_ENTRIES_134 = LIMITS_1_34["ResourceSliceMaxDeviceCountersPerSlice"]
MAX_COUNTER_SETS_PER_SLICE_135 = LIMITS["ResourceSliceMaxCounterSets"]
MAX_COUNTERS_PER_SET = LIMITS["ResourceSliceMaxCountersPerCounterSet"]
MAX_CONSUMPTIONS_PER_DEVICE_135 = LIMITS["ResourceSliceMaxDeviceCounterConsumptionsPerDevice"]
MAX_COUNTERS_PER_CONSUMPTION = LIMITS["ResourceSliceMaxCountersPerDeviceCounterConsumption"]
MAX_ATTRIBUTE_STRING = LIMITS["DeviceAttributeMaxValueLength"]

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def parse_k8s_version(text: str) -> tuple[int, int]:
    """`1.35`, `v1.35.2` -> (1, 35); raises ValueError naming the input."""
    m = _VERSION_RE.match(text.strip())
    if not m:
        raise ValueError(f"Kubernetes version must look like 1.35 or v1.35.2 (got {text!r})")
    return int(m.group(1)), int(m.group(2))


@functools.lru_cache(maxsize=256)
def _semver(text: str) -> str:
    """Masterminds semver's non-strict parse + String(): `8.0` -> `8.0.0`, `580.95.05` -> `580.95.5`."""
    parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
    parts += [0] * (3 - len(parts))
    return ".".join(str(p) for p in parts)


@functools.lru_cache(maxsize=4096)
def _binary(n: int) -> str:
    return str(Quantity.from_int(n, "BinarySI"))


@functools.lru_cache(maxsize=256)
def _dns(name: str) -> str:
    """The driver's camelToDNSName: `copyEngines` -> `copy-engines`."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", name).lower()


def _sorted(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in sorted(d)}


@dataclass(frozen=True, slots=True)
class SliceDevice:
    """What a generated device is: its physical GPU (NVML index) and, for a MIG device, its profile and start."""

    gpu: int
    profile: MigProfile | None = None  # None: the whole GPU
    start: int = 0  # the MIG device's first memory slice


@dataclass(frozen=True, slots=True)
class IndexedSlices:
    """ResourceSlices as Kubernetes dicts, and an index of their devices by name (no need to parse names back)."""

    slices: list[dict[str, Any]]
    devices: dict[str, SliceDevice]


DeviceIndex = dict[str, SliceDevice]


# -- devices --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Publish:
    """How a node's devices are published: the driver release's shape, and gpudra's NVLink groups (opt-in)."""

    shape: DriverShape
    groups: Mapping[int, str]
    gates: DriverGates = DriverGates()
    modules: Mapping[int, int] = field(default_factory=dict)  # GPU index -> Fabric Manager module id (1..8)


def _parent_attributes(gpu: PhysicalGpu, node: NodeGpus, pub: _Publish) -> dict[str, dict[str, Any]]:
    """The attributes a whole GPU and its MIG devices share (`GpuInfo.Attributes` minus type/uuid)."""
    attrs: dict[str, dict[str, Any]] = {
        "productName": {"string": gpu.product_name},
        "brand": {"string": gpu.brand},
        "architecture": {"string": gpu.architecture},
        "cudaComputeCapability": {"version": _semver(gpu.compute_capability)},
        "driverVersion": {"version": _semver(node.driver_version)},
        "cudaDriverVersion": {"version": _semver(node.cuda_driver_version)},
        pub.shape.pci_bus_id_attribute: {"string": gpu.pci_bus_id},
    }
    if gpu.pcie_root:
        attrs[PCIE_ROOT_ATTRIBUTE] = {"string": gpu.pcie_root}
    if gpu.addressing_mode and pub.shape.publishes_addressing_mode:
        attrs["addressingMode"] = {"string": gpu.addressing_mode}
    return attrs


def _gpu_attributes(gpu: PhysicalGpu, node: NodeGpus, pub: _Publish) -> dict[str, dict[str, Any]]:
    attrs = {"type": {"string": "gpu"}, "uuid": {"string": gpu.uuid}, **_parent_attributes(gpu, node, pub)}
    if gpu.index in pub.groups:
        attrs[NVLINK_GROUP_ATTRIBUTE] = {"string": pub.groups[gpu.index]}
    module = pub.modules.get(gpu.index)
    if module is not None:  # FabricManagerPartitioning (addFabricManagerAttributes)
        attrs["gpuModuleID"] = {"int": module}
        attrs.update({f"partition{size}": {"int": pid} for size, pid in fabric_partitions(module).items()})
    return _sorted(attrs)


def _consumable(device: dict[str, Any], gates: DriverGates, memory_bytes: int) -> dict[str, Any]:
    """The driver's applyConsumableShares: multiple allocations, the memory capacity (rounded down to 1Mi) with its
    request policy, and with `--consumable-shares N` a `shares` capacity."""
    if not gates.shares:
        return device
    step = 2**20
    memory = _binary(memory_bytes // step * step)
    if gates.consumable_shares == "memory":
        policy = {"default": memory, "validRange": {"min": "1Mi", "max": memory, "step": "1Mi"}}
    else:
        policy = {"default": "0", "validRange": {"min": "0", "max": memory, "step": "1Mi"}}
    capacity = dict(device.get("capacity") or {})
    capacity["memory"] = {"value": memory, "requestPolicy": policy}
    if gates.consumable_shares.isdigit():
        n = gates.consumable_shares
        capacity["shares"] = {
            "value": n,
            "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": n, "step": "1"}},
        }
    return {**device, "allowMultipleAllocations": True, "capacity": _sorted(capacity)}


def _mig_attributes(gpu: PhysicalGpu, node: NodeGpus, profile: str, pub: _Publish) -> dict[str, dict[str, Any]]:
    attrs = {
        "type": {"string": "mig"},
        "parentUUID": {"string": gpu.uuid},
        "profile": {"string": profile},
        **_parent_attributes(gpu, node, pub),
    }
    return attrs


def _capacity(values: Mapping[str, int]) -> dict[str, dict[str, str]]:
    return {k: {"value": _binary(v)} for k, v in sorted(values.items())}


def _counters(values: Mapping[str, int], start: int, size: int) -> dict[str, dict[str, str]]:
    counters = {_dns(k): v for k, v in values.items()}
    counters.update({f"memory-slice-{i}": 1 for i in range(start, start + size)})
    return {k: {"value": _binary(v)} for k, v in sorted(counters.items())}


def mig_device_name(gpu: PhysicalGpu, profile: MigProfile, start: int, shape: DriverShape) -> str:
    """25.12 on: `gpu-<minor>-mig-<profile without dots>-<GI profile id>-<start>` (MigSpecTuple.ToCanonicalName);
    25.8: `gpu-<minor>-mig-<GI profile id>-<start>-<size>`."""
    if shape.mig_name_has_profile:
        return f"gpu-{gpu.minor}-mig-{profile.device_name_part}-{profile.gi_profile_id}-{start}"
    return f"gpu-{gpu.minor}-mig-{profile.gi_profile_id}-{start}-{profile.memory_slices}"


def _publish(node: NodeGpus, release: str, gpudra_attributes: bool, gates: DriverGates | None = None) -> _Publish:
    gates = gates or DriverGates()
    modules: dict[int, int] = {}
    # Fabric Manager partitions exist on NVSwitch baseboards; gpudra knows the default table of the 8-GPU ones
    if gates.fabric_partitions and node.topology.nvswitch and len(node.gpus) == 8:
        by_bus = sorted(node.gpus, key=lambda g: g.pci_bus_id)
        modules = {gpu.index: position + 1 for position, gpu in enumerate(by_bus)}
    return _Publish(driver_shape(release), node.nvlink_groups() if gpudra_attributes else {}, gates, modules)


def _full_gpu_device(gpu: PhysicalGpu, node: NodeGpus, pub: _Publish) -> dict[str, Any]:
    """A whole GPU without DynamicMIG: its attributes and `memory` capacity (NVML total memory)."""
    device = {
        "name": gpu.name,
        "attributes": _gpu_attributes(gpu, node, pub),
        "capacity": _capacity({"memory": gpu.memory_bytes}),
    }
    return _consumable(device, pub.gates, gpu.memory_bytes)


def _static_mig_device(gpu: PhysicalGpu, node: NodeGpus, instance: MigInstance, pub: _Publish) -> dict[str, Any]:
    """An existing MIG device: the profile's capacities plus `memorySlice<i>` = 1 for each slice it holds."""
    if gpu.mig is None:
        raise ValueError(f"{gpu.name} ({gpu.product_name}) has MIG instances but no MIG profile table")
    profile = gpu.mig.profile(instance.profile)
    caps: dict[str, int] = dict(profile.capacities())
    caps.update({f"memorySlice{i}": 1 for i in range(instance.start, instance.start + profile.memory_slices)})
    attrs = _mig_attributes(gpu, node, profile.name, pub)
    attrs["uuid"] = {"string": instance.uuid}
    device = {
        "name": mig_device_name(gpu, profile, instance.start, pub.shape),
        "attributes": _sorted(attrs),
        "capacity": _capacity(caps),
    }
    return _consumable(device, pub.gates, caps["memory"])


def counter_set_name(gpu: PhysicalGpu) -> str:
    """`gpu-<minor>-counter-set` (driver GetSharedCounterSetName)."""
    return f"{gpu.name}-counter-set"


# nvmlDeviceArchitecture_t below DEVICE_ARCH_HOPPER, as the driver's architecture attribute names them. An
# architecture NVML does not name (`Unknown`, DEVICE_ARCH_UNKNOWN = 0xFFFFFFFF) compares as newer, as in the driver.
_BEFORE_HOPPER = frozenset({"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace"})


def supports_mig_mode_toggle(gpu: PhysicalGpu) -> bool:
    """Whether `gpu` can turn MIG mode on or off without a GPU reset: Hopper and newer (driver nvlib.go
    `supportsMIGModeToggle`, `arch >= nvml.DEVICE_ARCH_HOPPER`)."""
    return gpu.architecture not in _BEFORE_HOPPER


def _dynamic_mig_capable(gpu: PhysicalGpu, shape: DriverShape) -> bool:
    """Whether DynamicMIG announces `gpu`'s partitions (driver nvlib.go `isDynamicMIGCapable`, 0.4 and later):
    MIG-capable, and Hopper or newer, or an Ampere GPU whose MIG mode is already on. 25.12 asked MIG capability
    only. (A vGPU guest is never capable; gpudra models no vGPU guest.)"""
    if not gpu.mig_capable or gpu.mig is None or not gpu.mig.profiles:
        return False
    return not shape.dynamic_mig_needs_mode_toggle or supports_mig_mode_toggle(gpu) or gpu.mig_enabled


def _dynamic_devices(
    gpu: PhysicalGpu, node: NodeGpus, pub: _Publish, index: DeviceIndex
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(counter set or None, devices) of one GPU with DynamicMIG (driver nvlib.go `GetPerGpuAllocatableDevices`,
    partitions.go). A GPU that is not DynamicMIG-capable is its whole GPU, without a counter set: on 0.4 and later,
    an Ampere GPU with MIG off (it cannot enable MIG without a GPU reset)."""
    if not _dynamic_mig_capable(gpu, pub.shape):
        index[gpu.name] = SliceDevice(gpu.index)
        return None, [_full_gpu_device(gpu, node, pub)]
    geometry = gpu.mig
    assert geometry is not None  # _dynamic_mig_capable
    maxcap = geometry.max_capacities()
    slices = geometry.memory_slices
    set_name = counter_set_name(gpu)
    counter_set = {"name": set_name, "counters": _counters(maxcap, 0, slices)}
    devices: list[dict[str, Any]] = []
    # Ampere cannot leave MIG mode without a GPU reset: with MIG on, only the partitions are announced (0.4 and
    # later: `if !gpuInfo.migEnabled || supportsMIGModeToggle(d)` around the full GPU).
    if not (pub.shape.dynamic_mig_needs_mode_toggle and gpu.mig_enabled and not supports_mig_mode_toggle(gpu)):
        index[gpu.name] = SliceDevice(gpu.index)
        devices.append(
            {
                "name": gpu.name,
                "attributes": _gpu_attributes(gpu, node, pub),
                "capacity": _capacity(maxcap),
                "consumesCounters": [{"counterSet": set_name, "counters": _counters(maxcap, 0, slices)}],
            }
        )
    for profile in geometry.profiles:
        for start in profile.starts:
            name = mig_device_name(gpu, profile, start, pub.shape)
            index[name] = SliceDevice(gpu.index, profile, start)
            devices.append(
                {
                    "name": name,
                    "attributes": _sorted(_mig_attributes(gpu, node, profile.name, pub)),
                    "capacity": _capacity(profile.capacities()),
                    "consumesCounters": [
                        {
                            "counterSet": set_name,
                            "counters": _counters(profile.capacities(), start, profile.memory_slices),
                        }
                    ],
                }
            )
    return counter_set, sorted(devices, key=lambda d: d["name"])


def _static_devices(gpu: PhysicalGpu, node: NodeGpus, pub: _Publish, index: DeviceIndex) -> list[dict[str, Any]]:
    if gpu.mig_enabled:
        devices = [_static_mig_device(gpu, node, inst, pub) for inst in gpu.mig_instances]
        for inst, device in zip(gpu.mig_instances, devices, strict=True):
            assert gpu.mig is not None  # _static_mig_device raised otherwise
            index[device["name"]] = SliceDevice(gpu.index, gpu.mig.profile(inst.profile), inst.start)
        return devices
    index[gpu.name] = SliceDevice(gpu.index)
    return [_full_gpu_device(gpu, node, pub)]


def _string_attr(device: Mapping[str, Any], name: str) -> str:
    value = (device.get("attributes") or {}).get(name) or {}
    return str(value.get("string", ""))


def _first_slice(names: Iterable[str], prefix: str) -> int | None:
    found = [int(n[len(prefix) :]) for n in names if n.startswith(prefix) and n[len(prefix) :].isdigit()]
    return min(found) if found else None


def index_devices(slices: Iterable[Mapping[str, Any]], model: GPUModel) -> DeviceIndex:
    """The device index of ResourceSlices as the NVIDIA driver publishes them (read from a real cluster): GPUs are
    numbered in PCI bus order (as the driver walks them), a MIG device's GPU is its `parentUUID`, its profile the
    `profile` attribute and its start the first memory slice it holds (`memorySlice<i>` capacity for an existing
    MIG device, `memory-slice-<i>` counters for a DynamicMIG one). Raises `InputError` naming a device it cannot
    place."""
    devices = [d for item in slices for d in ((item.get("spec") or {}).get("devices") or [])]
    buses: dict[str, str] = {}
    for device in devices:
        uuid = _string_attr(device, "uuid") if _string_attr(device, "type") == "gpu" else ""
        uuid = uuid or _string_attr(device, "parentUUID")
        if uuid:
            bus = _string_attr(device, PCI_BUS_ID_ATTRIBUTE) or _string_attr(device, "pcieBusID")  # 25.8
            buses[uuid] = min(buses.get(uuid, bus), bus)
    order = {uuid: i for i, uuid in enumerate(sorted(buses, key=lambda u: (buses[u], u)))}
    index: DeviceIndex = {}
    for device in devices:
        name = str(device.get("name", ""))
        kind = _string_attr(device, "type")
        if kind == "gpu":
            index[name] = SliceDevice(order[_string_attr(device, "uuid")])
            continue
        if kind != "mig":
            continue  # not a GPU device (vfio, IMEX channels): not the simulator's
        parent = _string_attr(device, "parentUUID")
        if parent not in order or model.mig is None:
            raise InputError(f"MIG device {name}: no parent GPU or no MIG geometry for {model.key}")
        profile = model.mig.profile(_string_attr(device, "profile"))
        start = _first_slice(device.get("capacity") or {}, "memorySlice")
        if start is None:
            counters = [k for use in device.get("consumesCounters") or [] for k in (use.get("counters") or {})]
            start = _first_slice(counters, "memory-slice-")
        if start is None:
            raise InputError(f"MIG device {name}: no memory slice says where it starts")
        index[name] = SliceDevice(order[parent], profile, start)
    return index


# -- VFIO (PassthroughSupport) -------------------------------------------------------------------------
def vfio_device_uuid(pci_bus_id: str) -> str:
    """The driver's VFIO device UUID: `uuid.NewSHA1(uuid.NameSpaceDNS, <PCI address>)` (nvlib.go getVfioDeviceInfo)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, pci_bus_id))


def _vfio_facts(gpu: PhysicalGpu, node: NodeGpus) -> VfioFacts:
    facts = gpu.vfio or VfioFacts()
    missing = facts.missing()
    if missing:
        raise ValueError(
            f"{node.node_name}: {gpu.name} ({gpu.pci_bus_id}) has no recorded {', '.join(missing)} for its VFIO "
            "device (read from sysfs by `gpudra inventory`; a catalog-built node does not know them)"
        )
    return facts


def vfio_device(gpu: PhysicalGpu, node: NodeGpus, index: int) -> dict[str, Any]:
    """The driver's `gpu-vfio-<index>` device for `gpu` (`VfioDeviceInfo.GetDevice`, main / v0.4.0): `index` is the
    GPU's position among the node's NVIDIA GPU PCI functions in address order (nvpci GetGPUs). Raises ValueError
    naming the facts `gpu.vfio` lacks."""
    facts = _vfio_facts(gpu, node)
    assert facts.vendor_id is not None and facts.device_id is not None and facts.numa_node is not None
    assert facts.addressable_memory_bytes is not None and facts.iommu_fd is not None
    attrs: dict[str, dict[str, Any]] = {
        "type": {"string": "vfio"},
        "uuid": {"string": vfio_device_uuid(gpu.pci_bus_id)},
        "deviceID": {"string": f"0x{facts.device_id:04x}"},
        "vendorID": {"string": f"0x{facts.vendor_id:04x}"},
        "numa": {"int": facts.numa_node},
        "productName": {"string": facts.device_name},
        "iommuFDEnabled": {"bool": facts.iommu_fd},
        PCI_BUS_ID_ATTRIBUTE: {"string": gpu.pci_bus_id},
    }
    if gpu.pcie_root:
        attrs[PCIE_ROOT_ATTRIBUTE] = {"string": gpu.pcie_root}
    return {
        "name": f"gpu-vfio-{index}",
        "attributes": _sorted(attrs),
        "capacity": _capacity({"addressableMemory": facts.addressable_memory_bytes}),
    }


def _vfio_devices(gpus: Sequence[PhysicalGpu], node: NodeGpus, mig_mode: MigMode) -> list[dict[str, Any]]:
    """One VFIO device per GPU without MIG devices (`vfioEnabled = len(migdevs) == 0`); a GPU with static MIG
    devices gets none, but keeps its index in the PCI order."""
    missing = [
        f"{g.name}: {', '.join((g.vfio or VfioFacts()).missing())}" for g in gpus if (g.vfio or VfioFacts()).missing()
    ]
    if missing:
        raise ValueError(
            f"{node.node_name}: passthrough needs the sysfs facts of each GPU's VFIO device, not recorded for "
            + "; ".join(missing)
            + " (record the node with `gpudra inventory`; the catalog cannot know PCI names or BAR sizes)"
        )
    return [
        vfio_device(gpu, node, i)
        for i, gpu in enumerate(gpus)
        if not (mig_mode == "static" and gpu.mig_enabled and gpu.mig_instances)
    ]


# -- slices ---------------------------------------------------------------------------------------------
def _chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)] or [[]]


def node_resource_slices(
    node: NodeGpus,
    *,
    mig_mode: MigMode = "static",
    k8s_version: str = "1.35",
    generation: int = 1,
    driver_release: str = DEFAULT_DRIVER_RELEASE,
    gpudra_attributes: bool = False,
    passthrough: bool = False,
    driver_gates: DriverGates | None = None,
) -> list[dict[str, Any]]:
    """The ResourceSlices driver release `driver_release` publishes for `node` (pool = node name), as dicts.

    `k8s_version` picks the DynamicMIG slice layout (< 1.35 combined, >= 1.35 split). Where the driver would
    break a limit (more than 8 GPUs' counter sets in one 1.35 slice, more than 64 devices with counters) the
    sets and devices are spread over more slices; for up to 8 GPUs the output is the driver's.
    `gpudra_attributes` adds gpudra's `gpu.gpudra.io/nvlinkGroup` to whole GPUs (the driver publishes none).
    `passthrough` is the driver's PassthroughSupport gate: a `gpu-vfio-<i>` device beside each GPU without MIG
    devices (25.12 line only; not with DynamicMIG; needs every GPU's recorded `PhysicalGpu.vfio` facts)."""
    return indexed_node_slices(
        node,
        mig_mode=mig_mode,
        k8s_version=k8s_version,
        generation=generation,
        driver_release=driver_release,
        gpudra_attributes=gpudra_attributes,
        passthrough=passthrough,
        driver_gates=driver_gates,
    ).slices


def indexed_node_slices(
    node: NodeGpus,
    *,
    mig_mode: MigMode = "static",
    k8s_version: str = "1.35",
    generation: int = 1,
    driver_release: str = DEFAULT_DRIVER_RELEASE,
    gpudra_attributes: bool = False,
    passthrough: bool = False,
    driver_gates: DriverGates | None = None,
) -> IndexedSlices:
    """`node_resource_slices`, with each device's GPU index, MIG profile and start by device name (VFIO devices
    are not indexed: like `index_devices`, the index holds GPU and MIG devices only)."""
    index: DeviceIndex = {}
    split = parse_k8s_version(k8s_version) >= (1, 35)
    pub = _publish(node, driver_release, gpudra_attributes, driver_gates)
    gpus = sorted(node.gpus, key=lambda g: g.pci_bus_id)  # the driver walks GPUs by PCI bus id
    if passthrough:
        if not pub.shape.vfio:
            raise ValueError(
                f"passthrough: NVIDIA DRA driver {pub.shape.release} publishes no VFIO devices: "
                f"{pub.shape.no_vfio_reason} (use driver release 0.4)"
            )
        if mig_mode == "dynamic":
            raise ValueError(
                "passthrough: the driver's PassthroughSupport and DynamicMIG feature gates are mutually exclusive "
                "(pkg/featuregates); use mig_mode 'static' or 'none'"
            )
    specs: list[dict[str, Any]] = []
    if mig_mode in ("none", "static"):
        devices: list[dict[str, Any]] = []
        for gpu in gpus:
            if mig_mode == "none":
                index[gpu.name] = SliceDevice(gpu.index)
                devices.append(_full_gpu_device(gpu, node, pub))
            else:
                devices.extend(_static_devices(gpu, node, pub, index))
        if passthrough:
            devices.extend(_vfio_devices(gpus, node, mig_mode))
        devices.sort(key=lambda d: d["name"])
        specs = [{"devices": chunk} for chunk in _chunks(devices, MAX_DEVICES)]
    elif mig_mode == "dynamic":
        if not pub.shape.dynamic_mig:
            raise ValueError(f"DynamicMIG is not published by NVIDIA DRA driver {pub.shape.release} (25.12 or later)")
        per_gpu = [_dynamic_devices(gpu, node, pub, index) for gpu in gpus]
        if split and _splits_slices(gpus, pub.shape):
            sets = [cs for cs, _ in per_gpu if cs is not None]
            # 0.4 and later emit the counter slice first even when it holds no set (every Ampere GPU with MIG off)
            if sets or pub.shape.dynamic_mig_needs_mode_toggle:
                specs.extend({"sharedCounters": c} if c else {} for c in _chunks(sets, MAX_COUNTER_SETS_PER_SLICE_135))
            for _, devices in per_gpu:
                specs.extend({"devices": c} for c in _chunks(devices, MAX_DEVICES_WITH_COUNTERS_135))
        else:
            for cs, devices in per_gpu:
                spec: dict[str, Any] = {"devices": devices}
                if cs is not None:
                    spec["sharedCounters"] = [cs]
                specs.append(spec)
    else:
        raise ValueError(f"mig_mode must be one of none, static, dynamic (got {mig_mode!r})")
    slices = [_slice(node.node_name, j, spec, generation, len(specs)) for j, spec in enumerate(specs)]
    return IndexedSlices(slices, index)


def _splits_slices(gpus: Sequence[PhysicalGpu], shape: DriverShape) -> bool:
    """Whether the driver uses the 1.35 split layout on a 1.35 cluster: 0.4 and later only on a node with a
    MIG-capable GPU (driver.go `NewDriver`: `state.IsMigCapable()`, else the combined layout); 25.12 always."""
    return not shape.dynamic_mig_needs_mode_toggle or any(gpu.mig_capable for gpu in gpus)


def _slice(node_name: str, j: int, spec: dict[str, Any], generation: int, count: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "nodeName": node_name,
        "pool": {"name": node_name, "generation": generation, "resourceSliceCount": count},
    }
    body.update(spec)
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        # The kubelet plugin uses generateName `<node>-<driver>-`; gpudra numbers the slices instead.
        "metadata": {"name": f"{node_name}-{DRIVER}-{j}"},
        "spec": body,
    }


def device_classes(api_version: str = API_VERSION, *, vfio: bool = False) -> list[dict[str, Any]]:
    """The DeviceClasses the NVIDIA chart creates for GPUs (deviceclass-gpu.yaml, deviceclass-mig.yaml), and with
    `vfio=True` also `vfio.gpu.nvidia.com` (deviceclass-vfio-gpu.yaml, for passthrough slices)."""

    def cls(name: str, kind: str) -> dict[str, Any]:
        expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
        if kind == "gpu" and api_version == API_VERSION:
            spec["extendedResourceName"] = "nvidia.com/gpu"
        return {"apiVersion": api_version, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}

    classes = [cls("gpu.nvidia.com", "gpu"), cls("mig.nvidia.com", "mig")]
    if vfio:
        classes.append(cls(VFIO_DEVICE_CLASS, "vfio"))
    return classes


# -- limits ---------------------------------------------------------------------------------------------
def slice_limit_errors(slices: Iterable[Mapping[str, Any]], k8s_version: str = "1.35") -> list[str]:
    """The resource.k8s.io/v1 limits the slices break for `k8s_version` (empty when they are all kept),
    each message naming the slice and field."""
    v135 = parse_k8s_version(k8s_version) >= (1, 35)
    errors: list[str] = []
    pools: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        spec = s["spec"]
        where = s.get("metadata", {}).get("name", "?")
        pools.setdefault(spec["pool"]["name"], []).append(s)
        devices = spec.get("devices") or []
        sets = spec.get("sharedCounters") or []
        with_counters = any(d.get("consumesCounters") or d.get("taints") for d in devices)
        limit = MAX_DEVICES_WITH_COUNTERS_135 if (v135 and with_counters) else MAX_DEVICES
        if len(devices) > limit:
            errors.append(f"{where}: spec.devices: {len(devices)} devices, at most {limit}")
        if v135 and devices and sets:
            errors.append(f"{where}: spec: devices and sharedCounters in one slice (1.35 allows one of them)")
        if v135 and len(sets) > MAX_COUNTER_SETS_PER_SLICE_135:
            errors.append(f"{where}: spec.sharedCounters: {len(sets)} sets, at most {MAX_COUNTER_SETS_PER_SLICE_135}")
        total = sum(len(cs["counters"]) for cs in sets)
        if not v135 and total > MAX_COUNTERS_PER_SLICE_134:
            errors.append(f"{where}: spec.sharedCounters: {total} counters, at most {MAX_COUNTERS_PER_SLICE_134}")
        for k, cs in enumerate(sets):
            if len(cs["counters"]) > MAX_COUNTERS_PER_SET:
                errors.append(f"{where}: spec.sharedCounters[{k}].counters: more than {MAX_COUNTERS_PER_SET}")
        entries = 0
        for i, d in enumerate(devices):
            path = f"{where}: spec.devices[{i}]"
            n_fields = len(d.get("attributes") or {}) + len(d.get("capacity") or {})
            if n_fields > MAX_ATTRIBUTES_AND_CAPACITIES:
                errors.append(f"{path}: {n_fields} attributes and capacities, at most {MAX_ATTRIBUTES_AND_CAPACITIES}")
            for name, attr in (d.get("attributes") or {}).items():
                text = attr.get("string", attr.get("version"))
                if isinstance(text, str) and len(text) > MAX_ATTRIBUTE_STRING:
                    errors.append(f"{path}.attributes[{name}]: longer than {MAX_ATTRIBUTE_STRING} characters")
            consumes = d.get("consumesCounters") or []
            if v135 and len(consumes) > MAX_CONSUMPTIONS_PER_DEVICE_135:
                errors.append(
                    f"{path}.consumesCounters: {len(consumes)} entries, at most {MAX_CONSUMPTIONS_PER_DEVICE_135}"
                )
            per_device = sum(len(c["counters"]) for c in consumes)
            if v135:  # 1.35 counts per consumption, 1.34 per device
                for j, c in enumerate(consumes):
                    if len(c["counters"]) > MAX_COUNTERS_PER_CONSUMPTION:
                        errors.append(
                            f"{path}.consumesCounters[{j}].counters: {len(c['counters'])} counters, "
                            f"at most {MAX_COUNTERS_PER_CONSUMPTION}"
                        )
            elif per_device > MAX_COUNTERS_PER_DEVICE_134:
                errors.append(f"{path}.consumesCounters: {per_device} counters, at most {MAX_COUNTERS_PER_DEVICE_134}")
            entries += per_device
        if not v135 and entries > MAX_DEVICE_COUNTER_ENTRIES_134:
            errors.append(f"{where}: {entries} device counter entries, at most {MAX_DEVICE_COUNTER_ENTRIES_134}")
    for pool, members in sorted(pools.items()):
        generations = {m["spec"]["pool"]["generation"] for m in members}
        counts = {m["spec"]["pool"]["resourceSliceCount"] for m in members}
        if len(generations) == 1 and counts != {len(members)}:
            errors.append(f"pool {pool}: resourceSliceCount {sorted(counts)} but {len(members)} slices")
        names = [d["name"] for m in members for d in m["spec"].get("devices") or []]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            errors.append(f"pool {pool}: device names repeated: {', '.join(dupes)}")
        set_names = [cs["name"] for m in members for cs in m["spec"].get("sharedCounters") or []]
        if v135 and len(set_names) != len(set(set_names)):
            errors.append(f"pool {pool}: counter-set names repeated within the pool")
    return errors


def to_models(objects: Iterable[Mapping[str, Any]]) -> list[K8sModel]:
    """Kubernetes dicts (ResourceSlices, DeviceClasses) as their `dra.model` objects, by `kind`."""
    return [KINDS[str(o["kind"])].from_k8s(dict(o)) for o in objects]


def resource_slices(
    node: NodeGpus,
    *,
    mig_mode: MigMode = "static",
    k8s_version: str = "1.35",
    generation: int = 1,
    driver_release: str = DEFAULT_DRIVER_RELEASE,
    gpudra_attributes: bool = False,
    passthrough: bool = False,
    driver_gates: DriverGates | None = None,
) -> list[ResourceSlice]:
    """`node_resource_slices` as `dra.model.ResourceSlice` objects (`to_k8s()` gives the dicts back)."""
    slices = node_resource_slices(
        node,
        mig_mode=mig_mode,
        k8s_version=k8s_version,
        generation=generation,
        driver_release=driver_release,
        gpudra_attributes=gpudra_attributes,
        passthrough=passthrough,
        driver_gates=driver_gates,
    )
    return [ResourceSlice.from_k8s(s) for s in slices]
