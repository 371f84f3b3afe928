"""NVIDIA mig-parted configs: parse one strictly, and apply a named config to a node's GPUs as mig-parted would.

The format is mig-parted's `api/spec/v1` (also the GPU Operator's `default-mig-parted-config` ConfigMap, whose
config name a node selects with the label `nvidia.com/mig.config=<name>`)::

    version: v1
    mig-configs:
      <name>:
        - devices: all | [0, 1, ...]          # required: GPU indices the entry applies to
          device-filter: "0x233010DE" | [...] # optional: PCI device+vendor IDs (subsystem form not supported)
          mig-enabled: true | false           # required
          mig-devices: {"1g.10gb": 7}         # profile -> count; required when mig-enabled, empty otherwise

As in mig-parted, entries are walked in order and each applies to every GPU its filter and `devices` match (a later
entry wins for a GPU two entries match); GPUs no entry matches keep their current state; an index beyond the
node's GPUs matches nothing. Stricter than mig-parted: unknown keys anywhere, duplicate keys, a `device-filter`
that YAML read as a number, and a profile the GPU does not offer are errors naming the file, line, config and entry.

Placements follow what mig-parted and NVML do. mig-parted flattens `mig-devices` into one list sorted by compute
slices (largest first; then `+me` first; gpudra breaks the remaining tie, which mig-parted leaves to Go's map order,
by more memory slices first) and creates the GPU instances in that order with `nvmlDeviceCreateGpuInstance`, which
takes no placement: NVML gives each new instance the **highest** valid start whose memory slices are free (what
public `nvidia-smi mig -lgi` captures show: one 3g.40gb lands at 4:4, a second at 0:4; a lone 1g at 6:1; a 3g after
a 1g at 0:4). When an ordering fails, mig-parted retries the next distinct permutation of the list; so do we. The
rule is inferred from those captures, not read from NVML's (closed) source.

GI ids count 1, 2, ... in creation order and MIG UUIDs are uuid5 of (node, GPU, GI id) like `synthetic_node`'s:
NVML's real ids depend on the slot and history, so both are synthetic. PCI device IDs are not in the GPU catalog:
`PCI_DEVICE_IDS` holds the ones NVIDIA sources give per catalog model (a GPU of another model cannot be matched by
a `device-filter`, and that is an error rather than a silent skip).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from dra.errors import InputError, UnknownName
from dra.gpus import catalog
from dra.gpus.devices import MigInstance, NodeGpus, PhysicalGpu, mig_uuid
from dra.gpus.mig import MigGeometry, MigProfile, Placement
from dra.yamlio import load_yaml

__all__ = [
    "DeviceId",
    "MIG_CONFIG_LABEL",
    "MigPartedConfig",
    "MigPartedEntry",
    "NVIDIA_VENDOR_ID",
    "PCI_DEVICE_IDS",
    "apply_mig_config",
    "gpu_device_id",
    "load_mig_parted",
    "mig_layouts",
    "nvml_placements",
    "parse_mig_parted",
]

VERSION = "v1"
NVIDIA_VENDOR_ID = 0x10DE
MIG_CONFIG_LABEL = "nvidia.com/mig.config"  # the GPU Operator's node label naming the config to apply

# PCI device IDs (the high 16 bits of NVML's pciDeviceId; vendor 0x10DE) per catalog key. Sources: NVIDIA go-nvml's
# pkg/nvml/mock/gpus (A100 SXM4/PCIe 40GB and 80GB, H100 80GB HBM3) and the comments beside the device filters of
# mig-parted's deployments/systemd/config-default.yaml (H100 PCIe 0x2331 in its H100-80GB list, H100 NVL 0x2321,
# H200 0x2335 - go-nvml's H200 mock says 0x2333 -, B200 0x2901 - go-nvml's B200 mock says 0x2B00). The A100 PCIe
# 40GB also ships as 0x20B1; the catalog holds one ID per model, 0x20F1 as go-nvml's mock has it.
PCI_DEVICE_IDS: dict[str, int] = {
    "A100-SXM4-40GB": 0x20B0,
    "A100-PCIE-40GB": 0x20F1,
    "A100-SXM4-80GB": 0x20B2,
    "A100-PCIE-80GB": 0x20B5,
    "A30-24GB": 0x20B7,  # mig-parted's default config: "# A30-24GB / device-filter: 0x20B710DE"
    "H100-SXM5-80GB": 0x2330,
    "H100-PCIE-80GB": 0x2331,
    "H100-NVL-94GB": 0x2321,
    "H200-SXM5-141GB": 0x2335,
    "B200-SXM6-180GB": 0x2901,
}

# go-nvlib's MIG profile format: [<C>c.]<G>g.<M>gb[+attr[,attr]] (AssertValidMigProfileFormat).
_ATTR = r"[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?"
_PROFILE = re.compile(rf"(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<m>\d+)gb(?P<attrs>[+-]{_ATTR}(?:,{_ATTR})*)?")


# -- the format ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeviceId:
    """A `device-filter` value: PCI device and vendor ID, as mig-parted's `NewDeviceIDFromString` reads it."""

    device: int
    vendor: int

    @classmethod
    def parse(cls, text: str) -> DeviceId:
        """`0x233010DE` (device 0x2330, vendor 0x10DE); ValueError saying why otherwise."""
        if ":" in text:
            raise ValueError(f"{text!r}: PCI subsystem filters are not supported (gpudra knows no subsystem IDs)")
        try:
            raw = int(text, 0)
        except ValueError:
            raise ValueError(f'{text!r} is not a PCI ID like "0x233010DE"') from None
        if not 0 <= raw <= 0xFFFFFFFF:
            raise ValueError(f"{text!r} is not a 32-bit PCI device+vendor ID")
        return cls(raw >> 16, raw & 0xFFFF)

    def __str__(self) -> str:
        return f"0x{self.device:04X}{self.vendor:04X}"


