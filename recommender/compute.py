"""From framebuffer samples to a recommendation: the statistic, the headroom, the sample floor, pressure, the device.

Per workload owner and container, every FB-used sample of every pod and device in the window is pooled, then:

- **peak** is the chosen statistic of the pooled samples: a quantile (default p99, the sample at rank
  ceil(0.99 x (n - 1)), numpy's `method="higher"`, so it is always a value that was observed) or `max`. p99 over
  7 days of 30 s samples ignores the top ~100 minutes; GPU memory is usually flat (framework allocators cache), and
  pressure detection below catches the case where the tail mattered. Use `max` to size for the worst sample.
- **vram** = peak x (1 + headroom) (default 20 %), rounded up to a whole MiB: what a claim should request per device,
  but never more than the whole GPU the pods ran on (`modelName`'s memory, when the peak fits in it): headroom past
  the device would only rule out the device that demonstrably holds the workload, leaving its pods Pending.
- fewer than `min_samples` (default 100, 50 minutes of 30 s samples) samples: no recommendation ("not enough
  samples"); shrinking needs evidence.
- **pressure**: after a shrink (the pods ran on a MIG instance or on less framebuffer than their GPU model has),
  framebuffer use reached `pressure_ratio` (95 %) of what was granted, or the container restarted. Then the
  statistic becomes `max`, and when the ceiling was hit, vram is at least that series' granted size x (1 + headroom),
  so the next device is larger (grow back); a larger device the owner's pods also ran on without filling it (the
  whole GPU before the shrink) does not set the size.
- **device** (for the report): the smallest fitting device of the node's GPU model (`modelName`, looked up in
  `dra.gpus`): a MIG profile when the model has MIG, else a share of the GPU with a memory request, else the
  whole GPU.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dra.durations import format_go_duration, parse_go_duration
from dra.gpus import GPUModel, find

from .dcgm import MIB

__all__ = [
    "ContainerRecommendation",
    "ContainerUsage",
    "Owner",
    "Settings",
    "Skipped",
    "fitting_device",
    "format_bytes",
    "parse_duration",
    "parse_statistic",
    "peak_of",
    "recommend",
    "recommend_all",
    "vram_for",
]

_STATISTIC = re.compile(r"^(max|p([0-9]{1,2}(?:\.[0-9]+)?))$")


def parse_statistic(text: str) -> float | None:
    """`max` -> None; `p99` -> 0.99, `p99.9` -> 0.999; ValueError otherwise."""
    match = _STATISTIC.match(text.strip())
    if match is None:
        raise ValueError(f"statistic {text!r}: expected max or pNN (p50, p99, p99.9)")
    if match.group(1) == "max":
        return None
    q = round(float(match.group(2)) / 100, 12)
    if not 0 < q < 1:
        raise ValueError(f"statistic {text!r}: the quantile must be between p0 and p100, exclusive")
    return q


def parse_duration(text: str) -> float:
    """Seconds of a positive duration flag (`--window`, `--step`, `--interval`): Go syntax (`168h`, `1h30m`, `5m`)
    plus Prometheus's `d` and `w` (`7d`), which these flags have always documented; ValueError otherwise."""
    try:
        seconds = parse_go_duration(text.strip(), prometheus_units=True)
    except ValueError as exc:
        raise ValueError(f"duration {text!r}: expected e.g. 168h, 7d, 5m, 1h30m ({exc})") from None
    if seconds <= 0:
        raise ValueError(f"duration {text!r}: must be positive (e.g. 168h, 7d, 5m, 1h30m)")
    return seconds


def format_bytes(n: int) -> str:
    """A Kubernetes quantity for a byte count: `6Gi`, `9856Mi`, or plain bytes."""
    for suffix, unit in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


@dataclass(frozen=True)
class Settings:
    window_seconds: float = 7 * 86400.0
    headroom: float = 0.2
    min_samples: int = 100
    quantile: float | None = 0.99  # None: max
    pressure_ratio: float = 0.95

    @property
    def statistic(self) -> str:
        return "max" if self.quantile is None else f"p{self.quantile * 100:g}"


