"""CEL macros compiled to loops: has, all/exists/exists_one, map/filter, two-variable comprehensions, cel.bind,
optMap/optFlatMap, sortBy.

Each loop copies the activation once, binds its variables in the copy, charges the cost meter per iteration
(so a runaway nest stops with `CelCostError`) and applies cel-spec's error absorption: `all` is false as soon
as one predicate is false and `exists` true as soon as one is true, even when other iterations errored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from dra.cel import stdlib
from dra.cel._functions import type_name
from dra.cel.cost import COST_KEY
from dra.cel.nodes import Fn, Node, as_fn
from dra.cel.runtime import Dispatcher
from dra.cel.syntax import Tree
from dra.cel.values import Optional
from dra.errors import CelCostError, CelRuntimeError

if TYPE_CHECKING:
    from dra.cel.compiler import Compiler  # the compiler calls these functions with itself

__all__ = ["bind", "compile_macro", "has"]


def _ident(compiler: Compiler, tree: Any) -> str:
    node = tree
    while isinstance(node, Tree):
        if node.data == "ident":
            return str(node.children[0])
        if len(node.children) != 1:
            break
        node = node.children[0]
    raise compiler.error(tree, "argument is not an identifier")


def _body(compiler: Compiler, names: list[str], tree: Any) -> tuple[Fn, int]:
    before = compiler.nodes
    compiler.scope.extend(names)
    try:
        fn = as_fn(compiler.compile(tree))
    finally:
        del compiler.scope[len(compiler.scope) - len(names) :]
    return fn, compiler.nodes - before


def has(compiler: Compiler, tree: Any, args: list[Any]) -> Node:
    node = args[0] if len(args) == 1 else None
    while (
        node is not None and node.data != "member_dot" and len(node.children) == 1 and hasattr(node.children[0], "data")
    ):
        node = node.children[0]
    if node is None or getattr(node, "data", None) != "member_dot":
        raise compiler.error(tree, "invalid argument to has() macro")
    target = as_fn(compiler.compile(node.children[0]))
    field = str(node.children[1])
    has_field = stdlib.has_field

    def has_(a: dict[str, Any]) -> bool:
        o = target(a)
        if type(o) is dict:
            return field in o
        return has_field(o, field)

    return has_


def bind(compiler: Compiler, tree: Any, args: list[Any]) -> Node:
    if len(args) != 3:
        raise compiler.error(tree, "cel.bind() takes 3 arguments (name, init, expr)")
    name = _ident(compiler, args[0])
    init = as_fn(compiler.compile(args[1]))
    body, _ = _body(compiler, [name], args[2])

    def bind_(a: dict[str, Any]) -> Any:
        local = dict(a)
        local[name] = init(a)
        return body(local)

    return bind_


# cel-go's runtime type names, as its "expected iterable type" error prints them.
_GO_TYPES = {bool: "types.Bool", int: "types.Int", float: "types.Double", str: "types.String", bytes: "types.Bytes"}


def _not_iterable(macro: str, target: Any) -> CelRuntimeError:
    go = _GO_TYPES.get(type(target))
    if go is None:
        go = "types.Null" if target is None else "cel." + type(target).__name__
    return CelRuntimeError(f"{macro}(): cannot iterate over '{type_name(target)}': got '{go}', expected iterable type")


def _range(target: Any, macro: str) -> list[Any]:
    if type(target) is list:
        return target
    if isinstance(target, dict):
        return list(target)
    raise _not_iterable(macro, target)


def _pairs(target: Any, macro: str) -> Iterator[tuple[Any, Any]]:
    if type(target) is list:
        return iter(enumerate(target))
    if isinstance(target, dict):
        return iter(list(target.items()))
    raise _not_iterable(macro, target)


def _bool(v: Any, macro: str) -> bool:
    if v is True or v is False:
        return v
    raise stdlib.no_overload(macro, v)


def compile_macro(compiler: Compiler, tree: Any, name: str, target_tree: Any, args: list[Any]) -> Node:
    target = as_fn(compiler.compile(target_tree))
    if name in ("optMap", "optFlatMap"):
        if len(args) != 2:
            raise compiler.error(tree, f"{name}() takes 2 arguments")
        return _opt_map(compiler, name, target, args)
    if name == "sortBy":
        return _sort_by(compiler, tree, target, args)
    two = len(args) == 3 and name in ("all", "exists", "existsOne", "transformList", "transformMap")
    two = two or (len(args) in (3, 4) and name in ("transformList", "transformMap", "transformMapEntry"))
    if two:
        return _two_var(compiler, tree, name, target, args)
    if name in ("all", "exists", "exists_one", "existsOne", "filter") and len(args) != 2:
        raise compiler.error(tree, f"{name}() takes 2 arguments (var, predicate)")
    if name == "map" and len(args) not in (2, 3):
        raise compiler.error(tree, "map() takes 2 or 3 arguments (var, [filter,] transform)")
    if name in ("transformList", "transformMap", "transformMapEntry"):
        raise compiler.error(tree, f"{name}() takes 3 or 4 arguments")
    var = _ident(compiler, args[0])
    step_fns = [_body(compiler, [var], t) for t in args[1:]]
    step = 1 + sum(n for _, n in step_fns)
    fns = [f for f, _ in step_fns]
    return _single_var(name, var, target, fns, step)


def _meter_step(a: dict[str, Any]) -> Callable[[int], None] | None:
    meter = a.get(COST_KEY)
    return None if meter is None else meter.charge


def _single_var(name: str, var: str, target: Fn, fns: list[Fn], step: int) -> Fn:
    pred = fns[0]
    if name == "all" or name == "exists":
        decisive = name == "exists"

        def quantifier(a: dict[str, Any]) -> bool:
            items = _range(target(a), name)
            local = dict(a)
            charge = _meter_step(a)
            err: CelRuntimeError | None = None
            for x in items:
                if charge is not None:
                    charge(step)
                local[var] = x
                try:
                    if _bool(pred(local), name) is decisive:
                        return decisive
                except CelCostError:
                    raise
                except CelRuntimeError as e:
                    err = err or e
            if err is not None:
                raise err
            return not decisive

        return quantifier
    if name in ("exists_one", "existsOne"):

        def exists_one(a: dict[str, Any]) -> bool:
            items = _range(target(a), name)
            local = dict(a)
            charge = _meter_step(a)
            count = 0
            for x in items:
                if charge is not None:
                    charge(step)
                local[var] = x
                if _bool(pred(local), name):
                    count += 1
            return count == 1

        return exists_one
    if name == "filter":

        def filter_(a: dict[str, Any]) -> list[Any]:
            items = _range(target(a), name)
            local = dict(a)
            charge = _meter_step(a)
            out = []
            for x in items:
                if charge is not None:
                    charge(step)
                local[var] = x
                if _bool(pred(local), name):
                    out.append(x)
            return out

        return filter_
    keep = fns[0] if len(fns) == 2 else None
    transform = fns[-1]

    def map_(a: dict[str, Any]) -> list[Any]:
        items = _range(target(a), name)
        local = dict(a)
        charge = _meter_step(a)
        out = []
        for x in items:
            if charge is not None:
                charge(step)
            local[var] = x
            if keep is not None and not _bool(keep(local), name):
                continue
            out.append(transform(local))
        return out

    return map_


def _two_var(compiler: Compiler, tree: Any, name: str, target: Fn, args: list[Any]) -> Fn:
    k_var = _ident(compiler, args[0])
    v_var = _ident(compiler, args[1])
    if k_var == v_var:
        raise compiler.error(tree, f"{name}(): the two variables must differ ('{k_var}')")
    step_fns = [_body(compiler, [k_var, v_var], t) for t in args[2:]]
    step = 1 + sum(n for _, n in step_fns)
    fns = [f for f, _ in step_fns]
    pred = fns[0]
    keep = fns[0] if len(fns) == 2 else None
    transform = fns[-1]

    if name in ("all", "exists"):
        decisive = name == "exists"

        def quantifier(a: dict[str, Any]) -> bool:
            local = dict(a)
            charge = _meter_step(a)
            err: CelRuntimeError | None = None
            for k, v in _pairs(target(a), name):
                if charge is not None:
                    charge(step)
                local[k_var] = k
                local[v_var] = v
                try:
                    if _bool(pred(local), name) is decisive:
                        return decisive
                except CelCostError:
                    raise
                except CelRuntimeError as e:
                    err = err or e
            if err is not None:
                raise err
            return not decisive

        return quantifier
    if name == "existsOne":

        def exists_one(a: dict[str, Any]) -> bool:
            local = dict(a)
            charge = _meter_step(a)
            count = 0
            for k, v in _pairs(target(a), name):
                if charge is not None:
                    charge(step)
                local[k_var] = k
                local[v_var] = v
                if _bool(pred(local), name):
                    count += 1
            return count == 1

        return exists_one

    def transform_(a: dict[str, Any]) -> Any:
        local = dict(a)
        charge = _meter_step(a)
        out_list: list[Any] = []
        out_map: dict[Any, Any] = {}
        for k, v in _pairs(target(a), name):
            if charge is not None:
                charge(step)
            local[k_var] = k
            local[v_var] = v
            if keep is not None and not _bool(keep(local), name):
                continue
            r = transform(local)
            if name == "transformList":
                out_list.append(r)
            elif name == "transformMap":
                out_map[k] = r
            else:
                if not isinstance(r, dict):
                    raise stdlib.no_overload(name, r)
                for rk, rv in r.items():
                    if rk in out_map:
                        raise CelRuntimeError(f"insert failed: key {rk} already exists")
                    out_map[rk] = rv
        return out_list if name == "transformList" else out_map

    return transform_


def _opt_map(compiler: Compiler, name: str, target: Fn, args: list[Any]) -> Fn:
    var = _ident(compiler, args[0])
    body, _ = _body(compiler, [var], args[1])

    def opt_map(a: dict[str, Any]) -> Optional:
        o = target(a)
        if not isinstance(o, Optional):
            raise stdlib.no_overload(name, o)
        if not o.has_value():
            return o
        local = dict(a)
        local[var] = o.value()
        r = body(local)
        if name == "optMap":
            return Optional.of(r)
        if not isinstance(r, Optional):
            raise stdlib.no_overload(name, r)
        return r

    return opt_map


def _sort_by(compiler: Compiler, tree: Any, target: Fn, args: list[Any]) -> Fn:
    """`l.sortBy(x, key)`: as cel-go expands it, `l.@sortByAssociatedKeys(l.map(x, key))` (lists ext v2)."""
    if len(args) != 2:
        raise compiler.error(tree, "sortBy() takes 2 arguments (var, key expression)")
    overloads = compiler.registry.members.get("@sortByAssociatedKeys")
    if not overloads:
        raise compiler.error(tree, "undeclared reference to 'sortBy'")
    var = _ident(compiler, args[0])
    key, n = _body(compiler, [var], args[1])
    keys_of = _single_var("map", var, target, [key], 1 + n)
    sort = Dispatcher("sortBy", overloads)
    return lambda a: sort(target(a), keys_of(a))
