"""What compiling one CEL node yields: a closure over the activation (`Fn`) or a compile-time value (`Const`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Const", "Fn", "Node", "as_fn"]

Fn = Callable[[dict[str, Any]], Any]


class Const:
    """A compile-time value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


Node = Const | Fn


def as_fn(n: Node) -> Fn:
    """The node as a closure (a constant becomes one returning it)."""
    if isinstance(n, Const):
        v = n.value
        return lambda a: v
    return n