@dataclass(frozen=True)
class MigPartedEntry:
    """One entry of a named config: which GPUs, MIG on or off, and the MIG devices (profile, count) in file order."""

    config: str
    index: int
    devices: Literal["all"] | tuple[int, ...]
    mig_enabled: bool
    mig_devices: tuple[tuple[str, int], ...] = ()
    device_filter: tuple[DeviceId, ...] = ()
    source: str = ""
    line: int | None = None

    @property
    def where(self) -> str:
        return f"mig-configs.{self.config}[{self.index}]"

    def matches(self, gpu_index: int, device_id: DeviceId | None) -> bool:
        """mig-parted's MatchesDeviceFilter and MatchesDevices; ValueError when a filter needs an unknown ID."""
        if self.device_filter:
            if device_id is None:
                raise ValueError("the GPU's PCI device ID is unknown, so its device-filter cannot be evaluated")
            if device_id not in self.device_filter:
                return False
        return self.devices == "all" or gpu_index in self.devices

    def error(self, message: str) -> InputError:
        return InputError(f"{self.where}: {message}", source=self.source, line=self.line)


@dataclass(frozen=True)
class MigPartedConfig:
    """A parsed mig-parted file: config name -> its entries."""

    configs: Mapping[str, tuple[MigPartedEntry, ...]]
    source: str = ""

    def names(self) -> list[str]:
        return sorted(self.configs)

    def entries(self, name: str) -> tuple[MigPartedEntry, ...]:
        """The entries of config `name`; `UnknownName` naming the configs there are."""
        if name not in self.configs:
            raise UnknownName(f"no mig-config {name!r} (configs: {', '.join(self.names())})", source=self.source)
        return self.configs[name]


# -- parsing --------------------------------------------------------------------------------------------------------
class _Map(dict[Any, Any]):
    """A YAML mapping that remembers its line and each key's line."""

    line: int = 0
    key_lines: dict[Any, int]


class _Seq(list[Any]):
    """A YAML sequence that remembers each item's line."""

    line: int = 0
    item_lines: list[int]


