"""GPU types as the simulator sees them: memory, NVLink shape and MIG geometry, resolved from `dra.gpus`.

The simulator needs a handful of numbers per GPU model. It takes them from the GPU catalog (`dra.gpus.catalog`)
when the catalog knows the model, and otherwise from the small table below, which covers the older models of
the Alibaba openb trace (P100, T4, V100, A10) and the MIG-capable parts, so the simulator runs on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["GpuType", "MigProfile", "UnknownGpuModel", "known_models", "resolve_gpu_type"]

GIB = 1024  # MiB per GiB


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG GPU-instance profile: compute slices of 7, memory slices of 8, and where it may start."""

    name: str
    compute_slices: int
    memory_slices: int
    memory_mib: int
    starts: tuple[int, ...]

    @property
    def compute_milli(self) -> int:
        """The profile's compute as a share of the GPU in thousandths (the trace's `gpu_milli` unit)."""
        return self.compute_slices * 1000 // 7


@dataclass(frozen=True, slots=True)
class GpuType:
    """What placement needs to know about a GPU model."""

    key: str
    memory_mib: int
    nvlink: str = "none"  # "nvswitch" | "pairs" | "mesh" | "none"
    mig_profiles: tuple[MigProfile, ...] = field(default=())

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def profile(self, name: str) -> MigProfile:
        for prof in self.mig_profiles:
            if prof.name == name:
                return prof
        names = ", ".join(p.name for p in self.mig_profiles) or "none"
        raise KeyError(f"GPU {self.key} has no MIG profile {name!r} (profiles: {names})")


class UnknownGpuModel(KeyError):
    """A model name neither the catalog nor the simulator's table knows."""


# MIG placements (GI profile ids 19, 15, 14, 9, 5, 0): NVIDIA MIG User Guide, "Supported MIG Profiles";
# memory figures in MiB from the profile names (rounded GB as NVIDIA names them), see reference/dra.md §5.
def _mig(sizes_gb: tuple[int, int, int, int, int, int]) -> tuple[MigProfile, ...]:
    one, one2, two, three, four, seven = sizes_gb
    return (
        MigProfile(f"1g.{one}gb", 1, 1, one * GIB, (0, 1, 2, 3, 4, 5, 6)),
        MigProfile(f"1g.{one2}gb", 1, 2, one2 * GIB, (0, 2, 4, 6)),
        MigProfile(f"2g.{two}gb", 2, 2, two * GIB, (0, 2, 4)),
        MigProfile(f"3g.{three}gb", 3, 4, three * GIB, (0, 4)),
        MigProfile(f"4g.{four}gb", 4, 4, four * GIB, (0,)),
        MigProfile(f"7g.{seven}gb", 7, 8, seven * GIB, (0,)),
    )


_A100_40 = _mig((5, 10, 10, 20, 20, 40))
_A100_80 = _mig((10, 20, 20, 40, 40, 80))
_H200 = _mig((18, 35, 35, 71, 71, 141))
_H100_94 = _mig((12, 24, 24, 47, 47, 94))

# Public datasheet memory sizes; NVLink shapes from reference/dra.md §6.
_TABLE: dict[str, GpuType] = {
    t.key: t
    for t in (
        GpuType("P100", 16 * GIB, "mesh"),
        GpuType("T4", 16 * GIB),
        GpuType("V100M16", 16 * GIB, "mesh"),
        GpuType("V100M32", 32 * GIB, "mesh"),
        GpuType("A10", 24 * GIB),
        GpuType("L4", 24 * GIB),
        GpuType("L40S", 48 * GIB),
        GpuType("A100-SXM4-40GB", 40 * GIB, "nvswitch", _A100_40),
        GpuType("A100-SXM4-80GB", 80 * GIB, "nvswitch", _A100_80),
        GpuType("A100-PCIE-80GB", 80 * GIB, "pairs", _A100_80),
        GpuType("H100-SXM5-80GB", 80 * GIB, "nvswitch", _A100_80),
        GpuType("H100-NVL-94GB", 94 * GIB, "pairs", _H100_94),
        GpuType("H200-SXM5-141GB", 141 * GIB, "nvswitch", _H200),
    )
}
_ALIASES = {"V100-SXM2-16GB": "V100M16", "V100-SXM2-32GB": "V100M32", "TESLA-T4": "T4", "L40S-48GB": "L40S"}


def known_models() -> list[str]:
    """Every model key the simulator can resolve without the catalog."""
    return sorted(_TABLE)


def _from_catalog(name: str) -> GpuType | None:
    try:
        from dra.gpus import catalog
    except ImportError:
        return None
    try:
        model: Any = catalog.get(name)
    except (KeyError, LookupError, ValueError):
        return None
    profiles: list[MigProfile] = []
    geometry = getattr(model, "mig", None)
    for prof in getattr(geometry, "profiles", ()) or ():
        if "+" in str(prof.name):  # media-extension variants place like their base profile
            continue
        profiles.append(
            MigProfile(
                name=str(prof.name),
                compute_slices=int(prof.compute_slices),
                memory_slices=int(prof.memory_slices),
                memory_mib=int(prof.memory_mib),
                starts=tuple(int(s) for s in prof.starts),
            )
        )
    return GpuType(
        key=str(model.key),
        memory_mib=int(model.memory_bytes) // (1024 * 1024),
        nvlink=str(getattr(model, "nvlink", "none")),
        mig_profiles=tuple(profiles),
    )


_LEGACY = frozenset({"P100", "T4", "V100M16", "V100M32", "A10"})


def resolve_gpu_type(name: str) -> GpuType:
    """The simulator's view of GPU model `name`: the catalog's entry, or the built-in table when it has none.

    The openb trace's legacy models (P100, T4, V100, A10) always come from the table, so the paper comparison
    does not move when the catalog grows.
    """
    key = _ALIASES.get(name.upper(), name)
    table = next((t for k, t in _TABLE.items() if k.upper() == key.upper()), None)
    if table is not None and table.key in _LEGACY:
        return table
    try:
        found = _from_catalog(name)
    except (AttributeError, TypeError, ValueError):  # a catalog entry without the fields we read
        found = None
    if found is not None:
        return found
    if table is not None:
        return table
    raise UnknownGpuModel(f"unknown GPU model {name!r} (known: {', '.join(known_models())}, or a dra.gpus key)")
