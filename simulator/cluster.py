"""Cluster specs: node pools from a YAML file, the openb node CSV, or a ResourceSlice dump.

YAML (`kind: SimCluster` optional):

    name: demo
    device_plugin: {drain_seconds: 600, min_layout_age: 3600, drain_max_pods: 4}   # optional MIG drain knobs
    pools:
      - name: hgx
        count: 4
        gpu: H100-SXM5-80GB        # a dra.gpus catalog key, NVML product name or alias (or an openb trace label)
        gpus: 8                    # GPUs per node
        cpu: 192                   # cores (or cpu_milli:)
        memory: 2048Gi             # quantity (or memory_mib:)
        mig: dynamic               # none | dynamic | [static layout per GPU, e.g. [3g.40gb, 3g.40gb]]
        # or, instead of mig: a named config of an NVIDIA mig-parted file (the GPU Operator's ConfigMap format;
        # `name` is what the node label nvidia.com/mig.config selects), file relative to this spec; the simulator
        # models one layout per node, so the config must give every GPU the same instances
        mig_config: {file: mig-parted.yaml, name: all-balanced}
        sharing: true              # default false: the pool's driver (0.5) runs its ConsumableShares gate, whole
                                   # GPUs and static MIG devices shareable (DRA consumable capacity, memory mode)

Every problem (unknown GPU model, impossible MIG layout, bad field) raises `TraceError` with the file and
line of the pool that has it.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import yaml

from dra import gpus
from dra.errors import InputError, QuantityError, TraceError, UnknownName
from dra.gpus import DriverGates, GPUModel, MigProfile, Placement, apply_mig_config, load_mig_parted, mig_layouts
from dra.quantity import Quantity

from .driver import CONSUMABLE_SHARES

__all__ = [
    "OPENB_GPU_MODEL_MAP",
    "ClusterSpec",
    "Layout",
    "NodeSpec",
    "default_cluster",
    "cluster_from_spec",
    "mig_profile",
    "mig_parted_layout",
    "mig_profiles",
    "nvlink_groups",
    "place_layout",
    "read_openb_nodes",
    "resolve_gpu",
]

Layout = tuple[Placement, ...]  # a static MIG layout of one GPU, sorted by start

# The openb trace names its newest GPUs G1/G2/G3 without saying what they are; this default guess maps
# them to catalog models, and `gpu_model_map` overrides it.
OPENB_GPU_MODEL_MAP: dict[str, str] = {
    "G1": "A100-SXM4-40GB",
    "G2": "A100-SXM4-80GB",
    "G3": "H100-SXM5-80GB",
}


# Names the simulator has always read as the openb trace's models (with their pinned figures), besides the labels.
_TRACE_ALIASES = {"V100-SXM2-16GB": "V100M16", "V100-SXM2-32GB": "V100M32", "TESLA-T4": "T4", "L40S-48GB": "L40S"}


def resolve_gpu(name: str) -> GPUModel:
    """The GPU model `name` names: the openb trace's own models for its labels (`dra.gpus.trace_model`, their
    figures pinned for the FGD comparison), else the catalog's (keys, NVML product names, aliases).

    Raises `InputError` naming the model and the known keys."""
    key = _TRACE_ALIASES.get(name.strip().upper(), name)
    model = gpus.trace_model(key) or gpus.find(key)
    if model is None:
        known = sorted({m.key for m in (*gpus.trace_models(), *gpus.all_models())})
        raise InputError(f"unknown GPU model {name!r} (known: {', '.join(known)}; NVML product names are accepted too)")
    return model


def mig_profiles(gpu: GPUModel | None) -> tuple[MigProfile, ...]:
    """The MIG profiles the simulator places on `gpu`: its geometry's, without the `+me` variants (none: no MIG)."""
    return () if gpu is None or gpu.mig is None else gpu.mig.base_profiles


