"""The score of the `scored` mode: keep whole GPUs and contiguous MIG memory free, keep multi-GPU sets close.

Every device belongs to a *unit*, the physical GPU it lives on: the counter set it consumes (dynamic MIG,
`memory-slice-<i>` counters), its `parentUUID` (static MIG, `memorySlice<i>` capacities) or itself (a full
GPU). A unit has memory slices; a device occupies some of them (a full GPU: all). An allocation is scored
by a tuple compared lexicographically, lower is better:

1. **broken** — units that were entirely free before and are partly used after. Whole free GPUs are what
   large jobs need; breaking one is the costliest kind of fragmentation (FGD, Weng et al., USENIX ATC'23).
2. **fragmentation** — per touched unit, the change of (free slices − longest run of contiguous free
   slices): free memory that the largest MIG profile could no longer use. Filling holes scores negative.
3. **spread** — per claim with several devices, distinct NVLink groups − 1, where the group is gpudra's
   `gpu.gpudra.io/nvlinkGroup`, else `resource.kubernetes.io/pcieRoot`, else the unit.
4. **order** — the sum of the devices' positions in upstream's search order, so ties go the upstream way.

The scored search (`scored.py`) adds what needs the allocation state: a share of a device that allows multiple
allocations counts as broken when nothing had consumed the device before, and a *fit* term (capacity left,
permille) before the order, so shares go to the tightest already-shared device.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from dra.allocator.constraints import lookup_attribute
from dra.allocator.requests import Candidate

__all__ = [
    "NVLINK_GROUP_ATTRIBUTE",
    "PCIE_ROOT_ATTRIBUTE",
    "Footprint",
    "Score",
    "footprint",
    "group_of",
    "score",
    "topology_attribute",
    "unit_delta",
    "unit_usage",
]

NVLINK_GROUP_ATTRIBUTE = "gpu.gpudra.io/nvlinkGroup"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
_COUNTER_SLICE = re.compile(r"^memory-slice-(\d+)$")
_CAPACITY_SLICE = re.compile(r"^(?:.*/)?memorySlice(\d+)$")
_STATIC_MIG_SLICES = 8

Score = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Footprint:
    """Where a device sits: its unit, the unit's slice count, and the slices it occupies."""

    unit: tuple[str, str]
    total: int
    slices: frozenset[int]


def footprint(cand: Candidate) -> Footprint:
    """The device's unit and memory slices (cached on the candidate)."""
    fp: Footprint | None = cand.footprint
    if fp is None:
        fp = cand.footprint = _footprint(cand)
    return fp


def _footprint(cand: Candidate) -> Footprint:
    device = cand.device
    pool = cand.pool.id
    if device.consumes:
        set_name, counters = device.consumes[0]
        names = cand.pool.counter_sets.get(set_name, {})
        total = sum(1 for n in names if _COUNTER_SLICE.match(n))
        if total:
            used = frozenset(int(m.group(1)) for n, _ in counters if (m := _COUNTER_SLICE.match(n)))
            return Footprint((pool, "set:" + set_name), total, used)
        return Footprint((pool, "set:" + set_name), 1, frozenset((0,)))
    parent = lookup_attribute(device, cand.slice.driver, f"{cand.slice.driver}/parentUUID")
    if parent is not None and not parent.is_list:
        used = frozenset(int(m.group(1)) for n in device.capacity if (m := _CAPACITY_SLICE.match(n)))
        if used:
            return Footprint((pool, f"uuid:{parent.value}"), _STATIC_MIG_SLICES, used)
        return Footprint((pool, f"uuid:{parent.value}"), 1, frozenset((0,)))
    uuid = lookup_attribute(device, cand.slice.driver, f"{cand.slice.driver}/uuid")
    key = f"uuid:{uuid.value}" if uuid is not None and not uuid.is_list else f"device:{device.name}"
    return Footprint((pool, key), 1, frozenset((0,)))


def group_of(cand: Candidate) -> str:
    """The device's NVLink group, else its PCIe root, else its unit (cached on the candidate)."""
    if cand.group is None:
        cand.group = topology_attribute(cand) or "unit=" + "/".join(footprint(cand).unit)
    return cand.group


def topology_attribute(cand: Candidate) -> str | None:
    """`name=value` of the NVLink group or PCIe root attribute, None when the device has neither."""
    for name in (NVLINK_GROUP_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE):
        attr = lookup_attribute(cand.device, cand.slice.driver, name)
        if attr is not None and not attr.is_list:
            return f"{name}={attr.value}"
    return None


@lru_cache(maxsize=65536)
def _waste(total: int, used: frozenset[int]) -> int:
    """Free slices outside the longest contiguous free run."""
    free = total - len(used)
    best = run = 0
    for i in range(total):
        run = 0 if i in used else run + 1
        best = max(best, run)
    return free - best


def unit_usage(cands: Iterable[Candidate]) -> dict[tuple[str, str], tuple[int, frozenset[int]]]:
    usage: dict[tuple[str, str], tuple[int, frozenset[int]]] = {}
    for cand in cands:
        fp = footprint(cand)
        total, used = usage.get(fp.unit, (fp.total, frozenset()))
        usage[fp.unit] = (total, used | fp.slices)
    return usage


def unit_delta(
    before: dict[tuple[str, str], tuple[int, frozenset[int]]], picks: Iterable[Footprint]
) -> tuple[int, int]:
    """(broken, fragmentation change) of adding `picks` to the units' `before` usage."""
    after: dict[tuple[str, str], tuple[int, frozenset[int]]] = {}
    for fp in picks:
        total, used = after.get(fp.unit) or before.get(fp.unit, (fp.total, frozenset()))
        after[fp.unit] = (total, used | fp.slices)
    broken = frag = 0
    for unit, (total, used) in after.items():
        old = before.get(unit, (total, frozenset()))[1]
        if not old and len(used) < total:
            broken += 1
        frag += _waste(total, used) - _waste(total, old)
    return broken, frag


def score(before: dict[tuple[str, str], tuple[int, frozenset[int]]], claims: list[list[Candidate]]) -> Score:
    """The score of a complete allocation (`claims[i]`: the devices chosen for claim i)."""
    picks = [footprint(c) for chosen in claims for c in chosen]
    broken, frag = unit_delta(before, picks)
    spread = sum(max(0, len({group_of(c) for c in chosen}) - 1) for chosen in claims if len(chosen) > 1)
    order = sum(c.index for chosen in claims for c in chosen)
    return broken, frag, spread, order
