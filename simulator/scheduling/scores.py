"""kube-scheduler v1.37.2's score plugins as integer arithmetic: one function per formula, Go's division kept.

Each function cites the Go file it follows (paths under k8s.io/kubernetes@v1.37.2/pkg/scheduler/framework/plugins/).
Scores are int in [0, MAX_NODE_SCORE] before the plugin weight; Go's `/` on int64 truncates toward zero, which
`go_div` reproduces (Python's `//` floors, which differs for negative numerators: BalancedAllocation has them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "FIRST_AVAILABLE_MAX_SIZE",
    "MAX_NODE_SCORE",
    "balanced_allocation",
    "broken_linear",
    "default_normalize",
    "go_div",
    "least_allocated",
    "most_allocated",
    "prioritized_list_score",
    "requested_to_capacity_ratio",
]

MAX_NODE_SCORE = 100  # k8s.io/kube-scheduler/framework: MaxNodeScore
MAX_CUSTOM_PRIORITY_SCORE = 10  # pkg/scheduler/apis/config: MaxCustomPriorityScore (shape scores are 0..10)
FIRST_AVAILABLE_MAX_SIZE = 8  # k8s.io/api/resource/v1: FirstAvailableDeviceRequestMaxSize


def go_div(a: int, b: int) -> int:
    """Go's int64 `a / b`: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_allocated(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """noderesources/least_allocated.go: per resource (allocatable - requested) * 100 / allocatable (0 when
    over), weighted mean with integer division; resources the node has none of are left out."""
    score = total = 0
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        score += (0 if req > cap else (cap - req) * MAX_NODE_SCORE // cap) * weight
        total += weight
    return score // total if total else 0


def most_allocated(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """noderesources/most_allocated.go: per resource min(requested, allocatable) * 100 / allocatable, weighted."""
    score = total = 0
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        score += min(req, cap) * MAX_NODE_SCORE // cap * weight
        total += weight
    return score // total if total else 0


def broken_linear(shape: Sequence[tuple[int, int]], utilization: int) -> int:
    """helper/shape_score.go BuildBrokenLinearFunction over (utilization, score) points, scores already 0..100."""
    for i, (point, score) in enumerate(shape):
        if utilization <= point:
            if i == 0:
                return score
            prev_point, prev_score = shape[i - 1]
            return prev_score + go_div((score - prev_score) * (utilization - prev_point), point - prev_point)
    return shape[-1][1]


def requested_to_capacity_ratio(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int], shape: Sequence[tuple[int, int]]
) -> int:
    """noderesources/requested_to_capacity_ratio.go: the shape (points' scores scaled by 100/10) at each
    resource's utilization percent; resources scoring 0 are left out of the mean, which rounds half away."""
    scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    score = total = 0
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        if cap == 0:
            continue
        value = broken_linear(scaled, 100 if req > cap else req * 100 // cap)
        if value > 0:
            score += value * weight
            total += weight
    if not total:
        return 0
    ratio = score / total
    return int(math.floor(ratio + 0.5)) if ratio >= 0 else -int(math.floor(-ratio + 0.5))  # Go's math.Round


def _balance(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions = [min(1.0, req / cap) for req, cap in zip(requested, allocatable, strict=True) if cap != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)  # Go's int64(float64) truncates toward zero


def balanced_allocation(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """noderesources/balanced_allocation.go (1.37): 50 + (50 + balance with the pod - balance without it) / 2,
    balance = (1 - standard deviation of the requested/allocatable fractions) * 100."""
    with_pod = _balance(requested, allocatable)
    without = _balance(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without, 2)


def default_normalize(scores: dict[Any, int], *, reverse: bool = False) -> dict[Any, int]:
    """helper/normalize_score.go DefaultNormalizeScore: scale [0, max] to [0, 100] (integer), optionally reversed."""
    top = max(scores.values(), default=0)
    if top == 0:
        return {k: MAX_NODE_SCORE if reverse else v for k, v in scores.items()}
    out = {}
    for key, value in scores.items():
        scaled = MAX_NODE_SCORE * value // top
        out[key] = MAX_NODE_SCORE - scaled if reverse else scaled
    return out


def prioritized_list_score(requests: Iterable[dict[str, Any]], results: Iterable[dict[str, Any]]) -> int:
    """dynamicresources/dynamicresources.go computeScore, for one claim: for each `firstAvailable` request, 8
    minus the index of the subrequest its devices came from (results name it `request/subrequest`)."""
    chosen = {str(r.get("request", "")) for r in results}
    score = 0
    for request in requests:
        if request.get("exactly") is not None or "firstAvailable" not in request:
            continue
        for index, sub in enumerate(request["firstAvailable"] or ()):
            if f"{request.get('name')}/{sub.get('name')}" in chosen:
                score += FIRST_AVAILABLE_MAX_SIZE - index
    return score
