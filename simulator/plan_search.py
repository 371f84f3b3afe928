"""The plan's search for the smallest cluster, apart from any simulation: node counts in, met or not out.

A search is a generator: it yields a batch of node-count vectors to try (the caller runs them in parallel) and is
sent back whether each met the target; it returns the counts it settled on. It assumes monotonicity (adding nodes
to a pool never turns a met target into a missed one) and trusts the caller to have checked the upper bounds meet.

- One pool: bisection on its node count (`width` probes per round: a (width+1)-ary search).
- Several pools: every pool scaled by one factor t/T (node counts rounded up, never below the pool's minimum) with
  bisection on t; then each pool in `order` trimmed by bisection holding the others. The result is minimal pool by
  pool (no single pool can lose a node), not the cheapest mix over every combination.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

__all__ = ["Counts", "Search", "bisect", "smallest"]

Counts = tuple[int, ...]
Search = Generator[list[Counts], list[bool], Counts]


def _probes(bad: int, good: int, width: int) -> list[int]:
    """Up to `width` distinct points strictly between `bad` and `good`, evenly spread."""
    gap = good - bad
    return sorted({bad + (gap * (i + 1)) // (width + 1) for i in range(width)} - {bad, good})


def bisect(
    point: Callable[[int], Counts], low: int, high: int, width: int = 1
) -> Generator[list[Counts], list[bool], int]:
    """The smallest k in [low, high] whose `point(k)` meets, given that `point(high)` meets."""
    bad, good = low - 1, high
    while good - bad > 1:
        ks = _probes(bad, good, width)
        met = yield [point(k) for k in ks]
        for k, ok in zip(ks, met, strict=True):
            if ok:
                good = min(good, k)
        bad = max([bad, *(k for k, ok in zip(ks, met, strict=True) if not ok and k < good)])
    return good


def smallest(low: Counts, high: Counts, order: Sequence[int] | None = None, width: int = 1) -> Search:
    """The smallest counts in [low, high] per pool that meet (`high` meets); `order`: which pools to trim first."""
    if len(low) == 1:
        found = yield from bisect(lambda k: (k,), low[0], high[0], width)
        return (found,)
    top = max(high)

    def scaled(t: int) -> Counts:
        return tuple(max(lo, -(-t * hi // top)) for lo, hi in zip(low, high, strict=True))

    counts = scaled((yield from bisect(scaled, 0, top, width)))
    for i in order if order is not None else range(len(low)):
        held = counts

        def trimmed(k: int, i: int = i, held: Counts = held) -> Counts:
            return held[:i] + (k,) + held[i + 1 :]

        counts = trimmed((yield from bisect(trimmed, low[i], held[i], width)))
    return counts
