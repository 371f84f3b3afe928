"""How kube-scheduler v1.37.2 picks a node once the plugins have spoken: how many feasible nodes it scores,
how the normalised scores add up, and the random choice among the nodes tied at the top.

pkg/scheduler/schedule_one.go: `numFeasibleNodesToFind` (all nodes below 100; else percentageOfNodesToScore, 0 meaning
50 - nodes/125 with a floor of 5%, and never fewer than 100), the search starting at `nextStartNodeIndex` and
advancing it by the nodes it looked at; a single feasible node is taken without scoring.
pkg/scheduler/framework/sorted_nodes.go: the highest total wins, ties broken by a random number per node, i.e. a
uniform choice among the tied nodes, which the simulator draws from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .profile import AFFINITY, DRA, TAINTS, Profile

__all__ = ["MIN_FEASIBLE_NODES", "Raw", "normalised_extra", "normalised_totals", "num_feasible_nodes_to_find"]

MIN_FEASIBLE_NODES = 100  # schedule_one.go minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5  # schedule_one.go minFeasibleNodesPercentageToFind

Raw = tuple[int, int, int]  # before normalisation: DynamicResources, TaintToleration (intolerable), NodeAffinity


def num_feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """schedule_one.go numFeasibleNodesToFind (Go's int32 division: all operands are non-negative here)."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


@dataclass(frozen=True, slots=True)
class Maxima:
    """The largest raw score of each normalised plugin over the nodes being scored."""

    dra: int
    taints: int
    affinity: int

    @staticmethod
    def of(raws: Iterable[Raw]) -> Maxima:
        dra = taints = affinity = 0
        for d, t, a in raws:
            dra, taints, affinity = max(dra, d), max(taints, t), max(affinity, a)
        return Maxima(dra, taints, affinity)


def normalised(raw: Raw, top: Maxima, profile: Profile) -> dict[str, int]:
    """The weighted scores of the plugins with a NormalizeScore (helper/normalize_score.go DefaultNormalizeScore;
    TaintToleration reversed), for one node given the maxima over the scored nodes."""
    dra, taints, affinity = raw
    out = {}
    weight = profile.weight(DRA)
    if weight:
        out[DRA] = weight * (100 * dra // top.dra if top.dra else dra)
    weight = profile.weight(TAINTS)
    if weight:
        out[TAINTS] = weight * (100 - 100 * taints // top.taints if top.taints else 100)
    weight = profile.weight(AFFINITY)
    if weight:
        out[AFFINITY] = weight * (100 * affinity // top.affinity if top.affinity else affinity)
    return out


def normalised_extra(raw: Raw, top: Maxima, profile: Profile) -> int:
    """The sum of `normalised` (the engine's hot path: no dictionary)."""
    dra, taints, affinity = raw
    total = 0
    if dra or top.dra:
        total += profile.weight(DRA) * (100 * dra // top.dra if top.dra else dra)
    total += profile.weight(TAINTS) * (100 - 100 * taints // top.taints if top.taints else 100)
    if affinity or top.affinity:
        total += profile.weight(AFFINITY) * (100 * affinity // top.affinity if top.affinity else affinity)
    return total


def normalised_totals(bases: np.ndarray, raws: np.ndarray, profile: Profile) -> np.ndarray:
    """`base + normalised_extra` for many classes at once (rows of `raws`: the `Raw` triples), normalised over
    them all: the same integer arithmetic on int64 arrays (operands are non-negative, so `//` is Go's `/`)."""
    top = raws.max(axis=0)
    totals = bases.copy()
    dra, taints, affinity = raws[:, 0], raws[:, 1], raws[:, 2]
    totals += profile.weight(DRA) * (100 * dra // top[0] if top[0] else dra)
    totals += profile.weight(TAINTS) * (100 - 100 * taints // top[1] if top[1] else 100)
    totals += profile.weight(AFFINITY) * (100 * affinity // top[2] if top[2] else affinity)
    return totals
