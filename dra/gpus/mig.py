"""MIG geometry: GPU-instance profiles, their placements on the 7 compute / 8 memory slices, and layout checks.

A layout is a set of `Placement`s (profile + start memory slice) on one GPU. It is valid when every start is one
the profile allows, no two placements share a memory slice, and no profile exceeds its instance count. Those are
exactly the conflicts the NVIDIA DRA driver encodes as `memory-slice-<i>` counters. Pure data, no NVML.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from dra.errors import UnknownName

__all__ = ["MigGeometry", "MigProfile", "Placement"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as NVML describes it (`nvmlGpuInstanceProfileInfo_t` plus its placements)."""

    name: str  # "1g.10gb", "1g.10gb+me": go-nvlib's MigProfileInfo.String(), as nvidia-smi prints it
    gi_profile_id: int  # the id `nvidia-smi mig -lgip` prints (19, 20, 15, 14, 9, 5, 0)
    compute_slices: int
    memory_slices: int  # placement size
    starts: tuple[int, ...]  # valid placement starts (memory-slice index)
    memory_mib: int  # NVML memorySizeMB (MiB)
    max_count: int  # instanceCount
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    gpu_compute_slices: int = 7  # the whole GPU's compute slices (4 on an A30): what `compute_milli` divides

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def media_extensions(self) -> bool:
        return self.name.endswith("+me")

    @property
    def compute_milli(self) -> int:
        """The profile's compute in thousandths of its GPU (a trace's `gpu_milli`; 3g of 7 -> 428, 2g of 4 -> 500)."""
        return self.compute_slices * 1000 // self.gpu_compute_slices

    @property
    def device_name_part(self) -> str:
        """The profile as the DRA driver writes it inside device names: dots dropped, then RFC 1123 (`1g10gb-me`)."""
        text = self.name.replace(".", "").lower()
        text = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text)
        return text.strip("-")

    def capacities(self) -> dict[str, int]:
        """The driver's `CommonCapacitiesMig`: capacity name -> integer value (memory in bytes)."""
        return {
            "multiprocessors": self.multiprocessors,
            "copyEngines": self.copy_engines,
            "decoders": self.decoders,
            "encoders": self.encoders,
            "jpegEngines": self.jpeg_engines,
            "ofaEngines": self.ofa_engines,
            "memory": self.memory_bytes,
        }


@dataclass(frozen=True, order=True)
class Placement:
    """A profile at a start memory slice; it occupies `start .. start + memory_slices - 1`."""

    start: int
    profile: MigProfile = field(compare=False)
    profile_name: str = field(default="")

    def __post_init__(self) -> None:
        if not self.profile_name:
            object.__setattr__(self, "profile_name", self.profile.name)

    @property
    def memory_slices(self) -> range:
        return range(self.start, self.start + self.profile.memory_slices)

    def __str__(self) -> str:
        return f"{self.profile.name}@{self.start}"


LayoutSpec = Iterable[Placement | tuple[str, int]]