def _load_yaml(text: str, source: str) -> Any:
    """The one document of `text` as dra.yamlio reads every input (duplicate keys, aliases and size bounded), its
    mappings and sequences knowing their lines."""
    documents = list(load_yaml(text, source))
    if len(documents) > 1:
        raise InputError(
            "invalid YAML: expected a single document in the stream",
            source=source,
            line=documents[1][1].start_mark.line + 1,
        )
    if not documents:
        return None
    data, node = documents[0]
    try:
        return _with_lines(data, node)
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", source=source) from None


def _with_lines(data: Any, node: yaml.Node) -> Any:
    """`data` with each mapping a `_Map` and each sequence a `_Seq`, lines taken from `node` (the node it was
    constructed from: yamlio's mappings keep the node's key order, merge keys flattened, and refuse duplicates)."""
    if isinstance(data, dict) and isinstance(node, yaml.MappingNode):
        mapping = _Map()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for (key, value), (key_node, value_node) in zip(data.items(), node.value, strict=True):
            mapping[key] = _with_lines(value, value_node)
            mapping.key_lines[key] = key_node.start_mark.line + 1
        return mapping
    if isinstance(data, list) and isinstance(node, yaml.SequenceNode):
        sequence = _Seq(_with_lines(item, child) for item, child in zip(data, node.value, strict=True))
        sequence.line = node.start_mark.line + 1
        sequence.item_lines = [child.start_mark.line + 1 for child in node.value]
        return sequence
    return data


def _line(container: Any, key: Any, default: int | None) -> int | None:
    if isinstance(container, _Map):
        return container.key_lines.get(key, default)
    if isinstance(container, _Seq) and isinstance(key, int) and key < len(container.item_lines):
        return container.item_lines[key]
    return default


def parse_mig_parted(text: str, source: str = "<string>") -> MigPartedConfig:
    """A mig-parted config file's text (or a GPU Operator ConfigMap holding one), checked strictly."""
    data = _load_yaml(text, source)
    if isinstance(data, dict) and data.get("kind") == "ConfigMap":
        return _from_config_map(data, source)
    return _spec(data, source)


def load_mig_parted(path: str | Path) -> MigPartedConfig:
    """Read and parse a mig-parted config file; `InputError` naming the file otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read mig-parted config: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", source=str(path)) from None
    return parse_mig_parted(text, str(path))


def _from_config_map(data: dict[str, Any], source: str) -> MigPartedConfig:
    """The GPU Operator's ConfigMap: `data` holds the config text under one key (`config.yaml` in the default)."""
    texts = data.get("data")
    if not isinstance(texts, dict) or not texts:
        raise InputError("a ConfigMap with a mig-parted config needs a non-empty data map", source=source)
    key = "config.yaml" if "config.yaml" in texts else next(iter(texts)) if len(texts) == 1 else None
    if key is None or not isinstance(texts[key], str):
        raise InputError(
            f"ConfigMap data must hold the config under config.yaml (keys: {sorted(texts)})", source=source
        )
    # Lines inside the embedded text are counted from its own first line.
    return _spec(_load_yaml(texts[key], f"{source} (data.{key})"), f"{source} (data.{key})")


def _spec(data: Any, source: str) -> MigPartedConfig:
    def fail(message: str, line: int | None = None) -> InputError:
        return InputError(message, source=source, line=line)

    if not isinstance(data, dict):
        raise fail(f"a mig-parted config must be a mapping (got {type(data).__name__})", 1)
    unknown = sorted(str(k) for k in data if k not in ("version", "mig-configs"))
    if unknown:
        raise fail(f"unexpected field {unknown[0]!r} (a mig-parted v1 config has version and mig-configs)",
                   _line(data, unknown[0], 1))  # fmt: skip
    if data.get("version") != VERSION:
        raise fail(f"version must be {VERSION!r} (got {data.get('version')!r})", _line(data, "version", 1))
    configs = data.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise fail("mig-configs must be a non-empty mapping of config name -> entries", _line(data, "mig-configs", 1))
    parsed: dict[str, tuple[MigPartedEntry, ...]] = {}
    for name, entries in configs.items():
        line = _line(configs, name, None)
        if not isinstance(name, str):
            raise fail(f"mig-configs: config name {name!r} must be a string", line)
        if not isinstance(entries, list) or not entries:
            raise fail(f"mig-configs.{name}: at least one entry is required", line)
        parsed[name] = tuple(_entry(entry, name, i, source, _line(entries, i, line)) for i, entry in enumerate(entries))
    return MigPartedConfig(parsed, source)


