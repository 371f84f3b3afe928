"""What each supported release of the NVIDIA DRA driver (k8s-dra-driver-gpu, gpu-kubelet-plugin) publishes.

Read from the driver's source at each tag (`cmd/gpu-kubelet-plugin/deviceinfo.go`, `mig.go`, `partitions.go`,
`nvlib.go`); the attribute *sets* per device type are recorded here so tests can hold every generated slice
to them, and the differences between releases are parameters of the slice generator:

| | 25.8 (v25.8.1) | 25.12 (v25.12.0) | 0.4 (v0.4.0) | 0.5 (v0.5.0, main 95932046) |
|---|---|---|---|---|
| PCI bus id attribute | `pcieBusID` (driver domain) | `resource.kubernetes.io/pciBusID` | as 25.12 | as 25.12 |
| MIG device name | `gpu-<m>-mig-<GI id>-<start>-<size>` | `gpu-<m>-mig-<profile>-<GI id>-<start>` | as 25.12 | same |
| `addressingMode` (coherent systems) | no | when NVML reports one | as 25.12 | as 25.12 |
| DynamicMIG (partitionable devices) | no | yes (feature gate) | yes | yes |
| VFIO passthrough devices | no | none announced (below) | yes (feature gate PassthroughSupport) | yes |
| DynamicMIG on Ampere | - | whole GPU and partitions | MIG on: partitions only; MIG off: the whole GPU only | as 0.4 |
| ConsumableShares, FabricManagerPartitioning | no | no | no | alpha gates (`dra.gpus.driver_gates`) |

The project moved to kubernetes-sigs/dra-driver-nvidia-gpu after 25.12 and restarted its numbering at v0.4.0;
its GPU and MIG devices carry 25.12's attribute and capacity sets.

VFIO devices (`gpu-vfio-<i>`, `VfioDeviceInfo.GetDevice`): the tag v25.12.0 already has the type, the feature gate
and the `vfio.gpu.nvidia.com` DeviceClass, but its kubelet plugin announces none: `enumerateGpuPciDevices`
(nvlib.go at v25.12.0) looks each PCI function's parent GPU up in a map it has just created empty, so every
function is skipped. Commit 3b96cd74 ("Bug fixes for PassthroughSupport feature", in v0.4.0 and main) fixed
that and added `iommuFDEnabled`; `vfio_attributes()` is that published set, which gpudra generates for release
0.4 on request (`passthrough=True`; 25.12 refuses, naming the bug). The compute-domain plugin's devices
(`channel-0`, `daemon-0`) are the same in every release (`dra.gpus.compute_domain`).

DynamicMIG on Ampere (0.4 and later, commit 13882467 "Prevent mig toggle on A100s"): nvlib.go
`isDynamicMIGCapable` lets only Hopper and newer (`supportsMIGModeToggle`: architecture >= Hopper) toggle MIG mode
without a GPU reset; an Ampere GPU with MIG off is not DynamicMIG-capable (its whole GPU, no counter set) and one
with MIG on announces its partitions only (`GetPerGpuAllocatableDevices`).

No release publishes a NUMA node or anything about NVLink for a GPU; what gpudra adds on request is
`GPUDRA_ATTRIBUTES`, in gpudra's own domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dra.gpus.topology import NVLINK_GROUP_ATTRIBUTE

__all__ = [
    "DEFAULT_DRIVER_RELEASE",
    "DRIVER_RELEASES",
    "GPUDRA_ATTRIBUTES",
    "DriverRelease",
    "DriverShape",
    "driver_shape",
]

DriverRelease = Literal["25.8", "25.12", "0.4", "0.5"]
DRIVER_RELEASES: tuple[DriverRelease, ...] = ("25.8", "25.12", "0.4", "0.5")
# the newest release (kubernetes-sigs/dra-driver-nvidia-gpu v0.5.0, 2026-08): what a 2026 cluster runs
DEFAULT_DRIVER_RELEASE: DriverRelease = "0.5"

PCI_BUS_ID_ATTRIBUTE = "resource.kubernetes.io/pciBusID"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"

# What gpudra publishes beyond the driver, only when asked (`gpudra_attributes=True`, `--gpudra-attributes`).
GPUDRA_ATTRIBUTES: tuple[str, ...] = (NVLINK_GROUP_ATTRIBUTE,)

_COMMON = frozenset(
    {"type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion"}
    | {"cudaDriverVersion", PCIE_ROOT_ATTRIBUTE}
)
_MIG_CAPACITIES = frozenset(
    {"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory"}
)


@dataclass(frozen=True, slots=True)
class DriverShape:
    """The published shape of one driver release: attribute names and sets, device naming, features."""

    release: DriverRelease
    pci_bus_id_attribute: str
    mig_name_has_profile: bool
    publishes_addressing_mode: bool
    dynamic_mig: bool
    vfio: bool
    no_vfio_reason: str = ""  # why `passthrough` is refused for this release
    # DynamicMIG announces an Ampere GPU by its MIG mode (isDynamicMIGCapable); 25.12: whole GPU and partitions
    dynamic_mig_needs_mode_toggle: bool = False

    def gpu_attributes(self) -> frozenset[str]:
        """Every attribute a whole GPU may carry (`pcieRoot` and `addressingMode` only when the node has them)."""
        extra = {"addressingMode"} if self.publishes_addressing_mode else set()
        return _COMMON | {self.pci_bus_id_attribute} | extra

    def mig_attributes(self) -> frozenset[str]:
        return self.gpu_attributes() | {"parentUUID", "profile"}

    def vfio_attributes(self) -> frozenset[str]:
        """Every attribute a VFIO device may carry (main / v0.4.0 `VfioDeviceInfo.GetDevice`; `pcieRoot` only when
        resolvable); its one capacity is `addressableMemory`. Empty where the release publishes no VFIO device."""
        if not self.vfio:
            return frozenset()
        return frozenset(
            {"type", "uuid", "deviceID", "vendorID", "numa", "productName", "iommuFDEnabled"}
            | {PCI_BUS_ID_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE}
        )

    @staticmethod
    def mig_capacities() -> frozenset[str]:
        """A MIG device's capacities besides its `memorySlice<i>` entries."""
        return _MIG_CAPACITIES


_SHAPES: dict[str, DriverShape] = {
    "25.8": DriverShape("25.8", "pcieBusID", False, False, False, False, "it has no PassthroughSupport"),
    "25.12": DriverShape(
        "25.12",
        PCI_BUS_ID_ATTRIBUTE,
        True,
        True,
        True,
        False,
        "its kubelet plugin announces no VFIO devices (enumerateGpuPciDevices skips every PCI function; fixed by "
        "commit 3b96cd74 in release 0.4)",
    ),
    "0.4": DriverShape("0.4", PCI_BUS_ID_ATTRIBUTE, True, True, True, True, dynamic_mig_needs_mode_toggle=True),
    # 0.5 publishes 0.4's sets; what it adds is behind its alpha gates (dra.gpus.driver_gates)
    "0.5": DriverShape("0.5", PCI_BUS_ID_ATTRIBUTE, True, True, True, True, dynamic_mig_needs_mode_toggle=True),
}


def driver_shape(release: str) -> DriverShape:
    """The shape of driver `release` (`25.8`, `25.12`, `0.4`; a `v` prefix and patch level are accepted)."""
    key = release.strip().removeprefix("v")
    key = ".".join(key.split(".")[:2])
    try:
        return _SHAPES[key]
    except KeyError:
        supported = ", ".join(DRIVER_RELEASES)
        raise ValueError(f"NVIDIA DRA driver release must be one of {supported} (got {release!r})") from None
