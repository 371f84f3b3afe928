"""Claim constraints with upstream's add/remove protocol (constraint.go, allocator_experimental.go).

`matchAttribute`: every device of the named requests has the attribute with one common value (with list
attributes on, a non-empty common intersection). `distinctAttribute`: values differ. Both reproduce
upstream's bookkeeping exactly, including its quirks: distinctAttribute remembers one value per *request
name*, and matchAttribute's list intersection is not widened again on remove.
"""

from __future__ import annotations

from typing import Any, Protocol

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Attr, SliceDevice

__all__ = ["Constraint", "DistinctAttribute", "MatchAttribute", "build_constraints", "lookup_attribute"]


class Constraint(Protocol):
    def add(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> bool: ...

    def remove(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> None: ...


def lookup_attribute(device: SliceDevice, driver: str, name: str) -> Attr | None:
    """The attribute by fully qualified name, or by bare id when the domain is the driver's."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


def _typed_set(attr: Attr) -> tuple[str, frozenset[Any]]:
    return attr.kind, attr.as_set()


def _intersects(a: tuple[str, frozenset[Any]], b: tuple[str, frozenset[Any]]) -> bool:
    return a[0] == b[0] and not a[1].isdisjoint(b[1])


def _scalar_equal(a: Attr, b: Attr) -> bool:
    return not a.is_list and not b.is_list and a.kind == b.kind and a.value == b.value


class _Scoped:
    __slots__ = ("names",)

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.names:
            return True
        if not subrequest:
            return request in self.names
        return request in self.names or f"{request}/{subrequest}" in self.names


class MatchAttribute(_Scoped):
    __slots__ = ("attribute", "lists", "first", "intersection", "count", "strict", "history")

    def __init__(self, names: frozenset[str], attribute: str, lists: bool, strict: bool = False) -> None:
        super().__init__(names)
        self.attribute = attribute
        self.lists = lists
        self.first: Attr | None = None
        self.intersection: tuple[str, frozenset[Any]] = ("", frozenset())
        self.count = 0
        self.strict = strict  # restore the intersection on remove (upstream does not)
        self.history: list[tuple[str, frozenset[Any]]] = []

    def add(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        if self.count == 0:
            if self.lists:
                self.intersection = _typed_set(attr)
            else:
                self.first = attr
            self.count = 1
            return True
        if self.lists:
            new = _typed_set(attr)
            if not _intersects(self.intersection, new):
                return False
            if self.strict:
                self.history.append(self.intersection)
            self.intersection = (new[0], self.intersection[1] & new[1])
        elif self.first is None or not _scalar_equal(attr, self.first):
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> None:
        if self.applies(request, subrequest):
            self.count -= 1
            if self.strict and self.lists and self.count > 0 and self.history:
                self.intersection = self.history.pop()


class DistinctAttribute(_Scoped):
    __slots__ = ("attribute", "lists", "values", "count", "strict", "stack")

    def __init__(self, names: frozenset[str], attribute: str, lists: bool, strict: bool = False) -> None:
        super().__init__(names)
        self.attribute = attribute
        self.lists = lists
        self.values: dict[str, Attr] = {}  # keyed by request name, as upstream
        self.count = 0
        self.strict = strict  # compare with every device taken, not the last one per request
        self.stack: list[Attr] = []

    def add(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        if self.count > 0 and not self._distinct(attr):
            return False
        self.values[request] = attr
        self.stack.append(attr)
        self.count += 1
        return True

    def _distinct(self, attr: Attr) -> bool:
        taken = self.stack if self.strict else list(self.values.values())
        if self.lists:
            new = _typed_set(attr)
            return not any(_intersects(new, _typed_set(old)) for old in taken)
        for old in taken:
            if attr.is_list:
                return False  # upstream: unknown value type
            if not old.is_list and old.kind == attr.kind and old.value == attr.value:
                return False
        return True

    def remove(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> None:
        if self.applies(request, subrequest):
            self.values.pop(request, None)
            if self.stack:
                self.stack.pop()
            self.count -= 1


def build_constraints(
    claim_ref: str, raw: tuple[dict[str, Any], ...], lists: bool, strict: bool = False
) -> list[Constraint]:
    """The claim's constraints; `strict` gives the corrected semantics of the scored mode."""
    result: list[Constraint] = []
    for i, c in enumerate(raw):
        names = frozenset(c.get("requests") or ())
        if c.get("matchAttribute"):
            result.append(MatchAttribute(names, c["matchAttribute"], lists, strict))
        elif c.get("distinctAttribute"):
            result.append(DistinctAttribute(names, c["distinctAttribute"], lists, strict))
        else:
            raise AllocationError(
                f"claim {claim_ref}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
    return result
