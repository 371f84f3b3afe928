"""Where a cluster comes from: `load_cluster` reads any of a cluster YAML spec, the openb node CSV, a real cluster's
ResourceSlices (`kubectl get resourceslices -o yaml`) or inventory snapshots.

Nodes are grouped by `spec.nodeName`; GPUs are the NVIDIA driver's devices: `type: gpu` whole GPUs, `type: mig`
with a `uuid` (static MIG, its layout read from the `profile` attributes) or with `consumesCounters`
(DynamicMIG: the node is `mig: dynamic`); `allowMultipleAllocations` on a device makes the node's GPUs
shareable. The model comes from `productName` through the GPU catalog.
ResourceSlices carry no CPU or memory: nodes get `cpu_milli`/`memory_mib` defaults, stated in the summary.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from dra.documents import load_documents
from dra.errors import InputError, TraceError
from dra.gpus import DriverGates, GPUModel, index_devices
from dra.yamlio import load_yaml, read_source

from .cluster import ClusterSpec, Layout, NodeSpec, cluster_from_spec, place_layout, read_openb_nodes, resolve_gpu
from .driver import CONSUMABLE_SHARES

__all__ = ["SNAPSHOT_SCHEMA", "cluster_from_slices", "cluster_from_snapshots", "load_cluster", "load_slices"]

SNAPSHOT_SCHEMA = "gpudra.io/inventory-snapshot/v1"

DRIVER = "gpu.nvidia.com"


def load_cluster(path: str | Path, *, gpu_model_map: dict[str, str] | None = None) -> ClusterSpec:
    """A cluster YAML spec, an openb node CSV (`.csv`), a ResourceSlice dump, or inventory snapshot(s) (file/dir)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return read_openb_nodes(path, gpu_model_map=gpu_model_map)
    if path.is_dir():  # a folder of inventory snapshots, one per node
        return cluster_from_snapshots(sorted(path.glob("*.json")))
    try:
        text, _name = read_source(path)
        data, root = next(load_yaml(text, str(path)), (None, None))
    except InputError as exc:
        raise TraceError(f"cannot read cluster spec: {exc.message}", source=str(path), line=exc.line) from exc
    if isinstance(data, dict) and data.get("schema") == "gpudra.io/inventory-snapshot/v1":
        return cluster_from_snapshots([path])
    if (
        isinstance(data, dict)
        and "pools" not in data
        and data.get("kind") in ("ResourceSlice", "List", "ResourceSliceList")
    ):
        return load_slices(path)
    return cluster_from_spec(data, root, path)


def load_slices(path: str | Path, *, cpu_milli: int = 64000, memory_mib: int = 524288) -> ClusterSpec:
    """A ResourceSlice dump file (YAML/JSON, multi-document or List) as a cluster."""
    try:
        docs = load_documents(Path(path))
    except InputError as exc:
        raise TraceError(exc.message, source=exc.source or str(path), line=exc.line) from exc
    return cluster_from_slices(docs, source=str(path), cpu_milli=cpu_milli, memory_mib=memory_mib)


def _attr(device: dict[str, Any], name: str) -> str | None:
    value = (device.get("attributes") or {}).get(name) or {}
    found = value.get("string", value.get("version"))
    return None if found is None else str(found)


_NODE_SPECIFIC = frozenset({"uuid", "parentUUID"})