def mig_profile(gpu: GPUModel, name: str) -> MigProfile:
    """One of `mig_profiles(gpu)` by name; KeyError naming the ones there are."""
    for prof in mig_profiles(gpu):
        if prof.name == name:
            return prof
    names = ", ".join(p.name for p in mig_profiles(gpu)) or "none"
    raise UnknownName(f"GPU {gpu.key} has no MIG profile {name!r} (profiles: {names})")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node as built: resources, GPU type, MIG mode (`none`/`static`/`dynamic`) and static layout."""

    name: str
    pool: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int = 0
    gpu: GPUModel | None = None
    model_label: str = ""  # the model name the trace uses (gpu_spec matches it)
    mig: str = "none"
    layout: Layout = ()  # static: the MIG layout of every GPU
    # The gates NVIDIA DRA driver 0.5 runs with on this node (`simulator.driver`): ConsumableShares publishes whole
    # GPUs and static MIG devices shareable (memory mode), FabricManagerPartitioning 8-GPU NVSwitch partitions
    driver_gates: DriverGates = DriverGates()
    # A node read from a real cluster keeps the ResourceSlices it published (the gpudra strategy allocates on
    # them as they are); `slices_digest` stands for their content in the template (names and UUIDs aside).
    slices: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    slices_digest: str = ""
    # A node read from a real cluster (`simulator.scheduling.state_from_objects`): what kube-scheduler's
    # NodeAffinity and TaintToleration read; (key, value, effect), spec.unschedulable as its NoSchedule taint
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()

    @property
    def sharing(self) -> bool:
        """Whether the node's GPUs are published shareable (its driver runs with ConsumableShares)."""
        return self.driver_gates.shares

    @property
    def template(self) -> tuple[Any, ...]:
        """Nodes with equal templates behave alike when equally loaded (the class index relies on it)."""
        return (
            self.cpu_milli, self.memory_mib, self.gpu_count, self.gpu, self.model_label, self.mig, self.layout,
            self.driver_gates, self.slices_digest, self.labels, self.taints,
        )  # fmt: skip


@dataclass(slots=True)
class ClusterSpec:
    name: str
    nodes: list[NodeSpec]
    source: str = "built-in"
    skipped: dict[str, int] = field(default_factory=dict)
    device_plugin: dict[str, float] = field(default_factory=dict)  # drain_seconds, min_layout_age, drain_max_pods

    @property
    def total_gpus(self) -> int:
        return sum(n.gpu_count for n in self.nodes)

    def with_driver_gates(self, gates: DriverGates) -> ClusterSpec:
        """The same cluster with NVIDIA DRA driver 0.5 running these gates too on every node (`simulator.driver`);
        nodes read from real slices keep what they published."""
        nodes = [
            n if n.slices or not gates.enabled
            else dataclasses.replace(n, driver_gates=DriverGates(n.driver_gates.enabled | gates.enabled))
            for n in self.nodes
        ]  # fmt: skip
        return dataclasses.replace(self, nodes=nodes)

    def summary(self) -> dict[str, Any]:
        models: dict[str, int] = {}
        for node in self.nodes:
            if node.gpu is not None:
                models[node.gpu.key] = models.get(node.gpu.key, 0) + node.gpu_count
        return {
            "name": self.name,
            "source": self.source,
            "nodes": len(self.nodes),
            "gpus": self.total_gpus,
            "gpu_models": dict(sorted(models.items())),
            "shareable_gpus": sum(n.gpu_count for n in self.nodes if n.sharing),
            "skipped": sum(self.skipped.values()),
            "skipped_reasons": dict(self.skipped),
        }


def nvlink_groups(gpu: GPUModel | None, count: int) -> tuple[tuple[int, ...], ...]:
    """GPU index sets connected by NVLink on one node: all (NVSwitch, mesh), pairs, or none (singletons)."""
    if gpu is None or count == 0:
        return ()
    if gpu.nvlink in ("nvswitch", "mesh"):
        return (tuple(range(count)),)
    if gpu.nvlink == "pairs":
        return tuple(tuple(range(i, min(i + 2, count))) for i in range(0, count, 2))
    return tuple((i,) for i in range(count))


def place_layout(gpu: GPUModel, names: list[str]) -> Layout | None:
    """A layout of MIG profiles `names` on one GPU (`MigGeometry.place`), or None when they cannot coexist."""
    if gpu.mig is None:
        return None
    return gpu.mig.place([mig_profile(gpu, n) for n in names])


