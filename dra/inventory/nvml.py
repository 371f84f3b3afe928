"""Read this node's GPUs through pynvml into a snapshot dict: strictly read-only (`nvmlDeviceGet*`/`nvmlSystemGet*`).

Nothing here changes a GPU setting, the MIG mode or a partition: the only calls are queries, plus `nvmlInit` and
`nvmlShutdown`. The snapshot records what NVML (and sysfs, for the PCIe root and NUMA node the DRA driver reads
there) returned, raw: enums as integers, bus ids as NVML prints them. `dra.inventory.snapshot` interprets it.
Where sysfs has them, each GPU also gets `sysfsPci`: the PCI `vendor`, `device` and `resource` files as written
there, the PCI ID database's name for the device and whether `/dev/iommu` exists -- what the driver's VFIO
(passthrough) device is built from (go-nvlib nvpci, `checkIommuFDEnabled`); all read-only.
The NVML module is a parameter so tests can pass a double of the pynvml functions.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dra.errors import GpudraError

__all__ = ["InventoryError", "NvmlUnavailable", "PCI_IDS_PATHS", "capture", "pci_device_name"]

SCHEMA = "gpudra.io/inventory-snapshot/v1"
# Where go-nvlib's pciids looks for the PCI ID database, in order (before its embedded copy, which gpudra lacks).
PCI_IDS_PATHS: tuple[Path, ...] = (
    Path("/usr/share/misc/pci.ids"),
    Path("/usr/local/share/pci.ids"),
    Path("/usr/share/hwdata/pci.ids"),
    Path("/usr/share/pci.ids"),
)
# go-nvlib nvpci's name for a device the database does not list.
UNKNOWN_DEVICE = "UNKNOWN_DEVICE"


class InventoryError(GpudraError):
    """NVML answered something the inventory cannot use, or a snapshot is malformed."""


class NvmlUnavailable(InventoryError):
    """No NVIDIA driver, no NVML library or no GPU on this machine."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pci_ids_names(text: str, vendor_id: int) -> dict[int, str]:
    """Device id -> name of one vendor in a pci.ids text, parsed as go-nvlib pciids does (names trimmed)."""
    names: dict[int, str] = {}
    current: int | None = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line[0] in "0123456789abcdef":
            current = int(line[:4], 16)
            if current == vendor_id:
                names = {}  # a repeated vendor entry replaces the earlier one
        elif line.startswith("C"):
            current = None
        elif current == vendor_id and line.startswith("\t") and not line.startswith("\t\t"):
            entry = line.strip()
            names[int(entry[:4], 16)] = entry[4:].strip()
    return names


def pci_device_name(vendor_id: int, device_id: int, paths: Sequence[Path] = PCI_IDS_PATHS) -> str | None:
    """The PCI ID database's name for a device, from the first database in `paths` that can be read (nvpci's
    `DeviceName`): `UNKNOWN_DEVICE` when it does not list the device, None when no database is there."""
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        return _pci_ids_names(text, vendor_id).get(device_id, UNKNOWN_DEVICE)
    return None


