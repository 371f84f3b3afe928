"""What one simulation tells its strategies: each strategy class reads what concerns it (`Strategy.runs`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dra.sizing import SizingLookup

from ..cluster import ClusterSpec
from ..scheduling import DEFAULT_PROFILE, Profile

__all__ = ["RunSettings"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    cluster: ClusterSpec
    seed: int = 0
    protocol: str = "replay"
    scheduler: Profile = field(default=DEFAULT_PROFILE)  # kube-scheduler's profile (the DRA strategies)
    policies: str | Path | None = None  # gpudra: the policy directory (None: the shipped policies)
    allocator_mode: str = "upstream"  # gpudra: dra.allocator mode; `scored` is a what-if
    node_score: str | None = None  # gpudra: --node-score
    gpudra_attributes: bool = False
    observed: SizingLookup | None = None  # gpudra: observed-usage sizing, run again as gpudra+observed