def _digest(published: tuple[dict[str, Any], ...]) -> str:
    """What of a node's slices the allocator can tell apart from another node's: all but names, UUIDs and pool."""
    if not published:
        return ""
    shapes = []
    for item in published:
        devices = []
        for device in (item.get("spec") or {}).get("devices") or []:
            attrs = {k: v for k, v in (device.get("attributes") or {}).items() if k not in _NODE_SPECIFIC}
            devices.append({**{k: v for k, v in device.items() if k != "name"}, "attributes": attrs})
        spec = {k: v for k, v in (item.get("spec") or {}).items() if k not in ("pool", "nodeName", "devices")}
        shapes.append({"spec": spec, "devices": devices})
    return hashlib.sha256(json.dumps(shapes, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _same_layout(published: tuple[dict[str, Any], ...], gpu: GPUModel, layout: Layout) -> bool:
    """Every GPU of the node published exactly `layout` (profile, start), as the simulated node state has it."""
    try:
        index = index_devices(published, gpu)
    except InputError:
        return False
    per_gpu: dict[int, set[tuple[str, int]]] = {}
    for device in index.values():
        if device.profile is not None:
            per_gpu.setdefault(device.gpu, set()).add((device.profile.name, device.start))
    wanted = {(p.profile.name, p.start) for p in layout}
    return bool(per_gpu) and all(found == wanted for found in per_gpu.values())


def cluster_from_slices(
    data: dict[str, Any] | list[dict[str, Any]],
    *,
    source: str,
    cpu_milli: int = 64000,
    memory_mib: int = 524288,
) -> ClusterSpec:
    objects = (
        data if isinstance(data, list) else data.get("items", [data]) if data.get("kind") != "ResourceSlice" else [data]
    )
    per_node: dict[str, list[dict[str, Any]]] = {}
    node_slices: dict[str, list[dict[str, Any]]] = {}
    skipped: Counter[str] = Counter()
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") != "ResourceSlice" or spec.get("driver") != DRIVER:
            skipped["not an NVIDIA GPU ResourceSlice"] += 1
            continue
        node = spec.get("nodeName") or (spec.get("pool") or {}).get("name")
        if not node:
            skipped["ResourceSlice without nodeName or pool"] += 1
            continue
        per_node.setdefault(str(node), []).extend(spec.get("devices") or [])
        node_slices.setdefault(str(node), []).append(obj)
    nodes: list[NodeSpec] = []
    for name, devices in sorted(per_node.items()):
        product = next((_attr(d, "productName") for d in devices if _attr(d, "productName")), None)
        if product is None:
            skipped["node without GPU devices"] += 1
            continue
        try:
            gpu = resolve_gpu(product)
        except InputError as exc:
            raise TraceError(f"node {name}: {exc.message}", source=source) from None
        whole = {_attr(d, "uuid") or d.get("name") for d in devices if _attr(d, "type") == "gpu"}
        dynamic = any(d.get("consumesCounters") for d in devices if _attr(d, "type") == "mig")
        # shareable devices: the node's driver runs ConsumableShares (its slices, kept below, say how)
        sharing = any(d.get("allowMultipleAllocations") for d in devices)
        gates = DriverGates(frozenset({CONSUMABLE_SHARES})) if sharing else DriverGates()
        static: dict[str, list[str]] = {}
        for d in devices:
            if _attr(d, "type") == "mig" and not d.get("consumesCounters"):
                static.setdefault(_attr(d, "parentUUID") or "?", []).append(_attr(d, "profile") or "")
        published = tuple(node_slices[name])
        layout: Layout = ()
        if dynamic:
            count = len(whole) or len({str(d["name"]).split("-mig-")[0] for d in devices})
            mode = "dynamic"
        else:
            count = len(whole - set(static)) + len(static)
            if static:
                common = Counter(tuple(sorted(p)) for p in static.values()).most_common(1)[0][0]
                if len(static) != count or len({tuple(sorted(p)) for p in static.values()}) > 1:
                    skipped["mixed MIG layouts on one node (most common layout used for all GPUs)"] += 1
                    published = ()  # the simulated layout is not what it published: its slices are generated
                layout = place_layout(gpu, list(common)) or ()
                if layout and published and not _same_layout(published, gpu, layout):
                    published = ()
            mode = "static" if layout else "none"
        nodes.append(
            NodeSpec(
                name,
                "inventory",
                cpu_milli,
                memory_mib,
                count,
                gpu,
                gpu.key,
                mode,
                layout,
                gates,
                published,
                _digest(published),
            )  # fmt: skip
        )
    cluster = ClusterSpec(name=Path(source).stem, nodes=nodes, source=source, skipped=dict(skipped))
    cluster.skipped.update({f"assumed cpu_milli={cpu_milli}, memory_mib={memory_mib} per node": 0})
    return cluster


def cluster_from_snapshots(paths: list[Path], *, cpu_milli: int = 64000, memory_mib: int = 524288) -> ClusterSpec:
    """Inventory snapshots (`gpudra inventory`, one node each) turned into the slices the driver would publish."""
    from dra.gpus import node_resource_slices
    from dra.inventory import InventoryError, load_snapshot, node_from_snapshot

    slices: list[dict[str, Any]] = []
    for path in paths:
        try:
            node = node_from_snapshot(load_snapshot(path))
        except InputError as exc:
            raise TraceError(exc.message, source=exc.source or str(path), line=exc.line) from exc
        except (InventoryError, ValueError) as exc:  # a malformed GPU record, or values of the wrong type
            raise TraceError(str(exc), source=str(path)) from exc
        slices.extend(node_resource_slices(node, mig_mode="static"))
    source = str(paths[0]) if len(paths) == 1 else f"{len(paths)} snapshots"
    return cluster_from_slices(slices, source=source, cpu_milli=cpu_milli, memory_mib=memory_mib)
