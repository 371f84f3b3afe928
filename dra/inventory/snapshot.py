"""Inventory snapshots: load/save, interpret one into `dra.gpus.NodeGpus`, and build one from the catalog.

A snapshot (schema `gpudra.io/inventory-snapshot/v1`) is the raw record `dra.inventory.nvml.capture` makes.
`node_from_snapshot` is the one interpretation used for live reads and recorded files alike: NVML enums to the
DRA driver's strings, bus ids normalised, MIG profiles and instances, and the NVLink peer map turned into a
topology, and a GPU's recorded `sysfsPci` files into `dra.gpus.VfioFacts` (for passthrough slices).
`snapshot_from_node` writes a catalog-built node in the same raw form (`"source": "catalog"`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dra import gpus
from dra.errors import InputError
from dra.gpus import MigGeometry, MigInstance, MigProfile, NodeGpus, NvlinkTopology, PhysicalGpu, VfioFacts
from dra.inventory.nvml import SCHEMA, InventoryError, _short_bus_id

__all__ = ["SCHEMA", "load_snapshot", "node_from_snapshot", "save_snapshot", "snapshot_from_node"]

# nvmlDeviceArchitecture_t -> go-nvlib GetArchitectureAsString (the driver's `architecture` attribute).
ARCHITECTURES: dict[int, str] = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
# nvmlBrandType_t -> go-nvlib GetBrandAsString (the driver's `brand` attribute).
# NVML_DEVICE_ADDRESSING_MODE_* as go-nvlib's GetAddressingModeAsString names them (the driver's `addressingMode`).
ADDRESSING_MODES: dict[int, str] = {0: "None", 1: "HMM", 2: "ATS"}
BRANDS: dict[int, str] = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NvidiaVApps",
    8: "NvidiaVPC",
    9: "NvidiaVCS",
    10: "NvidiaVWS",
    11: "NvidiaCloudGaming",
    12: "QuadroRTX",
    13: "NvidiaRTX",
    14: "Nvidia",
    15: "GeForceRTX",
    16: "TitanRTX",
}
# GI profile id -> NVML_GPU_INSTANCE_PROFILE_* index, for catalog-built snapshots.
_PROFILE_INDEX = {19: 0, 14: 1, 9: 2, 5: 3, 0: 4, 20: 7, 15: 9}
# The A30 numbers its GI profiles otherwise (1_SLICE 14, 1_SLICE_REV1 21, 2_SLICE 5, 2_SLICE_REV1 6, 4_SLICE 0).
_PROFILE_INDEX_4_SLICES = {14: 0, 5: 1, 0: 3, 21: 7, 6: 8}
NVLINK_DEVICE_GPU = 0
NVLINK_DEVICE_SWITCH = 2
P2P_STATUS_OK = 0
P2P_STATUS_NOT_SUPPORTED = 5


# -- files ----------------------------------------------------------------------------------------------
def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read a snapshot file; raises `InputError` naming the file when it is not one."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"cannot read snapshot: {exc.strerror}", source=source) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", source=source, line=exc.lineno) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"schema must be {SCHEMA!r} (got {got!r})", source=source)
    if not isinstance(data.get("gpus"), list):
        raise InputError("gpus must be a list", source=source)
    return data


def save_snapshot(snapshot: Mapping[str, Any], path: str | Path) -> None:
    """Write a snapshot as indented JSON with sorted keys (stable diffs for committed files)."""
    Path(path).write_text(json.dumps(snapshot, indent=2, sort_keys=True) + "\n")


# -- interpretation -------------------------------------------------------------------------------------
def _cuda_version(value: int | None) -> str:
    """NVML's 13000 -> "13.0" (the driver: major = v/1000, minor = (v%1000)/10)."""
    if value is None:
        return "0.0"
    return f"{value // 1000}.{(value % 1000) // 10}"


def _pcie_root(link: str | None) -> str | None:
    """The first `pci<domain>:<bus>` component of the sysfs device path (deviceattribute.resolvePCIeRoot)."""
    if not link:
        return None
    parts = link.split("/")
    if "devices" in parts:
        after = parts[parts.index("devices") + 1 :]
        if after and re.fullmatch(r"pci[0-9a-f]{4}:[0-9a-f]{2}", after[0]):
            return after[0]
    return None


def _profile_name(record: Mapping[str, Any], product: str) -> str:
    name = str(record.get("name") or "").removeprefix("MIG ").strip()
    if name:
        return name
    model = gpus.find(product)
    if model is not None and model.mig is not None:
        try:
            return model.mig.profile(int(record["id"])).name
        except KeyError:
            pass
    return f"{record['sliceCount']}g.{round(int(record['memorySizeMB']) / 1024)}gb"


