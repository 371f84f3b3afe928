"""The part of cel-go's type checker that literal types and `dyn()` make visible before evaluation.

The compiler has no declared types beyond its variables, so it checks what the checker would reject from
literals alone: operands of the wrong type, mixed aggregate literals, calls no overload fits, constant regex
patterns and `format` strings. Every rejection is a `CelCompileError` at the offending subtree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from dra.cel import strings
from dra.cel._functions import FunctionRegistry, Overload, type_name
from dra.cel.literals import string_literal
from dra.cel.nodes import Const, Fn, Node
from dra.cel.regex import GoRegexError, compile_go_regex
from dra.cel.trees import list_literal, single_literal
from dra.cel.values import CelType
from dra.errors import CelCompileError

__all__ = ["TYPE_IDENTS", "TypeChecker", "literal_type_name", "type_identifiers"]

TYPE_IDENTS: Final = {
    name: CelType(name)
    for name in ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type")
} | {
    "google.protobuf.Duration": CelType("google.protobuf.Duration"),
    "google.protobuf.Timestamp": CelType("google.protobuf.Timestamp"),
    "optional_type": CelType("optional_type"),
}

_UNKNOWN: Final = object()
_REGEX_FUNCTIONS: Final = frozenset({"matches", "find", "findAll"})
_SAME_ELEMENT: Final = frozenset({"indexOf", "lastIndexOf", "sets.contains", "sets.equivalent", "sets.intersects"})


def type_identifiers(registry: FunctionRegistry) -> dict[str, CelType]:
    """The type identifiers in scope: CEL's own and the library classes the registry's overloads name
    (`net.IP`, `kubernetes.Quantity`). Kept on the registry until an overload is added (every compile asks)."""
    tables = (registry.globals, registry.members)
    signature = tuple((id(table), sum(map(len, table.values()))) for table in tables)
    kept = getattr(registry, "_type_identifiers", None)
    if kept is not None and kept[0] == signature:
        found: dict[str, CelType] = kept[1]
        return found
    found = _type_identifiers(registry)
    registry._type_identifiers = (signature, found)  # type: ignore[attr-defined]
    return found


def _type_identifiers(registry: FunctionRegistry) -> dict[str, CelType]:
    found: dict[str, CelType] = dict(TYPE_IDENTS)
    for table in (registry.globals, registry.members):
        for overloads in table.values():
            for ov in overloads:
                for t in ov.arg_types:
                    name = getattr(t, "cel_type_name", None)
                    if isinstance(name, str):
                        found[name] = CelType(name)
    return found


def literal_type_name(v: Any) -> str:
    """Type names as cel-go's checker prints them for literal arguments (null's type prints as `null`)."""
    if v is None:
        return "null"
    if type(v) is list:
        kinds = {literal_type_name(x) for x in v}
        return f"list({kinds.pop() if len(kinds) == 1 else 'dyn'})"
    if type(v) is dict:
        ks = {literal_type_name(x) for x in v}
        vs = {literal_type_name(x) for x in v.values()}
        return f"map({ks.pop() if len(ks) == 1 else 'dyn'}, {vs.pop() if len(vs) == 1 else 'dyn'})"
    return type_name(v)


def _accepts_one(expected: type, value: Any) -> bool:
    return Overload((expected,), lambda v: v).accepts((value,))


class TypeChecker:
    """The checks of one compilation; `error(tree, message)` builds the compile error at `tree`."""

    def __init__(self, error: Callable[[Any, str], CelCompileError]) -> None:
        self.error = error
        self.dyn_nodes: set[int] = set()  # ids of closures whose static type is dyn (dyn() calls, variables)
        # Inside a `format` call (receiver or arguments, at any depth) aggregate literals may mix types: cel-go's
        # strings library exempts it from HomogeneousAggregateLiterals.
        self.format_depth = 0
        self.list_elements: dict[int, list[Node]] = {}  # list literal tree id -> element nodes, in format calls

    def mark_dyn(self, fn: Fn) -> None:
        """`fn`'s static type is dyn."""
        self.dyn_nodes.add(id(fn))

    def static_type(self, n: Node) -> str | None:
        """The checker's type for a literal or a dyn-typed node; None when this compiler cannot tell."""
        if isinstance(n, Const):
            if type(n.value) in (list, dict) and not n.value:
                return None  # an empty literal's element type is free: it unifies with anything
            return literal_type_name(n.value)
        return "dyn" if id(n) in self.dyn_nodes else None

    def homogeneous(self, tree: Any, nodes: list[Node]) -> None:
        """Kubernetes' HomogeneousAggregateLiterals: literal elements (keys, values) share one exact type."""
        if self.format_depth:
            return
        first: str | None = None
        for n in nodes:
            t = self.static_type(n)
            if t is None:
                continue
            if first is None:
                first = t
            elif t != first:
                raise self.error(tree, f"expected type '{first}' but found '{t}'")

    def expect_bool(self, tree: Any, n: Node) -> None:
        """The checker's "expected type 'bool'" for a literal operand of a logical operator or condition."""
        t = self.static_type(n)
        if t is not None and t not in ("bool", "dyn"):
            raise self.error(tree, f"expected type 'bool' but found '{t}'")

    def same_type(self, tree: Any, name: str, *nodes: Node) -> None:
        """Operands whose literal types differ match no overload of `name` (cel-go's checker)."""
        types = [self.static_type(n) for n in nodes]
        known = [t for t in types if t is not None and t not in ("dyn", "null")]
        if len(set(known)) > 1 and len(known) == len(types):
            raise self.error(tree, f"found no matching overload for '{name}' applied to '({', '.join(known)})'")

    def overloads(
        self, tree: Any, name: str, overloads: list[Overload], args: list[Node], member: bool
    ) -> list[Overload]:
        """The overloads of `name` that the literal arguments fit; a constant regex pattern must compile."""
        candidates = [ov for ov in overloads if len(ov.arg_types) == len(args)]
        consts = [n.value if isinstance(n, Const) else _UNKNOWN for n in args]
        fitting = [
            ov
            for ov in candidates
            if all(c is _UNKNOWN or _accepts_one(t, c) for t, c in zip(ov.arg_types, consts, strict=True))
        ]
        if not fitting or (name in _SAME_ELEMENT and len(args) == 2 and not self._elements_unify(name, args)):
            shown = ["dyn" if c is _UNKNOWN else literal_type_name(c) for c in consts]
            applied = f"{shown[0]}.({', '.join(shown[1:])})" if member else f"({', '.join(shown)})"
            raise self.error(tree, f"found no matching overload for '{name}' applied to '{applied}'")
        if name in _REGEX_FUNCTIONS and len(args) >= 2 and isinstance(args[1], Const) and type(args[1].value) is str:
            try:  # cel-go compiles constant patterns when the program is built
                compile_go_regex(args[1].value)
            except GoRegexError as e:
                # The receiver-style `matches` is checked by cel-go's regex literal validator, which words it so.
                raise self.error(tree, "invalid matches argument" if member and name == "matches" else str(e)) from None
        return fitting

    def _elements_unify(self, name: str, args: list[Node]) -> bool:
        """The checker's type parameter A in `list(A).indexOf(A)` and `sets.contains(list(A), list(A))`: false
        only when both literal types are known, free of dyn, and differ."""
        first, second = (self.static_type(n) for n in args)
        if first is None or second is None or not first.startswith("list("):
            return True
        element = first[len("list(") : -1]
        if name.startswith("sets."):
            if not second.startswith("list("):
                return True
            second = second[len("list(") : -1]
        return "dyn" in element or "dyn" in second or element == second

    def check_format(self, tree: Any, target_tree: Any, arg_trees: list[Any]) -> None:
        """cel-go's stringFormatValidator: `<string literal>.format(<list literal>)` is checked at compile time."""
        lit = single_literal(target_tree)
        if lit is None or lit.type not in ("STRING_LIT", "MLSTRING_LIT") or len(arg_trees) != 1:
            return
        list_tree = list_literal(arg_trees[0])
        elements = self.list_elements.get(id(list_tree)) if list_tree is not None else None
        if elements is None:
            return
        elem_trees = list(list_tree.children[0].children) if list_tree.children else []  # type: ignore[union-attr]
        args = [n.value if isinstance(n, Const) else strings.UNCHECKED for n in elements]
        failure = strings.check_format(string_literal(lit.value), args)
        if failure is not None:
            index, message = failure
            raise self.error(tree if index is None else elem_trees[index], message)