def _entry(data: Any, config: str, index: int, source: str, line: int | None) -> MigPartedEntry:
    where = f"mig-configs.{config}[{index}]"

    def fail(message: str, key: str | None = None) -> InputError:
        return InputError(f"{where}: {message}", source=source, line=_line(data, key, line) if key else line)

    if not isinstance(data, dict):
        raise fail(f"an entry must be a mapping (got {type(data).__name__})")
    allowed = ("device-filter", "devices", "mig-enabled", "mig-devices")
    for key in data:
        if key not in allowed:
            raise fail(f"unexpected field {key!r} (allowed: {', '.join(allowed)})", key)
    for key in ("devices", "mig-enabled"):
        if key not in data:
            raise fail(f"missing required field {key!r}")
    devices_value = data["devices"]
    devices: Literal["all"] | tuple[int, ...]
    if devices_value == "all":
        devices = "all"
    elif isinstance(devices_value, list) and all(type(d) is int and d >= 0 for d in devices_value):
        devices = tuple(devices_value)
    else:
        raise fail(f"devices must be 'all' or a list of GPU indices (got {devices_value!r})", "devices")
    enabled = data["mig-enabled"]
    if not isinstance(enabled, bool):
        raise fail(f"mig-enabled must be true or false (got {enabled!r})", "mig-enabled")
    filters: tuple[DeviceId, ...] = ()
    if "device-filter" in data:
        raw = data["device-filter"]
        values = raw if isinstance(raw, list) else [raw]
        if not all(isinstance(v, str) for v in values):
            raise fail(f"device-filter must be a string or a list of strings like \"0x233010DE\" (got {raw!r}; "
                       "quote the IDs: YAML reads an unquoted 0x... as a number)", "device-filter")  # fmt: skip
        try:
            filters = tuple(DeviceId.parse(v) for v in values if v)
        except ValueError as exc:
            raise fail(f"device-filter: {exc}", "device-filter") from None
    mig_devices: tuple[tuple[str, int], ...] = ()
    if "mig-devices" in data:
        raw_devices = data["mig-devices"]
        if raw_devices is None:
            raw_devices = {}
        if not isinstance(raw_devices, dict):
            raise fail(f"mig-devices must map profile -> count (got {raw_devices!r})", "mig-devices")
        items = []
        for profile, count in raw_devices.items():
            if not isinstance(profile, str) or not _PROFILE.fullmatch(profile):
                raise fail(f"mig-devices: {profile!r} is not a MIG profile like '1g.10gb' or '1g.10gb+me'",
                           "mig-devices")  # fmt: skip
            if type(count) is not int or count < 0:
                raise fail(f"mig-devices: count of {profile} must be an integer >= 0 (got {count!r})", "mig-devices")
            items.append((profile, count))
        if items and not any(count for _, count in items):
            raise fail("mig-devices: all counts are 0", "mig-devices")
        mig_devices = tuple(items)
    elif enabled:
        raise fail("missing required field 'mig-devices' when 'mig-enabled' is true")
    if not enabled and any(count for _, count in mig_devices):
        raise fail("MIG devices included when 'mig-enabled' is false", "mig-devices")
    return MigPartedEntry(config, index, devices, enabled, mig_devices, filters, source, line)


