"""The function registry that CEL libraries register into and the evaluator dispatches through.

A library module declares overloads with `@registry.function(name, *arg_types)` for global functions
(namespaced names such as "ip.isCanonical" or "sets.contains" are plain names here) and
`@registry.member(name, receiver_type, *arg_types)` for receiver-style calls (`x.f(a)`).
Types are Python classes of the runtime values (see `dra.cel.values`); `object` matches anything.
Dispatch picks the first overload whose types accept the arguments (checked with `type(v) is T` or
issubclass for our own value classes and maps, never `isinstance(True, int)`), and raises `NoMatchingOverload`
with a cel-go style message otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dra.errors import CelRuntimeError

__all__ = ["FunctionRegistry", "NoMatchingOverload", "Overload", "type_name"]

Impl = Callable[..., Any]


class NoMatchingOverload(CelRuntimeError):
    """Raised by `call_global` / `call_member` when no overload accepts the argument types."""

    def __init__(self, name: str, args: tuple[Any, ...]) -> None:
        self.name = name
        self.args_types = tuple(type_name(a) for a in args)
        super().__init__(f"found no matching overload for '{name}' applied to '({', '.join(self.args_types)})'")


def type_name(value: Any) -> str:
    """CEL's name for the runtime type of `value` (used in error messages)."""
    cel_name = getattr(type(value), "cel_type_name", None)
    if isinstance(cel_name, str):
        return cel_name
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if t is list:
        return "list(dyn)"
    if isinstance(value, dict):
        return "map(dyn, dyn)"
    if value is None:
        return "null_type"
    return t.__name__


def _accepts(expected: type, value: Any) -> bool:
    if expected is object:
        return True
    t = type(value)
    if t is expected:
        return True
    # Builtins are matched exactly (bool is not an int in CEL); maps also by subclass (the DRA device's
    # domain maps are a dict subclass); our own value classes by subclass.
    if expected is dict:
        return isinstance(value, dict)
    if expected in (bool, int, float, str, bytes, list, type(None)):
        return False
    return issubclass(t, expected)


@dataclass(frozen=True)
class Overload:
    arg_types: tuple[type, ...]
    impl: Impl

    def accepts(self, args: tuple[Any, ...]) -> bool:
        return len(args) == len(self.arg_types) and all(
            _accepts(t, a) for t, a in zip(self.arg_types, args, strict=True)
        )


@dataclass
class FunctionRegistry:
    """Overloads by name, for global functions and for member functions (receiver first)."""

    globals: dict[str, list[Overload]] = field(default_factory=dict)
    members: dict[str, list[Overload]] = field(default_factory=dict)

    def function(self, name: str, *arg_types: type) -> Callable[[Impl], Impl]:
        def register(impl: Impl) -> Impl:
            self.globals.setdefault(name, []).append(Overload(tuple(arg_types), impl))
            return impl

        return register

    def member(self, name: str, receiver: type, *arg_types: type) -> Callable[[Impl], Impl]:
        def register(impl: Impl) -> Impl:
            self.members.setdefault(name, []).append(Overload((receiver, *arg_types), impl))
            return impl

        return register

    def merged(self, others: Iterable[FunctionRegistry]) -> FunctionRegistry:
        out = FunctionRegistry(
            {k: list(v) for k, v in self.globals.items()}, {k: list(v) for k, v in self.members.items()}
        )
        for other in others:
            for k, v in other.globals.items():
                out.globals.setdefault(k, []).extend(v)
            for k, v in other.members.items():
                out.members.setdefault(k, []).extend(v)
        return out

    def call_global(self, name: str, args: tuple[Any, ...]) -> Any:
        for ov in self.globals.get(name, ()):
            if ov.accepts(args):
                return ov.impl(*args)
        raise NoMatchingOverload(name, args)

    def call_member(self, name: str, receiver: Any, args: tuple[Any, ...]) -> Any:
        full = (receiver, *args)
        for ov in self.members.get(name, ()):
            if ov.accepts(full):
                return ov.impl(*full)
        raise NoMatchingOverload(name, full)