def _geometry(product: str, records: list[Mapping[str, Any]]) -> MigGeometry | None:
    profiles = []
    for r in records:
        placements = r.get("placements") or []
        if not placements:
            continue  # the driver skips profiles whose placements NVML does not report
        profiles.append(
            MigProfile(
                name=_profile_name(r, product),
                gi_profile_id=int(r["id"]),
                compute_slices=int(r["sliceCount"]),
                memory_slices=int(placements[0]["size"]),
                starts=tuple(int(p["start"]) for p in placements),
                memory_mib=int(r["memorySizeMB"]),
                max_count=int(r["instanceCount"]),
                multiprocessors=int(r["multiprocessorCount"]),
                copy_engines=int(r["copyEngineCount"]),
                decoders=int(r["decoderCount"]),
                encoders=int(r["encoderCount"]),
                jpeg_engines=int(r["jpegCount"]),
                ofa_engines=int(r["ofaCount"]),
            )
        )
    if not profiles:
        return None
    memory = max(p.starts[-1] + p.memory_slices for p in profiles)
    compute = max(p.compute_slices for p in profiles)
    profiles = [dataclasses.replace(p, gpu_compute_slices=compute) for p in profiles]
    return MigGeometry(product, tuple(profiles), compute_slices=compute, memory_slices=memory)


def _instances(records: list[Mapping[str, Any]], mig: MigGeometry | None) -> tuple[MigInstance, ...]:
    out: dict[int, MigInstance] = {}
    for r in records:
        gi, placement, profile_id = r.get("gpuInstanceId"), r.get("placement"), r.get("profileId")
        if gi is None or placement is None or profile_id is None or mig is None or int(gi) in out:
            continue  # placement unreadable (no permission) or a second CI of the same GI
        out[int(gi)] = MigInstance(int(gi), mig.profile(int(profile_id)).name, int(placement["start"]), r["uuid"])
    return tuple(sorted(out.values(), key=lambda m: m.start))


def _topology(gpus: list[Mapping[str, Any]], p2p: Mapping[str, int | None]) -> NvlinkTopology:
    by_bus = {_short_bus_id(str(g["pciBusId"])): i for i, g in enumerate(gpus)}
    direct: dict[tuple[int, int], int] = defaultdict(int)
    switch_links: dict[int, int] = defaultdict(int)
    for i, g in enumerate(gpus):
        for link in g.get("nvlinks") or []:
            if link.get("state") != 1:
                continue
            kind = link.get("remoteDeviceType")
            peer = by_bus.get(_short_bus_id(str(link.get("remotePciBusId") or "")))
            if kind == NVLINK_DEVICE_SWITCH:
                switch_links[i] += 1
            elif peer is not None and peer != i and kind in (NVLINK_DEVICE_GPU, None):
                direct[(i, peer)] += 1
    triples = [(i, j, c) for (i, j), c in direct.items()]
    on_switch = sorted(switch_links)
    for x, i in enumerate(on_switch):
        for j in on_switch[x + 1 :]:
            status = p2p.get(f"{i}-{j}")
            if status in (P2P_STATUS_OK, None):
                triples.append((i, j, min(switch_links[i], switch_links[j])))
    return NvlinkTopology.from_peer_links(len(gpus), triples, nvswitch=bool(on_switch))


def _addressing_mode(value: Any) -> str | None:
    if value is None:
        return None
    if value not in ADDRESSING_MODES:
        raise ValueError(f"addressingMode {value!r} is not an NVML addressing mode (0, 1 or 2)")
    return ADDRESSING_MODES[value]


def _uint(text: str) -> int:
    """strconv.ParseUint(text, 0, 64) as nvpci calls it, whose error it ignores (0)."""
    try:
        return int(text, 0)
    except ValueError:
        return 0


def _resources(lines: list[str], where: str) -> tuple[tuple[int, int, int], ...]:
    """sysfs `resource` lines as go-nvlib nvpci reads them: exactly three space-separated numbers per line."""
    out = []
    for i, line in enumerate(lines):
        values = line.split(" ")
        if len(values) != 3:
            raise InventoryError(f"{where}: sysfsPci.resource line {i} is not `start end flags`: {line!r}")
        out.append((_uint(values[0]), _uint(values[1]), _uint(values[2])))
    return tuple(out)


def _vfio(record: Mapping[str, Any]) -> VfioFacts | None:
    pci = record.get("sysfsPci")
    if pci is None:
        return None
    where = f"GPU {record.get('index')} ({record.get('pciBusId')})"
    vendor, device = pci.get("vendor"), pci.get("device")
    resource = pci.get("resource")
    numa = record.get("sysfsNumaNode")
    return VfioFacts(
        vendor_id=int(vendor, 0) if vendor is not None else None,
        device_id=int(device, 0) if device is not None else None,
        device_name=pci.get("deviceName"),
        numa_node=int(numa) if numa is not None else None,
        resources=_resources(list(resource), where) if resource is not None else None,
        iommu_fd=pci.get("devIommu"),
    )