@dataclass(frozen=True, order=True)
class Owner:
    """A workload owner: what a GPUSizingRecommendation's targetRef names."""

    namespace: str
    kind: str
    name: str
    api_version: str = field(default="", compare=False)
    uid: str = field(default="", compare=False)

    @property
    def object_name(self) -> str:
        return f"{self.kind.lower()}-{self.name}"


@dataclass
class ContainerUsage:
    """Everything observed for one container of one owner: samples (MiB) of all its pods and devices."""

    chunks: list[npt.NDArray[np.float32]] = field(default_factory=list)
    count: int = 0
    maximum: float = 0.0
    granted_mib: float = 0.0  # the largest framebuffer a series ran with (FB used + free + reserved)
    near_full: bool = False  # some series used >= pressure_ratio of its own framebuffer
    ceiling_mib: float = 0.0  # the largest framebuffer among the series that were near full (the ceiling hit)
    shrunk: bool = False  # some series ran on a MIG instance or on less than its model's framebuffer
    model_name: str = ""
    mig_profile: str = ""
    restarts: int = 0
    pods: set[str] = field(default_factory=set)

    def add(
        self,
        values_mib: npt.NDArray[np.floating],
        *,
        pod: str = "",
        granted_mib: float = 0.0,
        model_name: str = "",
        mig_profile: str = "",
        pressure_ratio: float = 0.95,
        keep_samples: bool = True,
    ) -> None:
        if pod:
            self.pods.add(pod)
        if model_name and not self.model_name:
            self.model_name = model_name
        if mig_profile:
            self.mig_profile = self.mig_profile or mig_profile
            self.shrunk = True
        if values_mib.size == 0:
            return
        top = float(values_mib.max())
        self.maximum = max(self.maximum, top)
        self.count += int(values_mib.size)
        if keep_samples:
            self.chunks.append(np.asarray(values_mib, dtype=np.float32))
        if granted_mib > 0:
            self.granted_mib = max(self.granted_mib, granted_mib)
            if top >= pressure_ratio * granted_mib:
                self.near_full = True
                self.ceiling_mib = max(self.ceiling_mib, granted_mib)
            model = find(model_name) if model_name else None
            if model is not None and granted_mib < 0.98 * model.memory_mib:
                self.shrunk = True

    def samples(self) -> npt.NDArray[np.float32]:
        if not self.chunks:
            return np.zeros(0, dtype=np.float32)
        if len(self.chunks) > 1:
            self.chunks = [np.concatenate(self.chunks)]
        return self.chunks[0]


@dataclass(frozen=True)
class ContainerRecommendation:
    name: str
    vram_bytes: int
    peak_bytes: int
    samples: int
    window_seconds: float
    pressure: bool
    statistic: str
    granted_bytes: int = 0
    model_name: str = ""
    device: str = ""
    restarts: int = 0

    def status_entry(self) -> dict[str, object]:
        """The entry of `status.containers` (the CRD's schema)."""
        entry: dict[str, object] = {
            "name": self.name,
            "vram": format_bytes(self.vram_bytes),
            "peak": format_bytes(self.peak_bytes),
            "samples": self.samples,
            "window": format_go_duration(self.window_seconds),
            "pressure": self.pressure,
            "statistic": self.statistic,
            "source": "observed",
        }
        if self.granted_bytes:
            entry["granted"] = format_bytes(self.granted_bytes)
        if self.model_name:
            entry["modelName"] = self.model_name[:128]
        if self.device:
            entry["device"] = self.device[:128]
        entry["restarts"] = self.restarts
        return entry


@dataclass(frozen=True)
class Skipped:
    owner: str  # "namespace/Kind/name" or "namespace/pod"
    container: str
    reason: str


def peak_of(values: npt.NDArray[np.floating], quantile: float | None) -> float:
    """The max, or the `quantile` by numpy's "higher" method (a value that was observed), of non-empty values."""
    if values.size == 0:
        raise ValueError("peak_of: no samples")
    if quantile is None:
        return float(values.max())
    k = min(values.size - 1, math.ceil(quantile * (values.size - 1)))
    return float(np.partition(values, k)[k])


