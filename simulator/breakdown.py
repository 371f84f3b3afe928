"""Figures per GPU model and per pod size (GPUs per pod, VRAM per GPU): the group a pod or node falls in, the running
totals the cluster state keeps per group, and their integral over the summary's window (`GroupLedger`). The rows of
the summary's `by_gpu_model` and `by_pod_size` are built from these in `simulator.kpis`."""

from __future__ import annotations

from dataclasses import dataclass, field

from .workload import SimPod

__all__ = ["SHARED", "VRAM_BUCKETS_GIB", "GroupLedger", "Totals", "pod_size", "size_order", "vram_bucket"]

VRAM_BUCKETS_GIB = (8, 16, 32, 48, 80)  # upper bounds of the VRAM-per-GPU buckets (GiB); above the last: one more
SHARED = "<1"  # the GPUs-per-pod label of a pod asking for a fraction of one GPU

# requested milli, held milli, needed VRAM MiB, held VRAM MiB of the running pods of one group
Totals = list[int]


def vram_bucket(mib: int) -> str:
    """The VRAM-per-GPU bucket of `mib`, e.g. `16-32 GiB` (upper bound included), `>80 GiB` above the last."""
    low = 0
    for high in VRAM_BUCKETS_GIB:
        if mib <= high * 1024:
            return f"{low}-{high} GiB"
        low = high
    return f">{low} GiB"


def pod_size(pod: SimPod) -> tuple[str, str]:
    """(GPUs per pod: `<1` for a fraction of one GPU, else the count; VRAM-per-GPU bucket); CPU pods: ("0", "-")."""
    if not pod.is_gpu:
        return ("0", "-")
    return (SHARED if pod.is_shared else str(pod.num_gpu), vram_bucket(pod.vram_mib))


def size_order(size: tuple[str, str]) -> tuple[float, int]:
    """Ascending GPUs per pod (shares first), then ascending VRAM bucket."""
    gpus = 0.5 if size[0] == SHARED else float(size[0])
    bounds = [f"{lo}-{hi} GiB" for lo, hi in zip((0, *VRAM_BUCKETS_GIB), VRAM_BUCKETS_GIB, strict=False)]
    return gpus, bounds.index(size[1]) if size[1] in bounds else len(bounds)


@dataclass(slots=True)
class GroupLedger:
    """Per group (a GPU model, a pod size) the totals of the running pods, integrated over `window` as the summary
    averages the cluster's totals: each state lasts until the next sample, the last one until the window's end."""

    window: tuple[float, float] = (0.0, 0.0)
    last_time: float | None = None
    last: dict[str, dict[object, tuple[int, ...]]] = field(default_factory=dict)  # table -> group -> totals
    integral: dict[str, dict[object, list[float]]] = field(default_factory=dict)
    span: float = 0.0

    def advance(self, now: float, tables: dict[str, dict[object, Totals]]) -> None:
        """Integrate the previous state up to `now`, then remember the state at `now` (`tables` is copied)."""
        if self.last_time is not None:
            self._integrate(self.last_time, now)
        self.last_time = now
        self.last = {name: {k: tuple(v) for k, v in table.items()} for name, table in tables.items()}

    def _integrate(self, start: float, end: float) -> None:
        lo, hi = max(start, self.window[0]), min(end, self.window[1])
        if hi <= lo:
            return
        self.span += hi - lo
        for name, table in self.last.items():
            into = self.integral.setdefault(name, {})
            for key, totals in table.items():
                acc = into.setdefault(key, [0.0] * len(totals))
                for i, value in enumerate(totals):
                    acc[i] += value * (hi - lo)

    def means(self, name: str, *, final: bool) -> dict[object, tuple[float, ...]]:
        """Per group of table `name`: its totals averaged over the window (the last state held to the window's end),
        or, with `final` (the FGD protocol, no time), the last state's."""
        if final or self.window[1] <= self.window[0]:
            return {k: tuple(float(x) for x in v) for k, v in self.last.get(name, {}).items()}
        span = self.span
        integral = {k: list(v) for k, v in self.integral.get(name, {}).items()}
        tail_lo = max(self.last_time if self.last_time is not None else self.window[1], self.window[0])
        tail = self.window[1] - tail_lo
        if tail > 0:
            span += tail
            for key, totals in self.last.get(name, {}).items():
                acc = integral.setdefault(key, [0.0] * len(totals))
                for i, value in enumerate(totals):
                    acc[i] += value * tail
        return {k: tuple(x / span for x in v) for k, v in integral.items()} if span else {}