@dataclass(frozen=True)
class MigGeometry:
    """The MIG profiles of one GPU model, with the layout rules and the helpers the simulator needs."""

    name: str  # "A100-40GB", "80GB", "H100-94GB", "H200-141GB", "B200-180GB"
    profiles: tuple[MigProfile, ...]
    compute_slices: int = 7
    memory_slices: int = 8

    # -- lookup -----------------------------------------------------------------------------------------
    @cached_property
    def base_profiles(self) -> tuple[MigProfile, ...]:
        """The profiles without the media-extension (`+me`) variants, which place like their base profile."""
        return tuple(p for p in self.profiles if not p.media_extensions)

    def profile(self, key: str | int) -> MigProfile:
        """A profile by name (`3g.40gb`, `MIG 3g.40gb` also accepted) or by GI profile id."""
        if isinstance(key, str):
            wanted = key.removeprefix("MIG ").strip()
            for p in self.profiles:
                if p.name == wanted:
                    return p
        else:
            for p in self.profiles:
                if p.gi_profile_id == key:
                    return p
        known = ", ".join(p.name for p in self.profiles)
        raise UnknownName(f"MIG profile {key!r} is not a profile of {self.name} (known: {known})")

    def placements(self) -> list[Placement]:
        """Every (profile, start) the GPU allows, in the profile table's order."""
        return [Placement(start, p) for p in self.profiles for start in p.starts]

    def placement(self, profile: str | int, start: int) -> Placement:
        """One placement, checked against the profile's valid starts (ValueError otherwise)."""
        p = self.profile(profile)
        if start not in p.starts:
            raise ValueError(f"{p.name} cannot start at memory slice {start} on {self.name} (valid starts {p.starts})")
        return Placement(start, p)

    def resolve(self, layout: LayoutSpec) -> list[Placement]:
        """The layout as `Placement`s (names looked up; starts are not checked here)."""
        out: list[Placement] = []
        for item in layout:
            if isinstance(item, Placement):
                out.append(item)
            else:
                name, start = item
                out.append(Placement(start, self.profile(name)))
        return out

    # -- validity ---------------------------------------------------------------------------------------
    def layout_errors(self, layout: LayoutSpec) -> list[str]:
        """Why a layout is impossible (empty when it is valid)."""
        placed = self.resolve(layout)
        errors: list[str] = []
        owner: dict[int, Placement] = {}
        for pl in placed:
            if pl.start not in pl.profile.starts:
                errors.append(f"{pl}: start {pl.start} is not a valid start (valid: {pl.profile.starts})")
                continue
            for s in pl.memory_slices:
                if s >= self.memory_slices:
                    errors.append(f"{pl}: memory slice {s} is beyond the GPU's {self.memory_slices}")
                elif s in owner:
                    errors.append(f"{pl}: memory slice {s} is already used by {owner[s]}")
                else:
                    owner[s] = pl
        counts = Counter(pl.profile.name for pl in placed)
        for pname, n in sorted(counts.items()):
            p = self.profile(pname)
            if n > p.max_count:
                errors.append(f"{pname}: {n} instances, at most {p.max_count}")
        used_compute = sum(pl.profile.compute_slices for pl in placed)
        if used_compute > self.compute_slices:
            errors.append(f"{used_compute} compute slices used, the GPU has {self.compute_slices}")
        media = sum(1 for pl in placed if pl.profile.media_extensions)
        if media > 1:
            errors.append(f"{media} media-extension (+me) instances, at most 1")
        return errors

    def is_valid_layout(self, layout: LayoutSpec) -> bool:
        """True when the placements can coexist on one GPU (see `layout_errors`)."""
        return not self.layout_errors(layout)

    # -- helpers for the simulator ----------------------------------------------------------------------
    def used_memory_slices(self, layout: LayoutSpec) -> set[int]:
        """The memory slices the layout's placements hold."""
        return {s for pl in self.resolve(layout) for s in pl.memory_slices}

    def free_memory_runs(self, layout: LayoutSpec) -> list[tuple[int, int]]:
        """Maximal runs of free memory slices as (start, length), lowest start first (fragmentation measure)."""
        used = self.used_memory_slices(layout)
        runs: list[tuple[int, int]] = []
        start: int | None = None
        for s in range(self.memory_slices + 1):
            free = s < self.memory_slices and s not in used
            if free and start is None:
                start = s
            elif not free and start is not None:
                runs.append((start, s - start))
                start = None
        return runs

    def free_compute_slices(self, layout: LayoutSpec) -> int:
        """Compute slices the layout leaves unused."""
        return self.compute_slices - sum(pl.profile.compute_slices for pl in self.resolve(layout))

    def addable(self, layout: LayoutSpec, profile: str | int) -> list[Placement]:
        """The placements of `profile` that can be added to `layout` keeping it valid."""
        placed = self.resolve(layout)
        p = self.profile(profile)
        return [Placement(s, p) for s in p.starts if self.is_valid_layout([*placed, Placement(s, p)])]

    def place(self, profiles: Sequence[MigProfile]) -> tuple[Placement, ...] | None:
        """A valid layout holding `profiles` (sorted by start), or None when none exists.

        The largest profiles go first (ties in the given order), each at its lowest start that leaves room for
        the rest: a depth-first search, so the answer is the same for the same list."""
        if sum(p.compute_slices for p in profiles) > self.compute_slices:
            return None
        if sum(1 for p in profiles if p.media_extensions) > 1:
            return None
        counts = Counter(p.name for p in profiles)
        if any(n > p.max_count for p in profiles for n in (counts[p.name],)):
            return None
        order = sorted(profiles, key=lambda p: -p.memory_slices)

        def search(i: int, used: int) -> list[Placement] | None:
            if i == len(order):
                return []
            prof = order[i]
            for start in prof.starts:
                bits = ((1 << prof.memory_slices) - 1) << start
                if start + prof.memory_slices <= self.memory_slices and not used & bits:
                    rest = search(i + 1, used | bits)
                    if rest is not None:
                        return [Placement(start, prof), *rest]
            return None

        found = search(0, 0)
        return None if found is None else tuple(sorted(found, key=lambda pl: pl.start))

    def enumerate_layouts(self, *, maximal_only: bool = False) -> list[tuple[Placement, ...]]:
        """Every valid layout (including the empty one), each sorted by start; `maximal_only` keeps the layouts
        to which no further placement can be added."""
        every = sorted(self.placements(), key=lambda pl: (pl.start, pl.profile.gi_profile_id))
        result: list[tuple[Placement, ...]] = []

        def extend(i: int, chosen: list[Placement]) -> Iterator[tuple[Placement, ...]]:
            if i == len(every):
                yield tuple(chosen)
                return
            yield from extend(i + 1, chosen)
            candidate = every[i]
            if self.is_valid_layout([*chosen, candidate]):
                chosen.append(candidate)
                yield from extend(i + 1, chosen)
                chosen.pop()

        for layout in extend(0, []):
            if maximal_only and any(self.is_valid_layout([*layout, pl]) for pl in every if pl not in layout):
                continue
            result.append(layout)
        return result

    def smallest_profile_for(
        self, memory_bytes: int, *, compute_slices: int = 0, media_extensions: bool = False
    ) -> MigProfile | None:
        """The profile with the least memory that holds `memory_bytes` (and at least `compute_slices`), ties
        broken by fewer compute slices; `+me` profiles only when asked. None when even the largest is too small."""
        fitting = [
            p
            for p in self.profiles
            if p.memory_bytes >= memory_bytes
            and p.compute_slices >= compute_slices
            and (media_extensions or not p.media_extensions)
        ]
        if not fitting:
            return None
        return min(fitting, key=lambda p: (p.memory_mib, p.compute_slices, p.memory_slices, p.media_extensions))

    def max_capacities(self) -> dict[str, int]:
        """Per-dimension maximum over all profiles: the driver's full-GPU capacity with DynamicMIG on."""
        caps: dict[str, int] = {}
        for p in self.profiles:
            for k, v in p.capacities().items():
                caps[k] = max(caps.get(k, 0), v)
        return caps