class _Reader:
    def __init__(self, nvml: Any, sysfs: Path, dev: Path, pci_ids: Sequence[Path]) -> None:
        self.nvml = nvml
        self.sysfs = sysfs
        self.dev = dev
        self.pci_ids = tuple(pci_ids)

    def optional(self, fn: str, *args: Any) -> Any:
        """Call an NVML query; None when this GPU or driver does not support it (or the symbol is missing)."""
        func = getattr(self.nvml, fn, None)
        if func is None:
            return None
        try:
            return func(*args)
        except self.nvml.NVMLError:
            return None

    def sysfs_link(self, bus_id: str) -> str | None:
        try:
            return os.readlink(self.sysfs / "bus" / "pci" / "devices" / bus_id)
        except OSError:
            return None

    def sysfs_numa(self, bus_id: str) -> int | None:
        try:
            return int((self.sysfs / "bus" / "pci" / "devices" / bus_id / "numa_node").read_text().strip())
        except (OSError, ValueError):
            return None

    def sysfs_pci(self, bus_id: str) -> dict[str, Any] | None:
        """The PCI function's `vendor`, `device` and `resource` files (raw), its PCI ID database name and whether
        /dev/iommu exists; None when sysfs has no such files for it."""
        base = self.sysfs / "bus" / "pci" / "devices" / bus_id
        try:
            vendor = (base / "vendor").read_text().strip()
            device = (base / "device").read_text().strip()
            resource = (base / "resource").read_text().strip().splitlines()
        except OSError:
            return None
        try:
            name = pci_device_name(int(vendor, 0), int(device, 0), self.pci_ids)
        except ValueError:
            name = None
        return {
            "vendor": vendor,
            "device": device,
            "resource": resource,
            "deviceName": name,
            "devIommu": (self.dev / "iommu").exists(),
        }

    def mig_profiles(self, handle: Any) -> list[dict[str, Any]]:
        nv = self.nvml
        out = []
        for index in range(int(getattr(nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0))):
            info = self.optional("nvmlDeviceGetGpuInstanceProfileInfo", handle, index)
            if info is None:  # drivers before the V (v2) entry point: the v1 struct, which has no name
                info = self.optional("nvmlDeviceGetGpuInstanceProfileInfo", handle, index, 1)
            if info is None:
                continue
            out.append(
                {
                    "profileIndex": index,
                    "id": int(info.id),
                    "name": _text(getattr(info, "name", b"")),
                    "sliceCount": int(info.sliceCount),
                    "instanceCount": int(info.instanceCount),
                    "multiprocessorCount": int(info.multiprocessorCount),
                    "copyEngineCount": int(info.copyEngineCount),
                    "decoderCount": int(info.decoderCount),
                    "encoderCount": int(info.encoderCount),
                    "jpegCount": int(info.jpegCount),
                    "ofaCount": int(info.ofaCount),
                    "memorySizeMB": int(info.memorySizeMB),
                    "placements": self.placements(handle, int(info.id)),
                }
            )
        return out

    def placements(self, handle: Any, profile_id: int) -> list[dict[str, int]] | None:
        # pynvml exposes only the raw C signature here: ask for the count first, then fill an array.
        nv = self.nvml
        count = ctypes.c_uint(0)
        try:
            nv.nvmlDeviceGetGpuInstancePossiblePlacements(handle, profile_id, None, ctypes.byref(count))
            array = (nv.c_nvmlGpuInstancePlacement_t * max(count.value, 1))()
            nv.nvmlDeviceGetGpuInstancePossiblePlacements(handle, profile_id, array, ctypes.byref(count))
        except (nv.NVMLError, AttributeError):
            return None
        return [{"start": int(array[i].start), "size": int(array[i].size)} for i in range(count.value)]

    def mig_instances(self, handle: Any) -> list[dict[str, Any]]:
        out = []
        for i in range(int(self.optional("nvmlDeviceGetMaxMigDeviceCount", handle) or 0)):
            mig = self.optional("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
            if mig is None:
                continue
            gi_id = self.optional("nvmlDeviceGetGpuInstanceId", mig)
            entry: dict[str, Any] = {
                "uuid": _text(self.optional("nvmlDeviceGetUUID", mig) or ""),
                "name": _text(self.optional("nvmlDeviceGetName", mig) or ""),
                "gpuInstanceId": gi_id,
                "computeInstanceId": self.optional("nvmlDeviceGetComputeInstanceId", mig),
                "profileId": None,
                "placement": None,
            }
            memory = self.optional("nvmlDeviceGetMemoryInfo", mig)
            entry["memoryTotal"] = int(memory.total) if memory is not None else None
            gi = self.optional("nvmlDeviceGetGpuInstanceById", handle, gi_id) if gi_id is not None else None
            info = self.optional("nvmlGpuInstanceGetInfo", gi) if gi is not None else None
            if info is not None:
                entry["profileId"] = int(info.profileId)
                entry["placement"] = {"start": int(info.placement.start), "size": int(info.placement.size)}
            out.append(entry)
        return out

    def nvlinks(self, handle: Any) -> list[dict[str, Any]]:
        nv = self.nvml
        out = []
        for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", 0))):
            state = self.optional("nvmlDeviceGetNvLinkState", handle, link)
            if state is None:
                continue  # unused links raise NotSupported or InvalidArgument
            remote = self.optional("nvmlDeviceGetNvLinkRemotePciInfo", handle, link) if state else None
            out.append(
                {
                    "link": link,
                    "state": int(state),
                    "version": self.optional("nvmlDeviceGetNvLinkVersion", handle, link) if state else None,
                    "remotePciBusId": _text(remote.busId) if remote is not None else None,
                    "remoteDeviceType": self.optional("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
                    if state
                    else None,
                }
            )
        return out

    def addressing_mode(self, handle: Any) -> int | None:
        """`nvmlDeviceGetAddressingMode` (0 none, 1 HMM, 2 ATS); None where the platform or driver lacks it."""
        mode = self.optional("nvmlDeviceGetAddressingMode", handle)
        if mode is None:
            return None
        return int(getattr(mode, "value", mode))

    def gpu(self, index: int, handle: Any) -> dict[str, Any]:
        nv = self.nvml
        pci = nv.nvmlDeviceGetPciInfo(handle)
        bus_id = _text(pci.busId)
        short = _short_bus_id(bus_id)
        memory = nv.nvmlDeviceGetMemoryInfo(handle)
        cc = self.optional("nvmlDeviceGetCudaComputeCapability", handle)
        mig_mode = self.optional("nvmlDeviceGetMigMode", handle)
        record: dict[str, Any] = {
            "index": index,
            "minor": int(nv.nvmlDeviceGetMinorNumber(handle)),
            "uuid": _text(nv.nvmlDeviceGetUUID(handle)),
            "name": _text(nv.nvmlDeviceGetName(handle)),
            "brand": self.optional("nvmlDeviceGetBrand", handle),
            "architecture": self.optional("nvmlDeviceGetArchitecture", handle),
            "cudaComputeCapability": [int(cc[0]), int(cc[1])] if cc is not None else None,
            "memoryTotal": int(memory.total),
            "pciBusId": bus_id,
            "numaNode": self.optional("nvmlDeviceGetNumaNodeId", handle),
            "sysfsNumaNode": self.sysfs_numa(short),
            "sysfsDeviceLink": self.sysfs_link(short),
            "migMode": {"current": int(mig_mode[0]), "pending": int(mig_mode[1])} if mig_mode is not None else None,
            "migProfiles": [],
            "migInstances": [],
            "nvlinks": self.nvlinks(handle),
        }
        addressing = self.addressing_mode(handle)
        if addressing is not None:  # only coherent-memory platforms answer (GH200, GB200)
            record["addressingMode"] = addressing
        pci_facts = self.sysfs_pci(short)
        if pci_facts is not None:
            record["sysfsPci"] = pci_facts
        if mig_mode is not None:
            record["migProfiles"] = self.mig_profiles(handle)
            if mig_mode[0] == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1):
                record["migInstances"] = self.mig_instances(handle)
        return record


def _short_bus_id(bus_id: str) -> str:
    """NVML's `00000000:18:00.0` -> `0000:18:00.0`, lower case (go-nvlib GetPCIBusID, sysfs naming)."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}" if rest else bus_id.lower()


def capture(
    nvml: Any | None = None,
    *,
    sysfs: Path = Path("/sys"),
    node_name: str = "",
    dev: Path = Path("/dev"),
    pci_ids: Sequence[Path] = PCI_IDS_PATHS,
) -> dict[str, Any]:
    """Read every GPU of this machine into a snapshot dict (schema `gpudra.io/inventory-snapshot/v1`).
    `sysfs`, `dev` and `pci_ids` locate /sys, /dev and the PCI ID databases (tests point them at fakes).

    Raises `NvmlUnavailable` with a readable message when NVML cannot start (no driver, no library, no GPU)."""
    if nvml is None:
        try:
            import pynvml as nvml_module
        except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a dependency
            raise NvmlUnavailable("the pynvml module (nvidia-ml-py) is not installed") from exc
        nvml = nvml_module
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML could not start: {exc} (is the NVIDIA driver installed and loaded?)") from exc
    try:
        reader = _Reader(nvml, sysfs, dev, pci_ids)
        count = int(nvml.nvmlDeviceGetCount())
        if count == 0:
            raise NvmlUnavailable("NVML found no GPU on this machine")
        cuda = reader.optional("nvmlSystemGetCudaDriverVersion")
        gpus = [reader.gpu(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        p2p: dict[str, int | None] = {}
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        nvlink_index = int(getattr(nvml, "NVML_P2P_CAPS_INDEX_NVLINK", 2))  # an int; _READ is a tuple in pynvml
        for i in range(count):
            for j in range(count):
                if i != j:
                    p2p[f"{i}-{j}"] = reader.optional("nvmlDeviceGetP2PStatus", handles[i], handles[j], nvlink_index)
        return {
            "schema": SCHEMA,
            "source": "nvml",
            "node": node_name,
            "driverVersion": _text(nvml.nvmlSystemGetDriverVersion()),
            "cudaDriverVersion": int(cuda) if cuda is not None else None,
            "nvmlVersion": _text(reader.optional("nvmlSystemGetNVMLVersion") or ""),
            "gpus": gpus,
            "p2pNvlink": p2p,
        }
    except nvml.NVMLError as exc:
        raise InventoryError(f"NVML query failed: {exc}") from exc
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
