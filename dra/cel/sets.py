"""cel-go `ext.Sets`: `sets.contains`, `sets.equivalent`, `sets.intersects` over lists with CEL equality.

Equality is CEL's `==` (so `1`, `1u` and `1.0` are the same element, and lists compare deeply).
"""

from __future__ import annotations

from typing import Any

from dra.cel._functions import FunctionRegistry
from dra.cel.stdlib import contains

__all__ = ["REGISTRY"]

REGISTRY = FunctionRegistry()


def _contains_all(values: list[Any], sublist: list[Any]) -> bool:
    return all(contains(item, values) for item in sublist)


@REGISTRY.function("sets.contains", list, list)
def sets_contains(values: list[Any], sublist: list[Any]) -> bool:
    return _contains_all(values, sublist)


@REGISTRY.function("sets.equivalent", list, list)
def sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return _contains_all(a, b) and _contains_all(b, a)


@REGISTRY.function("sets.intersects", list, list)
def sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(contains(item, b) for item in a)
