"""What the slice generators consume: the physical GPUs of one node, read from NVML or built from the catalog.

`NodeGpus` is the neutral description both paths produce (`dra.inventory` from NVML or a snapshot,
`synthetic_node` from a catalog model), so ResourceSlices come out of one code path. Synthetic nodes get
deterministic UUIDs (seeded by node name and GPU index) and synthetic PCI addresses: PCIe roots of 4 GPUs each
(`pci0000:00` for GPUs 0-3, `pci0000:40` for 4-7, ...), NUMA node 0 for the first half of the GPUs, 1 for the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dra.gpus.catalog import GPUModel
from dra.gpus.mig import MigGeometry, Placement
from dra.gpus.topology import NvlinkKind, NvlinkTopology

__all__ = [
    "MigInstance",
    "NodeGpus",
    "PhysicalGpu",
    "VfioFacts",
    "synthetic_node",
]

# Fixed namespace so that synthetic UUIDs are stable across runs and machines.
_UUID_NAMESPACE = uuid.UUID("6f1d4d53-7f43-4a4e-9d0c-6770756472a1")

DEFAULT_DRIVER_VERSION = "580.95.05"
DEFAULT_CUDA_DRIVER_VERSION = "13.0"


@dataclass(frozen=True)
class MigInstance:
    """An existing GPU instance (static MIG): its GI id, profile, placement start and MIG device UUID."""

    gi_id: int
    profile: str
    start: int
    uuid: str


PciResource = tuple[int, int, int]  # one line of sysfs `resource`: (start, end, flags)

_U64 = (1 << 64) - 1


def _next_power_of_2(n: int) -> int:
    """go-nvlib calcNextPowerOf2 on a uint64 (0 stays 0: the decrement wraps and the increment wraps back)."""
    n = (n - 1) & _U64
    for shift in (1, 2, 4, 8, 16, 32):
        n |= n >> shift
    return (n + 1) & _U64


@dataclass(frozen=True)
class VfioFacts:
    """What the driver's VFIO (passthrough) device needs that NVML and the catalog cannot say, read from sysfs.

    Recorded by `dra.inventory` (`/sys/bus/pci/devices/<bus>/{vendor,device,numa_node,resource}`, the PCI ID
    database, `/dev/iommu`); None marks a fact that was not recorded. Never synthesised from the catalog."""

    vendor_id: int | None = None  # sysfs `vendor` (0x10de)
    device_id: int | None = None  # sysfs `device` (0x20b0)
    device_name: str | None = None  # PCI ID database name ("GA100 [A100 SXM4 40GB]"); None: no database read
    numa_node: int | None = None  # sysfs `numa_node` as written there (-1 where the platform has none)
    resources: tuple[PciResource, ...] | None = None  # sysfs `resource`, every line in order
    iommu_fd: bool | None = None  # /dev/iommu exists (IOMMUFD)

    @property
    def addressable_memory_bytes(self) -> int | None:
        """go-nvlib `GetTotalAddressableMemory(true)`'s 64-bit sum: the first six BARs (non-empty lines), 64-bit
        memory windows summed and rounded up to a power of two (the driver's `addressableMemory`)."""
        if self.resources is None:
            return None
        total = 0
        for count, (key, (start, end, flags)) in enumerate(
            (k, r) for k, r in enumerate(self.resources) if (r[1] - r[0]) & _U64 != 0
        ):
            if key >= 6 or count == 6:
                break
            if flags & 0x06 == 0x04:
                total += ((end - start) & _U64) + 1
        return _next_power_of_2(total & _U64)

    def missing(self) -> list[str]:
        """The facts not recorded, by field name."""
        names = ("vendor_id", "device_id", "device_name", "numa_node", "resources", "iommu_fd")
        return [n for n in names if getattr(self, n) is None]


@dataclass(frozen=True)
class PhysicalGpu:
    """One physical GPU as the DRA driver sees it."""

    index: int  # NVML index (the topology is keyed by it)
    minor: int  # /dev/nvidia<minor>; device names use it
    uuid: str
    product_name: str
    memory_bytes: int
    architecture: str
    compute_capability: str  # "8.0"
    pci_bus_id: str  # "0000:18:00.0" (4-digit domain, lower case, as the driver normalises it)
    brand: str = "Nvidia"
    pcie_root: str | None = None  # "pci0000:15"
    numa_node: int | None = None  # known to gpudra (sysfs); the driver publishes it for VFIO devices only
    addressing_mode: str | None = None  # "HMM" | "ATS" | "None" on coherent-memory systems (NVML), else None
    mig_capable: bool = False
    mig_enabled: bool = False
    mig: MigGeometry | None = None  # the GI profiles this GPU offers (from NVML, or the catalog)
    mig_instances: tuple[MigInstance, ...] = ()
    vfio: VfioFacts | None = None  # sysfs facts for the driver's VFIO device (recorded nodes only)

    @property
    def name(self) -> str:
        return f"gpu-{self.minor}"


@dataclass(frozen=True)
class NodeGpus:
    """The GPUs of one node plus the node-wide driver facts."""

    node_name: str
    driver_version: str  # "580.95.05"
    cuda_driver_version: str  # "13.0"
    gpus: tuple[PhysicalGpu, ...]
    topology: NvlinkTopology = field(default_factory=lambda: NvlinkTopology(0))

    def nvlink_groups(self) -> dict[int, str]:
        """GPU index -> `gpu.gpudra.io/nvlinkGroup` value (GPUs without NVLink are absent)."""
        return self.topology.group_values()


def gpu_uuid(node_name: str, index: int) -> str:
    """The deterministic `GPU-<uuid5>` of GPU `index` on a synthetic node."""
    return "GPU-" + str(uuid.uuid5(_UUID_NAMESPACE, f"{node_name}/gpu/{index}"))


def mig_uuid(node_name: str, index: int, gi_id: int) -> str:
    """The deterministic `MIG-<uuid5>` of GPU instance `gi_id` on GPU `index` of a synthetic node."""
    return "MIG-" + str(uuid.uuid5(_UUID_NAMESPACE, f"{node_name}/gpu/{index}/gi/{gi_id}"))


def synthetic_pci(index: int) -> tuple[str, str]:
    """(PCI bus id, PCIe root) for GPU `index`: 4 GPUs per root, 16 per PCI domain. Synthetic, documented."""
    domain, within = divmod(index, 16)
    root, slot = divmod(within, 4)
    root_bus = 0x40 * root
    return f"{domain:04x}:{root_bus + 0x10 + 0x08 * slot:02x}:00.0", f"pci{domain:04x}:{root_bus:02x}"


def synthetic_node(
    model: GPUModel,
    node_name: str,
    count: int | None = None,
    *,
    mig_layouts: Mapping[int, Sequence[Placement | tuple[str, int]]] | None = None,
    nvlink: NvlinkKind | None = None,
    driver_version: str = DEFAULT_DRIVER_VERSION,
    cuda_driver_version: str = DEFAULT_CUDA_DRIVER_VERSION,
) -> NodeGpus:
    """A node of `count` GPUs of `model` (default: the model's typical count), built from the catalog.

    `mig_layouts` maps a GPU index to the MIG instances it has (static MIG: those GPUs get MIG mode on); each
    layout is checked with `MigGeometry.layout_errors`. `nvlink` overrides the model's NVLink kind."""
    n = model.gpus_per_node if count is None else count
    if n < 0:
        raise ValueError(f"count must be >= 0 (got {n})")
    layouts = dict(mig_layouts or {})
    for index in layouts:
        if not 0 <= index < n:
            raise ValueError(f"mig_layouts names GPU {index}, the node has GPUs 0..{n - 1}")
    if layouts and model.mig is None:
        raise ValueError(f"{model.key} does not support MIG (mig_layouts given for GPUs {sorted(layouts)})")
    gpus = []
    for i in range(n):
        bus, root = synthetic_pci(i)
        instances: tuple[MigInstance, ...] = ()
        if i in layouts:
            assert model.mig is not None
            errors = model.mig.layout_errors(layouts[i])
            if errors:
                raise ValueError(f"MIG layout for GPU {i} of {node_name} is invalid: " + "; ".join(errors))
            placed = sorted(model.mig.resolve(layouts[i]))
            # GI ids are assigned in creation order starting at 1 (NVML's real ids depend on history).
            instances = tuple(
                MigInstance(gi_id=k + 1, profile=pl.profile.name, start=pl.start, uuid=mig_uuid(node_name, i, k + 1))
                for k, pl in enumerate(placed)
            )
        gpus.append(
            PhysicalGpu(
                index=i,
                minor=i,
                uuid=gpu_uuid(node_name, i),
                product_name=model.product_name,
                memory_bytes=model.memory_bytes,
                architecture=model.architecture,
                compute_capability=model.compute_capability,
                pci_bus_id=bus,
                brand=model.brand,
                pcie_root=root,
                numa_node=0 if i < (n + 1) // 2 else 1,
                mig_capable=model.mig is not None,
                mig_enabled=i in layouts,
                mig=model.mig,
                mig_instances=instances,
            )
        )
    topology = NvlinkTopology.build(nvlink or model.nvlink, n, model.nvlink_links)
    return NodeGpus(node_name, driver_version, cuda_driver_version, tuple(gpus), topology)