def mig_parted_layout(value: Any, gpu: GPUModel | None, count: int, pool: str, base: Path) -> tuple[str, Layout]:
    """(mig mode, layout) of a pool whose `mig_config: {file, name}` names a mig-parted config (`InputError`s)."""
    if not isinstance(value, dict) or set(value) != {"file", "name"}:
        raise InputError(f"mig_config takes {{file: PATH, name: CONFIG}} (got {value!r})")
    if gpu is None:
        raise InputError("mig_config on a pool without GPUs")
    path = Path(str(value["file"]))
    config = load_mig_parted(path if path.is_absolute() else base / path)
    node = apply_mig_config(gpus.synthetic_node(gpu, pool, count), config, str(value["name"]))
    layouts = mig_layouts(node)
    if not layouts:
        return "none", ()
    distinct = set(layouts.values())
    if len(layouts) != count or len(distinct) != 1 or not next(iter(distinct)):
        shown = "; ".join(
            f"GPU {i}: " + (" ".join(str(p) for p in layouts[i]) or "MIG on, no instances") if i in layouts
            else f"GPU {i}: MIG off" for i in range(count)
        )  # fmt: skip
        raise InputError(
            f"mig-config {value['name']!r} does not give every GPU the same MIG instances ({shown}); the simulator "
            "models one static layout per node"
        )
    layout = next(iter(distinct))
    if any(p.profile.media_extensions for p in layout):
        raise InputError(f"mig-config {value['name']!r}: the simulator places no media-extension (+me) profiles")
    return "static", layout


def _line_of(node: yaml.Node | None) -> int | None:
    return None if node is None else node.start_mark.line + 1


def cluster_from_spec(data: Any, root: yaml.Node | None, path: Path) -> ClusterSpec:
    """A cluster YAML spec (`pools`, optional `device_plugin`), parsed; `root` locates each pool's line."""
    if not isinstance(data, dict) or not isinstance(data.get("pools"), list):
        raise TraceError("a cluster spec needs a 'pools' list", source=str(path), line=1)
    pool_nodes: list[yaml.Node | None] = [None] * len(data["pools"])
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "pools" and isinstance(value, yaml.SequenceNode):
                pool_nodes = list(value.value)
    nodes: list[NodeSpec] = []
    for index, pool in enumerate(data["pools"]):
        nodes.extend(_pool(pool, index, str(path), _line_of(pool_nodes[index] if index < len(pool_nodes) else None)))
    options = data.get("device_plugin") or {}
    allowed = {"drain_seconds", "min_layout_age", "drain_max_pods"}
    if not isinstance(options, dict) or set(options) - allowed:
        raise TraceError(f"device_plugin: takes {sorted(allowed)} (got {options!r})", source=str(path))
    try:
        knobs = {str(k): float(v) for k, v in options.items()}
    except (TypeError, ValueError) as exc:
        raise TraceError(f"device_plugin: values must be numbers ({exc})", source=str(path)) from exc
    return ClusterSpec(name=str(data.get("name", path.stem)), nodes=nodes, source=str(path), device_plugin=knobs)


def _quantity(pool: dict[str, Any], name: str, default: str | int) -> Fraction:
    """Field `name` of a pool as a Kubernetes quantity; ValueError naming the field."""
    try:
        return Quantity.coerce(pool.get(name, default)).value
    except QuantityError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _pool(pool: Any, index: int, source: str, line: int | None) -> list[NodeSpec]:
    def fail(message: str) -> TraceError:
        return TraceError(f"pools[{index}]: {message}", source=source, line=line)

    if not isinstance(pool, dict):
        raise fail(f"must be a mapping (got {type(pool).__name__})")
    keys = {"name", "count", "gpu", "gpus", "cpu", "cpu_milli", "memory", "memory_mib", "mig", "mig_config", "sharing"}
    unknown = set(pool) - keys
    if unknown:
        raise fail(f"unknown keys {sorted(unknown)}")
    name = str(pool.get("name", f"pool-{index}"))
    try:
        count = int(pool.get("count", 1))
        cpu = int(pool["cpu_milli"]) if "cpu_milli" in pool else int(_quantity(pool, "cpu", 64) * 1000)
        memory = int(pool["memory_mib"]) if "memory_mib" in pool else int(_quantity(pool, "memory", "512Gi") / 2**20)
        gpus = int(pool.get("gpus", 0 if pool.get("gpu") is None else 8))
    except (TypeError, ValueError) as exc:
        raise fail(str(exc)) from exc
    if count < 0 or gpus < 0 or cpu <= 0 or memory <= 0:
        raise fail("count and gpus must be >= 0, cpu and memory > 0")
    gpu: GPUModel | None = None
    if gpus:
        if not pool.get("gpu"):
            raise fail("gpus given without a gpu model")
        try:
            gpu = resolve_gpu(str(pool["gpu"]))
        except InputError as exc:
            raise fail(exc.message) from exc
    mig_value = pool.get("mig", "none")
    mig, layout = "none", cast(Layout, ())
    if "mig_config" in pool:
        if "mig" in pool:
            raise fail("give mig or mig_config, not both")
        try:
            mig, layout = mig_parted_layout(pool["mig_config"], gpu, gpus, name, Path(source).parent)
        except InputError as exc:
            raise fail(str(exc)) from exc
    elif isinstance(mig_value, list):
        if gpu is None or gpu.mig is None:
            raise fail(f"static MIG layout on a GPU without MIG ({pool.get('gpu')})")
        try:
            placed = place_layout(gpu, [str(n) for n in mig_value])
        except KeyError as exc:
            raise fail(str(exc.args[0])) from exc
        if placed is None:
            raise fail(f"impossible MIG layout {mig_value} on {gpu.key} (overlapping memory slices or > 7 compute)")
        mig, layout = "static", placed
    elif mig_value in ("dynamic", "none", None):
        mig = str(mig_value or "none")
        if mig == "dynamic" and (gpu is None or gpu.mig is None):
            raise fail(f"dynamic MIG on a GPU without MIG ({pool.get('gpu')})")
    else:
        raise fail(f"mig must be none, dynamic or a list of profiles (got {mig_value!r})")
    label = gpu.key if gpu else ""
    sharing = pool.get("sharing", False)
    if not isinstance(sharing, bool):
        raise fail(f"sharing must be true or false (got {sharing!r})")
    gates = DriverGates(frozenset({CONSUMABLE_SHARES})) if sharing else DriverGates()
    return [NodeSpec(f"{name}-{i:03d}", name, cpu, memory, gpus, gpu, label, mig, layout, gates) for i in range(count)]


