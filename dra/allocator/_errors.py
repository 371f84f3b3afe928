"""The allocator's two outcomes besides success: a fatal input problem, or no allocation on this node."""

from __future__ import annotations

from dra.errors import GpudraError

__all__ = ["AllocationError", "Unsatisfiable"]


class AllocationError(GpudraError):
    """A fatal problem with the input (upstream's Allocate returns an error, e.g. a CEL runtime error)."""


class Unsatisfiable(GpudraError):
    """The claims cannot be allocated on this node (upstream's Allocate returns nil, nil); `reason` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