def _gpu(record: Mapping[str, Any]) -> PhysicalGpu:
    product = str(record["name"])
    model = gpus.find(product)
    cc = record.get("cudaComputeCapability")
    if cc is not None:
        compute_capability = f"{cc[0]}.{cc[1]}"
    elif model is not None:
        compute_capability = model.compute_capability
    else:
        raise InventoryError(f"GPU {record.get('index')} ({product}): no CUDA compute capability recorded")
    arch = record.get("architecture")
    architecture = ARCHITECTURES.get(int(arch), "Unknown") if arch is not None else "Unknown"
    brand = record.get("brand")
    mig_mode = record.get("migMode")
    mig = _geometry(product, list(record.get("migProfiles") or []))
    if mig is None and record.get("migInstances") and model is not None:
        mig = model.mig  # instances but no profile table read: fall back to the catalog's
    numa = record.get("sysfsNumaNode")
    if numa is None or numa < 0:
        numa = record.get("numaNode")
    return PhysicalGpu(
        index=int(record["index"]),
        minor=int(record["minor"]),
        uuid=str(record["uuid"]),
        product_name=product,
        memory_bytes=int(record["memoryTotal"]),
        architecture=architecture,
        compute_capability=compute_capability,
        pci_bus_id=_short_bus_id(str(record["pciBusId"])),
        brand=BRANDS.get(int(brand), "Unknown") if brand is not None else "Unknown",
        pcie_root=_pcie_root(record.get("sysfsDeviceLink")),
        numa_node=int(numa) if numa is not None and numa >= 0 else None,
        addressing_mode=_addressing_mode(record.get("addressingMode")),
        mig_capable=mig_mode is not None,
        mig_enabled=bool(mig_mode and mig_mode.get("current") == 1),
        mig=mig,
        mig_instances=_instances(list(record.get("migInstances") or []), mig),
        vfio=_vfio(record),
    )


def node_from_snapshot(snapshot: Mapping[str, Any], node_name: str = "") -> NodeGpus:
    """Interpret a snapshot; `node_name` overrides the recorded one. Raises `InventoryError` naming the GPU."""
    gpus = list(snapshot.get("gpus") or [])
    try:
        physical = tuple(_gpu(g) for g in gpus)
    except (KeyError, TypeError, ValueError) as exc:
        raise InventoryError(f"snapshot GPU record is malformed: {exc!r}") from exc
    name = node_name or str(snapshot.get("node") or "")
    if not name:
        raise InventoryError("no node name: the snapshot records none and none was given")
    return NodeGpus(
        node_name=name,
        driver_version=str(snapshot.get("driverVersion") or "0.0.0"),
        cuda_driver_version=_cuda_version(snapshot.get("cudaDriverVersion")),
        gpus=physical,
        topology=_topology(gpus, snapshot.get("p2pNvlink") or {}),
    )


# -- catalog-built snapshots ----------------------------------------------------------------------------
def _long_bus_id(bus_id: str) -> str:
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):08X}:{rest.upper()}"


def _switch_bus_id(k: int) -> str:
    return f"00000000:{0xC0 + k:02X}:00.0"