# -- placement ------------------------------------------------------------------------------------------------------
def _profile(geometry: MigGeometry, name: str) -> MigProfile:
    """A config's profile name on `geometry`: `3c.3g.40gb` is `3g.40gb`; smaller compute instances are refused."""
    match = _PROFILE.fullmatch(name)
    if match is None:
        raise UnknownName(f"{name!r} is not a MIG profile")
    if match["c"] is not None and match["c"] != match["g"]:
        raise UnknownName(
            f"{name}: compute-instance profiles smaller than their GPU instance are not modelled (use "
            f"{match['g']}g.{match['m']}gb{match['attrs'] or ''})"
        )
    bare = f"{match['g']}g.{match['m']}gb{match['attrs'] or ''}"
    return geometry.profile(bare)


def _creation_order(profiles: Sequence[MigProfile]) -> list[MigProfile]:
    """mig-parted's `MigConfig.Flatten` order: compute slices descending, `+me` first; then more memory slices."""
    return sorted(profiles, key=lambda p: (-p.compute_slices, not p.media_extensions, -p.memory_slices, p.name))


def _orderings(items: list[MigProfile]) -> Iterator[list[MigProfile]]:
    """mig-parted's `iteratePermutationsUntilSuccess`: distinct permutations by in-place swaps, the given one first."""
    order = list(items)

    def walk(i: int) -> Iterator[list[MigProfile]]:
        if i >= len(order):
            yield list(order)
            return
        for j in range(i, len(order)):
            if all(order[k].name != order[j].name for k in range(i, j)):
                order[i], order[j] = order[j], order[i]
                yield from walk(i + 1)
                order[i], order[j] = order[j], order[i]

    return walk(0)


def _mask(start: int, size: int) -> int:
    return ((1 << size) - 1) << start


def _create(geometry: MigGeometry, order: Sequence[MigProfile]) -> tuple[list[Placement], MigProfile | None]:
    """Create in order, each at its highest free valid start (NVML without a placement); the first misfit or None."""
    placed: list[Placement] = []
    used = 0
    for prof in order:
        for start in sorted(prof.starts, reverse=True):
            bits = _mask(start, prof.memory_slices)
            if start + prof.memory_slices <= geometry.memory_slices and not used & bits:
                placed.append(Placement(start, prof))
                used |= bits
                break
        else:
            return placed, prof
    return placed, None


def _slices(r: range) -> str:
    return str(r.start) if len(r) == 1 else f"{r.start}-{r.stop - 1}"


def _misfit(geometry: MigGeometry, placed: Sequence[Placement], prof: MigProfile) -> str:
    owners = ", ".join(f"{pl} (memory slices {_slices(pl.memory_slices)})" for pl in sorted(placed))
    free = sorted(set(range(geometry.memory_slices)) - {s for pl in placed for s in pl.memory_slices})
    starts = ", ".join(str(s) for s in prof.starts)
    return (
        f"no start of {prof.name} (valid starts {starts}; it takes {prof.memory_slices} memory slice(s)) is free after "
        f"{owners}; free memory slices: {', '.join(map(str, free)) or 'none'}"
    )


def nvml_placements(geometry: MigGeometry, mig_devices: Sequence[tuple[str, int]]) -> tuple[Placement, ...]:
    """The GPU instances mig-parted creates for `mig_devices` (profile, count) on one GPU, sorted by start.

    Raises `UnknownName` for a profile the GPU does not offer and `ValueError` when the profiles cannot coexist,
    saying why (instance counts, compute slices, media extensions, or the memory slices in the way)."""
    return tuple(sorted(_created(geometry, mig_devices)))


def _created(geometry: MigGeometry, mig_devices: Sequence[tuple[str, int]]) -> list[Placement]:
    """`nvml_placements` in creation order (the ordering of mig-parted's that succeeded)."""
    profiles = [_profile(geometry, name) for name, count in mig_devices for _ in range(count)]
    counts = Counter(p.name for p in profiles)
    problems = [f"{n} x {name}, at most {geometry.profile(name).max_count}" for name, n in sorted(counts.items())
                if n > geometry.profile(name).max_count]  # fmt: skip
    compute = sum(p.compute_slices for p in profiles)
    if compute > geometry.compute_slices:
        problems.append(f"{compute} compute slices, the GPU has {geometry.compute_slices}")
    media = sum(1 for p in profiles if p.media_extensions)
    if media > 1:
        problems.append(f"{media} media-extension (+me) instances, at most 1")
    if problems:
        raise ValueError(f"cannot be created together on {geometry.name}: " + "; ".join(problems))
    first = _creation_order(profiles)
    if geometry.place(profiles) is not None:  # some layout exists: one of mig-parted's orderings finds it
        for order in _orderings(first):
            placed, misfit = _create(geometry, order)
            if misfit is None:
                assert geometry.is_valid_layout(placed), geometry.layout_errors(placed)
                return placed
    placed, misfit = _create(geometry, first)
    assert misfit is not None
    raise ValueError(f"cannot be placed together on {geometry.name}: " + _misfit(geometry, placed, misfit))


