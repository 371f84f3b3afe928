"""kube-apiserver's own histogram of what each admission webhook cost it, read from its /metrics (Prometheus text):
`apiserver_admission_webhook_admission_duration_seconds`, the time from the call to the webhook to its answer as the
API server saw it (connection, TLS, the webhook's work, the response's decoding). Read before and after a load, the
difference is that load's; its quantiles are interpolated within buckets as Prometheus' histogram_quantile does."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

WEBHOOK_DURATION = "apiserver_admission_webhook_admission_duration_seconds"

_SAMPLE = re.compile(r"^(?P<metric>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Histogram:
    """Cumulative counts per upper bound (`le`, +Inf last), summed over every series that matched."""

    bounds: tuple[float, ...]
    cumulative: tuple[float, ...]

    @property
    def count(self) -> float:
        return self.cumulative[-1] if self.cumulative else 0.0

    def minus(self, earlier: Histogram) -> Histogram:
        """This histogram less an earlier read of the same series (the same buckets, or none at all yet)."""
        if not earlier.bounds:
            return self
        if earlier.bounds != self.bounds:
            raise ValueError(f"{WEBHOOK_DURATION}: buckets changed between reads: {earlier.bounds} -> {self.bounds}")
        return Histogram(self.bounds, tuple(a - b for a, b in zip(self.cumulative, earlier.cumulative, strict=True)))

    def quantile(self, q: float) -> float:
        """The q-quantile in the histogram's unit, interpolated linearly within its bucket (from 0 below the first
        bound); past the last finite bound, that bound (as histogram_quantile). NaN for an empty histogram."""
        if not 0 <= q <= 1:
            raise ValueError(f"quantile {q}: must be within [0, 1]")
        if self.count <= 0:
            return math.nan
        rank = q * self.count
        lower, below = 0.0, 0.0
        for bound, cumulative in zip(self.bounds, self.cumulative, strict=True):
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower
                if cumulative == below:
                    return bound
                return lower + (bound - lower) * (rank - below) / (cumulative - below)
            lower, below = bound, cumulative
        return lower


def _labels(text: str) -> dict[str, str]:
    return {m["key"]: m["value"] for m in _LABEL.finditer(text)}


def histogram(metrics_text: str, match: Mapping[str, str] | None = None, name: str = WEBHOOK_DURATION) -> Histogram:
    """The histogram `name` in `metrics_text`, summed over the series whose labels include `match` (e.g.
    {"name": "mutate.gpudra.io", "type": "admit"}; all of them without); empty (no buckets) where none matched."""
    match = match or {}
    by_bound: dict[float, float] = {}
    for line in metrics_text.splitlines():
        found = _SAMPLE.match(line)
        if found is None or found["metric"] != f"{name}_bucket":
            continue
        labels = _labels(found["labels"] or "")
        if any(labels.get(key) != value for key, value in match.items()):
            continue
        if "le" not in labels:
            raise ValueError(f"{name}_bucket without an le label: {line!r}")
        bound = float(labels["le"])
        by_bound[bound] = by_bound.get(bound, 0.0) + float(found["value"])
    bounds = tuple(sorted(by_bound))
    if bounds and not math.isinf(bounds[-1]):
        raise ValueError(f"{name}: no +Inf bucket among {bounds}")
    return Histogram(bounds, tuple(by_bound[b] for b in bounds))
