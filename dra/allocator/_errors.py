"""The allocator's two outcomes besides success: a fatal input problem, or no allocation on this node."""

from __future__ import annotations

from collections.abc import Callable

from dra.errors import GpudraError

__all__ = ["AllocationError", "Unsatisfiable"]


class AllocationError(GpudraError):
    """A fatal problem with the input (upstream's Allocate returns an error, e.g. a CEL runtime error)."""


class Unsatisfiable(GpudraError):
    """The claims cannot be allocated on this node (upstream's Allocate returns nil, nil).

    `summary` is the short reason; `details` (computed on first use, so that a caller that only counts failures pays
    nothing) says, per failing request, which device came closest and which check it failed; `reason` and `str()`
    are both together, one detail per line.
    """

    def __init__(self, reason: str, diagnose: Callable[[], list[str]] | None = None) -> None:
        self.summary = reason
        self._diagnose = diagnose
        self._details: list[str] | None = None if diagnose is not None else []
        super().__init__(reason)

    @property
    def details(self) -> list[str]:
        if self._details is None:
            assert self._diagnose is not None
            try:
                self._details = list(self._diagnose())
            except Exception as err:  # a diagnosis must never hide the outcome it explains
                self._details = [f"(no further diagnosis: {type(err).__name__}: {err})"]
            self._diagnose = None
        return self._details

    @property
    def reason(self) -> str:
        return "\n".join([self.summary, *(f"  {line}" for line in self.details)])

    def __str__(self) -> str:
        return self.reason
