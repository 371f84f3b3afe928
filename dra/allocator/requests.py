"""Resolve a claim's requests against DeviceClasses and evaluate CEL selectors with per-device caching.

`SelectorMatcher` is the injectable CEL hook: `(driver, device, expression) -> bool`, raising
`SelectorCompileError` / `SelectorRuntimeError`. The default one compiles with
`dra.cel.Environment.dra_selector()` and memoises each (device, expression) result for the lifetime of the
`Allocator`, which is sound because a device's CEL value never changes there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dra import cel as dra_cel
from dra.allocator._errors import AllocationError
from dra.allocator._objects import DeviceClass, Request, Slice, SliceDevice
from dra.allocator.pools import Pool
from dra.errors import CelCompileError, CelError, CelRuntimeError

__all__ = [
    "CEL_COST_LIMIT",
    "Candidate",
    "RequestData",
    "SelectorCache",
    "SelectorCompileError",
    "SelectorMatcher",
    "SelectorRuntimeError",
    "cel_selector_matcher",
]

CEL_COST_LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost

SelectorMatcher = Callable[[str, SliceDevice, str], bool]


class SelectorCompileError(CelCompileError):
    """The expression does not compile."""


class SelectorRuntimeError(CelRuntimeError):
    """The expression failed while evaluating one device."""


def cel_selector_matcher() -> SelectorMatcher:
    """A matcher backed by `dra.cel`'s DRA selector environment."""
    env = dra_cel.Environment.dra_selector()

    def matches(driver: str, device: SliceDevice, expression: str) -> bool:
        try:
            program = env.compile(expression)
        except CelCompileError as err:
            raise SelectorCompileError(str(err)) from None
        if device.cel_value is None:
            device.cel_value = {"device": dra_cel.device_value(driver, device.raw)}
        try:
            result = program.evaluate(device.cel_value, cost_limit=CEL_COST_LIMIT)
        except CelError as err:
            raise SelectorRuntimeError(str(err)) from None
        if type(result) is not bool:
            raise SelectorRuntimeError(f"CEL result of type {type(result).__name__} could not be converted to bool")
        return result

    return matches


@dataclass(slots=True)
class SelectorCache:
    """Memoised selector results per (expression, device); errors are memoised too."""

    matcher: SelectorMatcher
    results: dict[str, dict[SliceDevice, bool | Exception]] = field(default_factory=dict)

    def matches(self, driver: str, device: SliceDevice, expression: str) -> bool:
        per_expr = self.results.get(expression)
        if per_expr is None:
            per_expr = self.results[expression] = {}
        hit = per_expr.get(device)
        if hit is None:
            try:
                hit = self.matcher(driver, device, expression)
            except (SelectorCompileError, SelectorRuntimeError) as err:
                hit = err
            per_expr[device] = hit
        if isinstance(hit, Exception):
            raise hit
        return hit


@dataclass(slots=True, eq=False)
class Candidate:
    """A device at its place in the node's search order (with per-node caches of the scored mode)."""

    index: int
    pool: Pool
    slice: Slice
    device: SliceDevice
    key: tuple[str, str, str]
    footprint: Any = None
    group: str | None = None
    signature: Any = None


@dataclass(slots=True)
class RequestData:
    """One request, or one subrequest of a firstAvailable request (then `parent` is set)."""

    request: Request
    parent: str | None
    device_class: DeviceClass | None
    num_devices: int = 0
    all_devices: list[Candidate] | None = None
    selected_sub: int = 0

    @property
    def name(self) -> str:
        return self.request.full_name


def selectors_match(
    cache: SelectorCache,
    device: SliceDevice,
    driver: str,
    device_key: tuple[str, str, str],
    selectors: tuple[str | None, ...],
    owner: str,
) -> bool:
    """All selectors true; `owner` is "class NAME" or "claim NS/NAME" for upstream-style messages."""
    for i, expr in enumerate(selectors):
        if expr is None:
            raise AllocationError(f"{owner}: selector #{i}: CEL expression empty (unsupported selector type?)")
        try:
            if not cache.matches(driver, device, expr):
                return False
        except SelectorCompileError as err:
            raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {err}") from None
        except SelectorRuntimeError as err:
            dev = "/".join(device_key)
            raise AllocationError(f"{owner}: selector #{i} on device {dev}: CEL runtime error: {err}") from None
    return True
