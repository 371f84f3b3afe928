"""The observed-usage sizing source: what a recommender measured for one container of a workload.

`ObservedSizing` and `SizingLookup` are the interface between the recommender (which writes recommendations), the
webhook's recommendation cache (which answers lookups on the admission path) and the policy facts (which expose the
answer to CEL as `gpu.containers[i].sizing` / `gpu.sizing`). Lookups are keyed by the pod's workload owner
(`workloads.pod_owner`, read from the pod itself so that the key can be computed at admission).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ObservedSizing", "SizingLookup"]


@dataclass(frozen=True, slots=True)
class ObservedSizing:
    """A recommendation derived from observed framebuffer use of one container of one workload owner."""

    vram_bytes: int  # recommended memory per device (observed peak x headroom), what a policy should request
    peak_bytes: int  # the observed peak (or quantile) framebuffer use
    samples: int  # samples behind it
    window_seconds: int  # the window they cover
    updated: str  # RFC 3339 time of the recommendation
    pressure: bool = False  # evidence of memory pressure after a shrink (grow back)
    source_ref: str = ""  # e.g. "GPUSizingRecommendation team-a/deployment-embed"


class SizingLookup(Protocol):
    """Answers the observed sizing of one container of one workload owner, or None when there is none."""

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None: ...