def read_openb_nodes(path: str | Path, *, gpu_model_map: dict[str, str] | None = None) -> ClusterSpec:
    """The openb node CSV (`sn,cpu_milli,memory_mib,gpu,model`); G1/G2/G3 mapped by `gpu_model_map`."""
    mapping = {**OPENB_GPU_MODEL_MAP, **(gpu_model_map or {})}
    path = Path(path)
    nodes: list[NodeSpec] = []
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise TraceError(f"cannot read node list: {exc.strerror}", source=str(path)) from exc
    with handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        need = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
        if any(c not in header for c in need):
            raise TraceError(f"header must have {need} (got {header})", source=str(path), line=1)
        for values in reader:
            line = reader.line_num
            if not values:
                continue
            if len(values) != len(header):
                raise TraceError(f"expected {len(header)} fields, got {len(values)}", source=str(path), line=line)
            row = dict(zip(header, values, strict=True))
            try:
                cpu, mem, gpus = int(row["cpu_milli"]), int(row["memory_mib"]), int(row["gpu"] or 0)
            except ValueError as exc:
                raise TraceError(
                    f"cpu_milli, memory_mib and gpu must be integers ({exc})", source=str(path), line=line
                ) from None
            label = row["model"].strip()
            gpu = None
            if gpus:
                try:
                    gpu = resolve_gpu(mapping.get(label, label))
                except InputError as exc:
                    raise TraceError(f"{exc.message}; map it with gpu_model_map", source=str(path), line=line) from None
            nodes.append(NodeSpec(row["sn"].strip(), label or "cpu", cpu, mem, gpus, gpu, label))
    return ClusterSpec(name=path.stem, nodes=nodes, source=str(path))


def default_cluster() -> ClusterSpec:
    """The built-in cluster: 80 GPUs in three pools (HGX H100 with dynamic MIG, A100 PCIe static MIG, L40S)."""
    pools = [
        {"name": "hgx-h100", "count": 6, "gpu": "H100-SXM5-80GB", "gpus": 8, "cpu": 192, "memory": "2Ti",
         "mig": "dynamic"},
        {"name": "a100-pcie", "count": 4, "gpu": "A100-PCIE-80GB", "gpus": 4, "cpu": 64, "memory": "512Gi",
         "mig": ["3g.40gb", "2g.20gb", "1g.10gb"]},
        {"name": "l40s", "count": 4, "gpu": "L40S", "gpus": 4, "cpu": 64, "memory": "512Gi"},
    ]  # fmt: skip
    nodes = [n for i, p in enumerate(pools) for n in _pool(p, i, "built-in", None)]
    return ClusterSpec(name="built-in", nodes=nodes, source="built-in")
