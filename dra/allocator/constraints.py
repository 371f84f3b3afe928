"""Claim constraints with upstream's add/remove protocol (constraint.go, allocator_experimental.go).

`matchAttribute`: every device of the named requests has the attribute with one common value (with list
attributes on, a non-empty common intersection, kept as a stack so that remove restores it).
`distinctAttribute`: each new value differs from every value taken so far (with lists: disjoint sets).
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
    return attr.kind, attr.values


def _intersects(a: tuple[str, frozenset[Any]], b: tuple[str, frozenset[Any]]) -> bool:
    return a[0] == b[0] and not a[1].isdisjoint(b[1])


def _scalar_equal(a: Attr, b: Attr) -> bool:
    return not a.is_list and not b.is_list and a.kind == b.kind and a.value == b.value


class _Scoped:
    __slots__ = ("names", "attribute", "_lookups")

    def __init__(self, names: frozenset[str], attribute: str) -> None:
        self.names = names
        self.attribute = attribute
        self._lookups: dict[SliceDevice, Attr | None] = {}

    def lookup(self, device: SliceDevice, driver: str) -> Attr | None:
        try:
            return self._lookups[device]
        except KeyError:
            attr = self._lookups[device] = lookup_attribute(device, driver, self.attribute)
            return attr

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.names:
            return True
        if not subrequest:
            return request in self.names
        return request in self.names or f"{request}/{subrequest}" in self.names


class MatchAttribute(_Scoped):
    __slots__ = ("lists", "first", "stack", "count")

    def __init__(self, names: frozenset[str], attribute: str, lists: bool) -> None:
        super().__init__(names, attribute)
        self.lists = lists
        self.first: Attr | None = None
        self.stack: list[tuple[str, frozenset[Any]]] = []  # the intersection after each device
        self.count = 0

    def add(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = self.lookup(device, driver)
        if attr is None:
            return False
        if self.count == 0:
            if self.lists:
                self.stack = [_typed_set(attr)]
            else:
                self.first = attr
            self.count = 1
            return True
        if self.lists:
            new = _typed_set(attr)
            current = self.stack[self.count - 1]
            if not _intersects(current, new):
                return False
            self.stack.append((new[0], current[1] & new[1]))
        elif self.first is None or not _scalar_equal(attr, self.first):
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> None:
        if self.applies(request, subrequest):
            self.count -= 1
            if self.lists:
                del self.stack[self.count :]


class DistinctAttribute(_Scoped):
    __slots__ = ("lists", "stack")

    def __init__(self, names: frozenset[str], attribute: str, lists: bool) -> None:
        super().__init__(names, attribute)
        self.lists = lists
        self.stack: list[Attr] = []

    def add(self, request: str, subrequest: str, device: SliceDevice, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = self.lookup(device, driver)
        if attr is None:
            return False
        if not self._distinct(attr):
            return False
        self.stack.append(attr)
        return True

    def _distinct(self, attr: Attr) -> bool:
        taken = self.stack
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
        if self.applies(request, subrequest) and self.stack:
            self.stack.pop()


def build_constraints(claim_ref: str, raw: tuple[dict[str, Any], ...], lists: bool) -> list[Constraint]:
    """The claim's constraints in declaration order."""
    result: list[Constraint] = []
    for i, c in enumerate(raw):
        names = frozenset(c.get("requests") or ())
        if c.get("matchAttribute"):
            result.append(MatchAttribute(names, c["matchAttribute"], lists))
        elif c.get("distinctAttribute"):
            result.append(DistinctAttribute(names, c["distinctAttribute"], lists))
        else:
            raise AllocationError(
                f"claim {claim_ref}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
    return result