# -- applying a config to a node ------------------------------------------------------------------------------------
def gpu_device_id(gpu: PhysicalGpu) -> DeviceId | None:
    """The GPU's PCI device ID from `PCI_DEVICE_IDS` (by its NVML product name through the catalog), or None."""
    model = catalog.find(gpu.product_name)
    device = None if model is None else PCI_DEVICE_IDS.get(model.key)
    return None if device is None else DeviceId(device, NVIDIA_VENDOR_ID)


def _instances(node: NodeGpus, gpu: PhysicalGpu, created: Sequence[Placement]) -> tuple[MigInstance, ...]:
    """The GPU instances, GI ids 1, 2, ... in creation order, listed by start (as `node_from_snapshot` lists them)."""
    out = [
        MigInstance(gi_id=gi, profile=pl.profile.name, start=pl.start, uuid=mig_uuid(node.node_name, gpu.index, gi))
        for gi, pl in enumerate(created, start=1)
    ]
    return tuple(sorted(out, key=lambda m: m.start))


def apply_mig_config(
    node: NodeGpus,
    config: MigPartedConfig,
    name: str,
    *,
    device_ids: Mapping[int, DeviceId] | None = None,
) -> NodeGpus:
    """`node` after mig-parted applied config `name`: matched GPUs get MIG mode and the instances it would create.

    `device_ids` (GPU index -> PCI ID) overrides `gpu_device_id`. Errors are `InputError`s naming the config file,
    the entry's line, the config and entry index, and the GPU."""
    entries = config.entries(name)
    ids = dict(device_ids or {})
    gpus = list(node.gpus)
    for entry in entries:
        for position, gpu in enumerate(gpus):
            device_id = ids.get(gpu.index) or gpu_device_id(gpu)
            what = f"GPU {gpu.index} ({gpu.product_name})"
            try:
                if not entry.matches(gpu.index, device_id):
                    continue
            except ValueError as exc:
                raise entry.error(f"{what}: {exc} (known: {', '.join(sorted(PCI_DEVICE_IDS))})") from None
            if not entry.mig_enabled:
                gpus[position] = replace(gpu, mig_enabled=False, mig_instances=())
                continue
            if gpu.mig is None or not gpu.mig_capable:
                raise entry.error(f"{what} is not MIG-capable, the entry enables MIG on it")
            try:
                created = _created(gpu.mig, entry.mig_devices)
            except UnknownName as exc:
                raise entry.error(f"{what}: {exc.message}") from None
            except ValueError as exc:
                counts = ", ".join(f"{p}: {n}" for p, n in entry.mig_devices)
                raise entry.error(f"{what}: mig-devices {{{counts}}} {exc}") from None
            gpus[position] = replace(gpu, mig_enabled=True, mig_instances=_instances(node, gpu, created))
    return replace(node, gpus=tuple(gpus))


def mig_layouts(node: NodeGpus) -> dict[int, tuple[Placement, ...]]:
    """GPU index -> the placements of its MIG instances, for the GPUs with MIG mode on."""
    out: dict[int, tuple[Placement, ...]] = {}
    for gpu in node.gpus:
        if gpu.mig_enabled and gpu.mig is not None:
            mig = gpu.mig
            out[gpu.index] = tuple(sorted(Placement(m.start, mig.profile(m.profile)) for m in gpu.mig_instances))
    return out