def vram_for(peak_bytes: int, headroom: float) -> int:
    """peak x (1 + headroom), rounded up to a whole MiB (never below the peak)."""
    wanted = math.ceil(peak_bytes * (1 + headroom))
    return max(peak_bytes, -(-wanted // MIB) * MIB)


def capped_to_device(vram_bytes: int, peak_bytes: int, model_name: str) -> int:
    """`vram_bytes`, but no more than a whole GPU of `model_name` (the model the pods ran on) when the peak fits in
    it: a claim gets no more per device, and asking for more would rule out the device that holds the workload."""
    model: GPUModel | None = find(model_name) if model_name else None
    if model is not None and peak_bytes <= model.memory_bytes < vram_bytes:
        return model.memory_bytes
    return vram_bytes


def fitting_device(vram_bytes: int, model_name: str) -> str:
    """The smallest device of `model_name` that holds `vram_bytes` per device, in words for the report."""
    model: GPUModel | None = find(model_name) if model_name else None
    if model is None:
        return f"a GPU with {format_bytes(vram_bytes)} (model {model_name or 'unknown'} not in the catalog)"
    if model.mig is not None:
        for profile in sorted(model.mig.base_profiles, key=lambda p: (p.memory_mib, p.compute_slices)):
            if profile.memory_bytes >= vram_bytes and profile.memory_mib < model.memory_mib * 0.9:
                return f"MIG {profile.name} of {model.product_name}"
    if vram_bytes < model.memory_bytes:
        return f"shared {model.product_name} with {format_bytes(vram_bytes)}"
    if vram_bytes == model.memory_bytes:
        return f"whole {model.product_name}"
    return f"whole {model.product_name} (needs more than its {format_bytes(model.memory_bytes)})"


def recommend(name: str, usage: ContainerUsage, settings: Settings) -> ContainerRecommendation | str:
    """The recommendation for one container, or why there is none."""
    if usage.count < settings.min_samples:
        return f"not enough samples ({usage.count} < {settings.min_samples})"
    pressure = usage.shrunk and (usage.near_full or usage.restarts > 0)
    quantile = None if pressure else settings.quantile
    if quantile is None and not usage.chunks:
        peak_mib = usage.maximum
    else:
        peak_mib = peak_of(usage.samples(), quantile)
    peak_bytes = int(math.ceil(peak_mib * MIB))
    vram = vram_for(peak_bytes, settings.headroom)
    if pressure and usage.near_full:  # grow past the ceiling that was hit, not past the largest device seen
        vram = max(vram, vram_for(int(usage.ceiling_mib * MIB), settings.headroom))
    vram = capped_to_device(vram, peak_bytes, usage.model_name)
    return ContainerRecommendation(
        name=name,
        vram_bytes=vram,
        peak_bytes=peak_bytes,
        samples=usage.count,
        window_seconds=settings.window_seconds,
        pressure=pressure,
        statistic="max" if quantile is None else settings.statistic,
        granted_bytes=int(usage.granted_mib * MIB),
        model_name=usage.model_name,
        device=fitting_device(vram, usage.model_name),
        restarts=usage.restarts,
    )


def recommend_all(
    usages: Iterable[tuple[Owner, str, ContainerUsage]], settings: Settings
) -> tuple[dict[Owner, list[ContainerRecommendation]], list[Skipped]]:
    """Recommendations by owner (containers sorted by name) and what was skipped."""
    out: dict[Owner, list[ContainerRecommendation]] = {}
    skipped: list[Skipped] = []
    for owner, container, usage in usages:
        result = recommend(container, usage, settings)
        if isinstance(result, str):
            skipped.append(Skipped(f"{owner.namespace}/{owner.kind}/{owner.name}", container, result))
        else:
            out.setdefault(owner, []).append(result)
    for recs in out.values():
        recs.sort(key=lambda r: r.name)
    return out, skipped