def snapshot_from_node(node: NodeGpus, source: str = "catalog") -> dict[str, Any]:
    """The raw snapshot NVML would give for `node` (used to write catalog-built snapshot files)."""
    arch_ids = {v: k for k, v in ARCHITECTURES.items()}
    brand_ids = {v: k for k, v in BRANDS.items()}
    topo = node.topology
    gpus = []
    for g in node.gpus:
        major, minor = (int(x) for x in g.compute_capability.split("."))
        links: list[dict[str, Any]] = []
        if topo.nvswitch and topo.peers(g.index):
            n = max(topo.link_count(g.index, p) for p in topo.peers(g.index))
            links = [_link(k, _switch_bus_id(k % 4), NVLINK_DEVICE_SWITCH) for k in range(n)]
        else:
            for peer in topo.peers(g.index):
                bus = _long_bus_id(node.gpus[peer].pci_bus_id)
                links += [_link(0, bus, NVLINK_DEVICE_GPU) for _ in range(topo.link_count(g.index, peer))]
            links = [{**link, "link": k} for k, link in enumerate(links)]
        gpus.append(
            {
                "index": g.index,
                "minor": g.minor,
                "uuid": g.uuid,
                "name": g.product_name,
                "brand": brand_ids.get(g.brand, 0),
                "architecture": arch_ids.get(g.architecture, 0xFFFFFFFF),
                "cudaComputeCapability": [major, minor],
                "memoryTotal": g.memory_bytes,
                "pciBusId": _long_bus_id(g.pci_bus_id),
                "numaNode": g.numa_node,
                "sysfsNumaNode": g.numa_node if g.numa_node is not None else -1,
                "sysfsDeviceLink": _sysfs_link(g),
                "migMode": {"current": int(g.mig_enabled), "pending": int(g.mig_enabled)} if g.mig_capable else None,
                "migProfiles": _profile_records(g),
                "migInstances": _instance_records(g),
                "nvlinks": links,
            }
        )
        if g.addressing_mode is not None:
            gpus[-1]["addressingMode"] = {v: k for k, v in ADDRESSING_MODES.items()}[g.addressing_mode]
        if g.vfio is not None:
            gpus[-1].update(_vfio_record(g.vfio))
    p2p: dict[str, int | None] = {}
    for i in range(len(node.gpus)):
        for j in range(len(node.gpus)):
            if i != j:
                p2p[f"{i}-{j}"] = P2P_STATUS_OK if topo.link_count(i, j) else P2P_STATUS_NOT_SUPPORTED
    cuda_major, _, cuda_minor = node.cuda_driver_version.partition(".")
    return {
        "schema": SCHEMA,
        "source": source,
        "node": node.node_name,
        "driverVersion": node.driver_version,
        "cudaDriverVersion": int(cuda_major) * 1000 + int(cuda_minor or 0) * 10,
        "nvmlVersion": "",
        "gpus": gpus,
        "p2pNvlink": p2p,
    }


def _vfio_record(facts: VfioFacts) -> dict[str, Any]:
    """A node's recorded VFIO facts back in the raw sysfs form (`sysfsPci`; `numa_node` as `sysfsNumaNode`)."""
    pci: dict[str, Any] = {
        "vendor": f"0x{facts.vendor_id:04x}" if facts.vendor_id is not None else None,
        "device": f"0x{facts.device_id:04x}" if facts.device_id is not None else None,
        "resource": [f"0x{a:016x} 0x{b:016x} 0x{c:016x}" for a, b, c in facts.resources]
        if facts.resources is not None
        else None,
        "deviceName": facts.device_name,
        "devIommu": facts.iommu_fd,
    }
    out: dict[str, Any] = {"sysfsPci": pci}
    if facts.numa_node is not None:
        out["sysfsNumaNode"] = facts.numa_node
    return out


def _link(k: int, bus: str, kind: int) -> dict[str, Any]:
    return {"link": k, "state": 1, "version": 4, "remotePciBusId": bus, "remoteDeviceType": kind}


def _sysfs_link(g: PhysicalGpu) -> str | None:
    if not g.pcie_root:
        return None
    root = g.pcie_root.removeprefix("pci")
    return f"../../../devices/pci{root}/{root}:01.0/{g.pci_bus_id}"


def _profile_records(g: PhysicalGpu) -> list[dict[str, Any]]:
    if g.mig is None:
        return []
    index = _PROFILE_INDEX if g.mig.compute_slices == 7 else _PROFILE_INDEX_4_SLICES
    return [
        {
            "profileIndex": index.get(p.gi_profile_id, p.gi_profile_id),
            "id": p.gi_profile_id,
            "name": f"MIG {p.name}",
            "sliceCount": p.compute_slices,
            "instanceCount": p.max_count,
            "multiprocessorCount": p.multiprocessors,
            "copyEngineCount": p.copy_engines,
            "decoderCount": p.decoders,
            "encoderCount": p.encoders,
            "jpegCount": p.jpeg_engines,
            "ofaCount": p.ofa_engines,
            "memorySizeMB": p.memory_mib,
            "placements": [{"start": s, "size": p.memory_slices} for s in p.starts],
        }
        for p in sorted(g.mig.profiles, key=lambda p: index.get(p.gi_profile_id, p.gi_profile_id))
    ]


def _instance_records(g: PhysicalGpu) -> list[dict[str, Any]]:
    if g.mig is None:
        return []
    out = []
    for inst in g.mig_instances:
        p = g.mig.profile(inst.profile)
        out.append(
            {
                "uuid": inst.uuid,
                "name": f"{g.product_name} MIG {p.name}",
                "gpuInstanceId": inst.gi_id,
                "computeInstanceId": 0,
                "profileId": p.gi_profile_id,
                "placement": {"start": inst.start, "size": p.memory_slices},
                "memoryTotal": p.memory_bytes,
            }
        )
    return out
