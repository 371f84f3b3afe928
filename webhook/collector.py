"""Full garbage collections paced by the bytes of reviews read, not only by object counts.

CPython's cyclic collector runs its oldest generation by counts of container allocations, and a review of a
megabyte allocates few containers per byte: measured under `gpudra serve` (uvicorn), 600 distinct pods with a
1 MB annotation grew RSS from 74 MB to 465 MB with the Deployment's malloc settings, and to 145-190 MB with a full
collection every 32 of them (benchmarks/webhook_memory.py). A collection costs a few milliseconds here; after
`budget_bytes` of bodies one runs, so small reviews never pay for it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

__all__ = ["DEFAULT_BUDGET_BYTES", "ByteBudgetCollector"]

DEFAULT_BUDGET_BYTES = 32 * 2**20


class ByteBudgetCollector:
    """Counts body bytes and runs `collect` (a full `gc.collect`) each time `budget_bytes` more were read."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, collect: Callable[[], object] = gc.collect) -> None:
        if budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be above 0 (got {budget_bytes})")
        self.budget_bytes = budget_bytes
        self._collect = collect
        self._read = 0
        self.collections = 0

    def account(self, size: int) -> bool:
        """Count `size` bytes read; True when that crossed the budget and a collection ran."""
        self._read += size
        if self._read < self.budget_bytes:
            return False
        self._read = 0
        self._collect()
        self.collections += 1
        return True
