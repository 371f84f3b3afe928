"""Compile the Lark tree of our grammar (cel.lark) into Python closures `fn(activation) -> value`: code generation.

Each node becomes a closure over its children's closures, or a `Const` when it folds at compile time.
Runtime errors are `CelRuntimeError` exceptions; `&&`, `||`, `?:` and comprehension predicates absorb them
as cel-spec requires. Activation lookups are direct dict indexing (`a["device"]["attributes"][...]` for
constant paths), and comprehensions copy the activation once per loop, never per evaluation. What the checker
would reject is `typecheck`'s job, reading literal tokens `literals`', what the closures call `runtime`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from dra.cel import macros, stdlib
from dra.cel._functions import FunctionRegistry, Overload, type_name
from dra.cel.cost import COST_KEY, SIZED_FUNCTIONS, add_cost, cost_function
from dra.cel.literals import bytes_literal, int_literal, string_literal, uint_literal
from dra.cel.nodes import Const, Fn, Node, as_fn
from dra.cel.runtime import Dispatcher, guarded, opt_index, opt_select, runtime_error
from dra.cel.syntax import Token, Tree
from dra.cel.trees import optional_entry, qualified_name, single_literal
from dra.cel.typecheck import TypeChecker, type_identifiers
from dra.cel.values import INT64_MAX, INT64_MIN, Optional, Uint
from dra.errors import CelCompileError, CelCostError, CelRuntimeError

__all__ = ["MACROS", "Compiler"]

MACROS: Final = frozenset(
    {
        "all",
        "exists",
        "exists_one",
        "existsOne",
        "map",
        "filter",
        "transformList",
        "transformMap",
        "transformMapEntry",
        "optMap",
        "optFlatMap",
        "sortBy",
    }
)


class Compiler:
    """One compilation: the declared variables, the function registry and the bound comprehension names."""

    def __init__(
        self,
        source: str,
        variables: frozenset[str],
        registry: FunctionRegistry,
        track_cost: bool,
        dyn_variables: bool = True,
        bindings: bool = False,
    ) -> None:
        self.source = source
        self.bindings = bindings  # cel.bind: DRA adds ext.Bindings, the Kubernetes base environment does not
        self.dyn_variables = dyn_variables
        self.variables = variables
        self.registry = registry
        self.track_cost = track_cost
        self.scope: list[str] = []
        self.nodes = 0
        # What the calls folded at compile time would have cost at run time (cel-go evaluates them there).
        self.folded_cost = 0
        self.types = TypeChecker(self.error)
        self.type_idents = type_identifiers(registry)

    # -- errors --------------------------------------------------------------------------------------------

    def error(self, tree: Any, message: str) -> CelCompileError:
        meta = getattr(tree, "meta", None)
        line = getattr(meta, "line", None) if meta is not None and not getattr(meta, "empty", True) else None
        column = getattr(meta, "column", None) if line is not None else None
        pos = getattr(meta, "start_pos", None) if line is not None else None
        where = f"<input>:{line}:{column}: " if isinstance(line, int) and isinstance(column, int) else ""
        return CelCompileError(f"{where}{message}", expression=self.source, position=pos)

    # -- entry ---------------------------------------------------------------------------------------------

    def compile(self, tree: Tree) -> Node:
        # Skip the grammar's single-child precedence wrappers in a loop: deep nesting then costs one Python
        # frame per real node instead of ten.
        while tree.data in _PASS_THROUGH and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
            tree = tree.children[0]
        self.nodes += 1
        rule = tree.data
        handler = getattr(self, "_c_" + rule, None)
        if handler is None:
            if len(tree.children) == 1 and isinstance(tree.children[0], Tree):
                self.nodes -= 1
                return self.compile(tree.children[0])
            raise self.error(tree, f"unsupported syntax '{rule}'")
        result: Node = handler(tree)
        return result

    def fold(self, f: Callable[..., Any], *nodes: Node) -> Node | None:
        """Evaluate now when every input is constant and the evaluation succeeds.

        An operator applied to constants of types it has no overload for is what cel-go's checker rejects,
        so that becomes a compile error; other errors (division by zero, ...) stay runtime errors.
        """
        if all(isinstance(n, Const) for n in nodes):
            try:
                return Const(f(*(n.value for n in nodes)))  # type: ignore[union-attr]
            except CelRuntimeError as e:
                # cel-go's checker lets null through to a runtime error (null < null).
                has_null = any(n.value is None for n in nodes)  # type: ignore[union-attr]
                if e.message.startswith("no such overload: ") and not has_null:
                    sig = e.message.removeprefix("no such overload: ")
                    name, _, args = sig.partition("(")
                    raise CelCompileError(
                        f"found no matching overload for '{name}' applied to '({args}'", expression=self.source
                    ) from None
                return None
        return None

    # -- expressions ---------------------------------------------------------------------------------------

    def _c_expr(self, tree: Tree) -> Node:
        if len(tree.children) == 1:
            self.nodes -= 1
            return self.compile(tree.children[0])
        cond, then, other = (self.compile(c) for c in tree.children)
        self.types.expect_bool(tree.children[0], cond)
        self.types.same_type(tree.children[1], "_?_:_", then, other)
        if isinstance(cond, Const):
            if cond.value is True:
                return then
            if cond.value is False:
                return other
        c, t, o = as_fn(cond), as_fn(then), as_fn(other)

        def ternary(a: dict[str, Any]) -> Any:
            v = c(a)
            if v is True:
                return t(a)
            if v is False:
                return o(a)
            raise stdlib.no_overload("_?_:_", v)

        return ternary

    def _c_conditionalor(self, tree: Tree) -> Node:
        return self._logic(tree, is_or=True)

    def _c_conditionaland(self, tree: Tree) -> Node:
        return self._logic(tree, is_or=False)

    def _logic(self, tree: Tree, is_or: bool) -> Node:
        if len(tree.children) == 1:
            self.nodes -= 1
            return self.compile(tree.children[0])
        left = self.compile(tree.children[0])
        right = self.compile(tree.children[1])
        for side, side_tree in ((left, tree.children[0]), (right, tree.children[1])):
            self.types.expect_bool(side_tree, side)
        decisive = is_or  # the value that decides the result on its own
        if isinstance(left, Const) and left.value is decisive:
            return left
        if isinstance(right, Const) and right.value is decisive:
            return right
        if isinstance(left, Const) and left.value is (not decisive):
            return self._bool_check(right, "_||_" if is_or else "_&&_")
        if isinstance(right, Const) and right.value is (not decisive):
            return self._bool_check(left, "_||_" if is_or else "_&&_")
        lf, rf = as_fn(left), as_fn(right)
        name = "_||_" if is_or else "_&&_"

        def after_left_error(err: CelRuntimeError, a: dict[str, Any]) -> bool:
            try:
                rv = rf(a)
            except CelCostError:
                raise
            except CelRuntimeError:
                raise err from None
            if rv is decisive:
                return bool(decisive)
            raise err

        if is_or:

            def or_(a: dict[str, Any]) -> bool:
                try:
                    lv = lf(a)
                except CelCostError:
                    raise
                except CelRuntimeError as e:
                    return after_left_error(e, a)
                if lv is True:
                    return True
                if lv is not False:
                    return after_left_error(stdlib.no_overload(name, lv), a)
                rv = rf(a)
                if rv is True or rv is False:
                    return rv
                raise stdlib.no_overload(name, rv)

            return or_

        def and_(a: dict[str, Any]) -> bool:
            try:
                lv = lf(a)
            except CelCostError:
                raise
            except CelRuntimeError as e:
                return after_left_error(e, a)
            if lv is False:
                return False
            if lv is not True:
                return after_left_error(stdlib.no_overload(name, lv), a)
            rv = rf(a)
            if rv is True or rv is False:
                return rv
            raise stdlib.no_overload(name, rv)

        return and_

    def _bool_check(self, n: Node, name: str) -> Node:
        if isinstance(n, Const):
            if type(n.value) is bool:
                return n
            raise CelCompileError(f"found no matching overload for '{name}'", expression=self.source)
        f = n

        def check(a: dict[str, Any]) -> bool:
            v = f(a)
            if v is True or v is False:
                return v
            raise stdlib.no_overload(name, v)

        return check

    def _c_relation(self, tree: Tree) -> Node:
        if len(tree.children) == 1:
            self.nodes -= 1
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = op_tree.data
        left = self.compile(op_tree.children[0])
        right = self.compile(right_tree)
        if op == "relation_eq":
            self.types.same_type(tree, "_==_", left, right)
            return self._equality(left, right, negate=False)
        if op == "relation_ne":
            self.types.same_type(tree, "_!=_", left, right)
            return self._equality(left, right, negate=True)
        if op == "relation_in":
            folded = self.fold(stdlib.contains, left, right)
            if folded is not None:
                return folded
            lf, rf = as_fn(left), as_fn(right)
            contains = stdlib.contains
            if isinstance(right, Const) and type(right.value) is list and all(type(x) is str for x in right.value):
                strings = frozenset(right.value)

                def in_strings(a: dict[str, Any]) -> bool:
                    v = lf(a)
                    if type(v) is str:
                        return v in strings
                    return contains(v, right.value)

                return in_strings
            return lambda a: contains(lf(a), rf(a))
        return self._ordering(op, left, right)

    def _equality(self, left: Node, right: Node, negate: bool) -> Node:
        eq = stdlib.cel_equal
        folded = self.fold(eq, left, right)
        if folded is not None:
            return Const(not folded.value) if negate else folded  # type: ignore[union-attr]
        if isinstance(left, Const):
            left, right = right, left
        lf = as_fn(left)
        if isinstance(right, Const) and type(right.value) in (str, bytes, type(None)):
            c = right.value
            if negate:
                return lambda a: lf(a) != c
            return lambda a: lf(a) == c
        if isinstance(right, Const) and type(right.value) is int:
            ci = right.value

            def eq_int(a: dict[str, Any]) -> bool:
                v = lf(a)
                if type(v) is int:
                    return (v != ci) if negate else (v == ci)
                r = eq(v, ci)
                return (not r) if negate else r

            return eq_int
        rf = as_fn(right)
        if negate:
            return lambda a: not eq(lf(a), rf(a))
        return lambda a: eq(lf(a), rf(a))

    def _ordering(self, op: str, left: Node, right: Node) -> Node:
        name, accepted = {
            "relation_lt": ("_<_", (-1,)),
            "relation_le": ("_<=_", (-1, 0)),
            "relation_gt": ("_>_", (1,)),
            "relation_ge": ("_>=_", (0, 1)),
        }[op]
        compare = stdlib.compare

        def generic(x: Any, y: Any) -> bool:
            return compare(name, x, y) in accepted

        folded = self.fold(generic, left, right)
        if folded is not None:
            return folded
        if isinstance(right, Const) and type(right.value) in (int, float):
            c = right.value
            ct = type(c)
            lf = as_fn(left)
            if op == "relation_ge":

                def ge_c(a: dict[str, Any]) -> bool:
                    v = lf(a)
                    if type(v) is ct:  # same type: Python's operator is CEL's
                        return v >= c  # type: ignore[no-any-return]
                    return generic(v, c)

                return ge_c
            if op == "relation_gt":

                def gt_c(a: dict[str, Any]) -> bool:
                    v = lf(a)
                    if type(v) is ct:  # same type: Python's operator is CEL's
                        return v > c  # type: ignore[no-any-return]
                    return generic(v, c)

                return gt_c
            if op == "relation_le":

                def le_c(a: dict[str, Any]) -> bool:
                    v = lf(a)
                    if type(v) is ct:  # same type: Python's operator is CEL's
                        return v <= c  # type: ignore[no-any-return]
                    return generic(v, c)

                return le_c

            def lt_c(a: dict[str, Any]) -> bool:
                v = lf(a)
                if type(v) is ct:  # same type: Python's operator is CEL's
                    return v < c  # type: ignore[no-any-return]
                return generic(v, c)

            return lt_c
        lf, rf = as_fn(left), as_fn(right)
        return lambda a: generic(lf(a), rf(a))

    def _binary(self, tree: Tree, ops: dict[str, Callable[[Any, Any], Any]]) -> Node:
        if len(tree.children) == 1:
            self.nodes -= 1
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        f = ops[op_tree.data]
        left = self.compile(op_tree.children[0])
        right = self.compile(right_tree)
        if f is stdlib.add and isinstance(left, Const) and isinstance(right, Const):
            self.folded_cost += add_cost(left.value, right.value)
        folded = self.fold(f, left, right)
        if folded is not None:
            return folded
        lf, rf = as_fn(left), as_fn(right)
        if f is stdlib.add and self.track_cost:
            # Concatenation can double a string per step in loops or bindings: charge its size before building it.
            def costed_add(a: dict[str, Any]) -> Any:
                x = lf(a)
                y = rf(a)
                tx = type(x)
                if (tx is str or tx is bytes or tx is list) and type(y) is tx:
                    meter = a.get(COST_KEY)
                    if meter is not None:
                        meter.charge(add_cost(x, y))
                return stdlib.add(x, y)

            return costed_add
        if f is stdlib.add and isinstance(right, Const) and type(right.value) is int:
            c = right.value

            def add_int(a: dict[str, Any]) -> Any:
                v = lf(a)
                if type(v) is int:
                    r = v + c
                    if INT64_MIN <= r <= INT64_MAX:
                        return r
                return stdlib.add(v, c)

            return add_int
        return lambda a: f(lf(a), rf(a))

    def _c_addition(self, tree: Tree) -> Node:
        return self._binary(tree, {"addition_add": stdlib.add, "addition_sub": stdlib.sub})

    def _c_multiplication(self, tree: Tree) -> Node:
        return self._binary(
            tree,
            {"multiplication_mul": stdlib.mul, "multiplication_div": stdlib.div, "multiplication_mod": stdlib.mod},
        )

    def _c_unary(self, tree: Tree) -> Node:
        if len(tree.children) == 1:
            self.nodes -= 1
            return self.compile(tree.children[0])
        op, operand_tree = tree.children
        # cel-go's parser drops an even run of the same prefix operator (`!!x` is x, `--x` is x).
        run, inner = 1, operand_tree
        while inner.data == "unary" and len(inner.children) == 2 and inner.children[0].data == op.data:
            run, inner = run + 1, inner.children[1]
        if run % 2 == 0 and not (inner.data == "unary" and len(inner.children) == 2):
            return self.compile(inner)
        if run % 2 == 1 and run > 1 and not (inner.data == "unary" and len(inner.children) == 2):
            operand_tree = inner
        if op.data == "unary_neg":
            # Fold `-9223372036854775808`: the positive literal alone would overflow.
            lit = single_literal(operand_tree)
            if lit is not None and lit.type == "INT_LIT" and not lit.value.startswith("-"):
                return Const(self._literal_value(tree, int_literal, "-" + lit.value))
            operand = self.compile(operand_tree)
            folded = self.fold(stdlib.neg, operand)
            if folded is not None:
                return folded
            f = as_fn(operand)
            return lambda a: stdlib.neg(f(a))
        operand = self.compile(operand_tree)

        def not_(v: Any) -> bool:
            if v is True or v is False:
                return not v
            raise stdlib.no_overload("!_", v)

        folded = self.fold(not_, operand)
        if folded is not None:
            return folded
        f = as_fn(operand)
        return lambda a: not_(f(a))

    # -- members -------------------------------------------------------------------------------------------

    def _c_member_dot(self, tree: Tree) -> Node:
        target_tree, ident = tree.children
        field = str(ident)
        qualified = qualified_name(tree)
        if qualified is not None and qualified not in self.scope:
            head = qualified.split(".", 1)[0]
            if head not in self.variables and head not in self.scope:
                if qualified in self.type_idents:
                    return Const(self.type_idents[qualified])
                raise self.error(tree, f"undeclared reference to '{qualified}'")
        path = self.constant_path(tree)
        if path is not None:
            return self._variable_path(path)
        target = self.compile(target_tree)
        folded = self.fold(lambda o: stdlib.select(o, field), target)
        if folded is not None:
            return folded
        f = as_fn(target)
        sel = stdlib.select

        def select(a: dict[str, Any]) -> Any:
            o = f(a)
            if type(o) is dict:
                try:
                    return o[field]
                except KeyError:
                    pass
            return sel(o, field)

        return select

    def _c_member_index(self, tree: Tree) -> Node:
        target_tree, key_tree = tree.children
        path = self.constant_path(tree)
        if path is not None:
            return self._variable_path(path)
        target = self.compile(target_tree)
        key = self.compile(key_tree)
        folded = self.fold(stdlib.index, target, key)
        if folded is not None:
            return folded
        tf, kf = as_fn(target), as_fn(key)
        idx = stdlib.index
        return lambda a: idx(tf(a), kf(a))

    def _c_member_dot_opt(self, tree: Tree) -> Node:
        target_tree, ident = tree.children
        target = as_fn(self.compile(target_tree))
        field = str(ident)
        return lambda a: opt_select(target(a), field)

    def _c_member_index_opt(self, tree: Tree) -> Node:
        target_tree, key_tree = tree.children
        target = as_fn(self.compile(target_tree))
        key = as_fn(self.compile(key_tree))
        return lambda a: opt_index(target(a), key(a))

    def _c_member_object(self, tree: Tree) -> Node:
        raise self.error(tree, "message construction is not supported (no protobuf types in this environment)")

    def constant_path(self, tree: Any) -> list[str] | None:
        """`root.f["k"].g` with constant string keys, rooted at a variable: the list [root, f, k, g]."""
        keys: list[str] = []
        node = tree
        while True:
            if node.data == "member":
                node = node.children[0]
                continue
            if node.data == "member_dot":
                keys.append(str(node.children[1]))
                node = node.children[0]
                continue
            if node.data == "member_index":
                lit = single_literal(node.children[1])
                if lit is None or lit.type not in ("STRING_LIT", "MLSTRING_LIT"):
                    return None
                keys.append(_IndexKey(string_literal(lit.value)))
                node = node.children[0]
                continue
            if node.data == "primary" and isinstance(node.children[0], Tree) and node.children[0].data == "ident":
                name = str(node.children[0].children[0])
                if name not in self.variables and name not in self.scope:
                    return None
                keys.append(name)
                keys.reverse()
                return keys
            return None

    def _variable_path(self, path: list[str]) -> Fn:
        fn = self._path_fn(path)
        if self.dyn_variables and path[0] not in self.scope:
            self.types.mark_dyn(fn)
        return fn

    def _path_fn(self, path: list[str]) -> Fn:
        self.nodes += len(path) - 1
        root = path[0]

        def slow(a: dict[str, Any]) -> Any:
            try:
                v = a[root]
            except KeyError:
                raise CelRuntimeError(f"no such attribute: {root}") from None
            for k in path[1:]:
                v = stdlib.index(v, str(k)) if type(k) is _IndexKey else stdlib.select(v, k)
            return v

        if len(path) == 1:

            def var(a: dict[str, Any]) -> Any:
                try:
                    return a[root]
                except KeyError:
                    return slow(a)

            return var
        if len(path) == 2:
            k1 = path[1]

            def p2(a: dict[str, Any]) -> Any:
                try:
                    return a[root][k1]
                except (KeyError, TypeError, IndexError):
                    return slow(a)

            return p2
        if len(path) == 3:
            k1, k2 = path[1], path[2]

            def p3(a: dict[str, Any]) -> Any:
                try:
                    return a[root][k1][k2]
                except (KeyError, TypeError, IndexError):
                    return slow(a)

            return p3
        if len(path) == 4:
            k1, k2, k3 = path[1], path[2], path[3]

            def p4(a: dict[str, Any]) -> Any:
                try:
                    return a[root][k1][k2][k3]
                except (KeyError, TypeError, IndexError):
                    return slow(a)

            return p4
        rest = path[1:]

        def pn(a: dict[str, Any]) -> Any:
            try:
                v = a[root]
                for k in rest:
                    v = v[k]
                return v
            except (KeyError, TypeError, IndexError):
                return slow(a)

        return pn

    # -- calls ---------------------------------------------------------------------------------------------

    def _c_member_dot_arg(self, tree: Tree) -> Node:
        target_tree = tree.children[0]
        name = str(tree.children[1])
        arg_trees = list(tree.children[2].children) if len(tree.children) > 2 else []
        qualified = qualified_name(target_tree)
        if qualified is not None:
            head = qualified.split(".", 1)[0]
            if head not in self.variables and head not in self.scope:
                full = f"{qualified}.{name}"
                if full == "cel.bind" and self.bindings:
                    return macros.bind(self, tree, arg_trees)
                if full in self.registry.globals:
                    return self._global_call(tree, full, arg_trees)
                raise self.error(tree, f"undeclared reference to '{full}'")
        if name in MACROS:
            return macros.compile_macro(self, tree, name, target_tree, arg_trees)
        if name in ("or", "orValue") and len(arg_trees) == 1:
            return self._optional_or(tree, name, target_tree, arg_trees[0])
        overloads = self.registry.members.get(name)
        if not overloads:
            raise self.error(tree, f"undeclared reference to '{name}'")
        if name == "format":
            self.types.format_depth += 1
            try:
                receiver = self.compile(target_tree)
                args = [self.compile(t) for t in arg_trees]
            finally:
                self.types.format_depth -= 1
            self.types.check_format(tree, target_tree, arg_trees)
        else:
            receiver = self.compile(target_tree)
            args = [self.compile(t) for t in arg_trees]
        return self._call(tree, name, overloads, [receiver, *args], member=True)

    def _c_ident_arg(self, tree: Tree) -> Node:
        name = str(tree.children[0])
        arg_trees = list(tree.children[1].children) if len(tree.children) > 1 else []
        if name == "has":
            return macros.has(self, tree, arg_trees)
        return self._global_call(tree, name, arg_trees)

    def _c_dot_ident_arg(self, tree: Tree) -> Node:
        name = str(tree.children[0])
        arg_trees = list(tree.children[1].children) if len(tree.children) > 1 else []
        return self._global_call(tree, name, arg_trees)

    def _global_call(self, tree: Any, name: str, arg_trees: list[Any]) -> Node:
        overloads = self.registry.globals.get(name)
        if not overloads:
            raise self.error(tree, f"undeclared reference to '{name}'")
        args = [self.compile(t) for t in arg_trees]
        return self._call(tree, name, overloads, args)

    def _call(self, tree: Any, name: str, overloads: list[Overload], args: list[Node], member: bool = False) -> Node:
        fitting = self.types.overloads(tree, name, overloads, args, member)
        dispatch = Dispatcher(name, fitting)
        if name == "dyn":  # dyn() hides its argument's type from the checker, so never fold through it
            (inner,) = args
            f_inner = as_fn(inner)
            dyn_node: Fn = lambda a: f_inner(a)  # noqa: E731 - a distinct closure marks the node as dyn-typed
            self.types.mark_dyn(dyn_node)
            return dyn_node
        price = cost_function(name)
        foldable = all(isinstance(n, Const) for n in args)
        if foldable and name in SIZED_FUNCTIONS:
            # A constant call costs at run time in cel-go: count it, and leave an expensive one (a huge value
            # from constants, 'a'.replace('a', 'aaaaaaaaaa') nested) to the meter instead of building it here.
            fold_cost = price([n.value for n in args])  # type: ignore[union-attr]
            if fold_cost > _FOLD_COST_MAX and self.track_cost:
                foldable = False
            else:
                self.folded_cost += fold_cost
        if foldable:
            try:
                return Const(dispatch(*(n.value for n in args)))  # type: ignore[union-attr]
            except CelRuntimeError as e:
                # cel-go folds constant conversions when the program is built (and validates duration and
                # timestamp literals), so Kubernetes rejects e.g. int(1e99) or duration('x') up front.
                if name in _FOLDED_AT_COMPILE:
                    raise self.error(tree, e.message) from None
        fns = [as_fn(n) for n in args]
        if self.track_cost:
            return self._costed_call(dispatch, fns, price, fitting)
        if len(fns) == 0:
            return lambda a: dispatch()
        if len(fns) == 1:
            (f0,) = fns
            if len(fitting) == 1 and all(t is object for t in fitting[0].arg_types):
                impl = fitting[0].impl
                return lambda a: guarded(impl, f0(a))
            return lambda a: dispatch(f0(a))
        if len(fns) == 2:
            f0, f1 = fns
            if len(fitting) == 1:
                # One candidate: test the exact argument types inline, fall back to full dispatch otherwise.
                t0, t1 = fitting[0].arg_types
                impl2 = fitting[0].impl

                def call2(a: dict[str, Any]) -> Any:
                    x = f0(a)
                    y = f1(a)
                    if (type(x) is t0 or t0 is object) and (type(y) is t1 or t1 is object):
                        try:
                            return impl2(x, y)
                        except CelRuntimeError:
                            raise
                        except Exception as e:
                            raise runtime_error(e) from None
                    return dispatch(x, y)

                return call2
            return lambda a: dispatch(f0(a), f1(a))
        return lambda a: dispatch(*[f(a) for f in fns])

    def _costed_call(
        self, dispatch: Dispatcher, fns: list[Fn], price: Callable[[list[Any]], int], fitting: list[Overload]
    ) -> Fn:
        if len(fns) == 2 and len(fitting) == 1:
            # The common member call with one candidate: the exact argument types tested inline, as untracked.
            f0, f1 = fns
            t0, t1 = fitting[0].arg_types
            impl2 = fitting[0].impl

            def costed2(a: dict[str, Any]) -> Any:
                x = f0(a)
                y = f1(a)
                meter = a.get(COST_KEY)
                if meter is not None:
                    meter.charge(price([x, y]))
                if (type(x) is t0 or t0 is object) and (type(y) is t1 or t1 is object):
                    try:
                        return impl2(x, y)
                    except CelRuntimeError:
                        raise
                    except Exception as e:
                        raise runtime_error(e) from None
                return dispatch(x, y)

            return costed2

        def costed(a: dict[str, Any]) -> Any:
            args = [f(a) for f in fns]
            meter = a.get(COST_KEY)
            if meter is not None:
                meter.charge(price(args))  # before the call: a value too expensive to build is never built
            return dispatch(*args)

        return costed

    def _optional_or(self, tree: Any, name: str, target_tree: Any, arg_tree: Any) -> Node:
        target = as_fn(self.compile(target_tree))
        alt = as_fn(self.compile(arg_tree))
        fallback = self.registry.members.get(name)
        fallback_dispatch = Dispatcher(name, fallback) if fallback else None

        def opt_or(a: dict[str, Any]) -> Any:
            o = target(a)
            if isinstance(o, Optional):
                if o.has_value():
                    return o if name == "or" else o.value()
                v = alt(a)
                if name == "or" and not isinstance(v, Optional):
                    raise stdlib.no_overload("or", o, v)
                return v
            if fallback_dispatch is not None:
                return fallback_dispatch(o, alt(a))
            raise stdlib.no_overload(name, o)

        return opt_or

    # -- primaries -----------------------------------------------------------------------------------------

    def _c_ident(self, tree: Tree) -> Node:
        name = str(tree.children[0])
        if name in self.scope or name in self.variables:
            return self._variable_path([name])
        if name in self.type_idents:
            return Const(self.type_idents[name])
        raise self.error(tree, f"undeclared reference to '{name}'")

    def _c_dot_ident(self, tree: Tree) -> Node:
        name = str(tree.children[0])
        if name in self.variables:
            return self._path_fn([name])
        raise self.error(tree, f"undeclared reference to '.{name}'")

    def _c_paren_expr(self, tree: Tree) -> Node:
        self.nodes -= 1
        return self.compile(tree.children[0])

    def _c_list_lit(self, tree: Tree) -> Node:
        elems: list[tuple[bool, Node]] = []
        if tree.children:
            for t in tree.children[0].children:
                inner = optional_entry(t, "opt_elem")
                if inner is not None:
                    elems.append((True, self.compile(inner)))
                else:
                    elems.append((False, self.compile(t)))
        self.types.homogeneous(tree, [n for opt, n in elems if not opt])
        if self.types.format_depth and not any(opt for opt, _ in elems):
            self.types.list_elements[id(tree)] = [n for _, n in elems]
        if not any(opt for opt, _ in elems) and all(isinstance(n, Const) for _, n in elems):
            # Shared constant: runtime code never mutates lists (Program.evaluate copies a constant result).
            return Const([n.value for _, n in elems])  # type: ignore[union-attr]
        if not any(opt for opt, _ in elems):
            fns = [as_fn(n) for _, n in elems]
            return lambda a: [f(a) for f in fns]
        parts = [(opt, as_fn(n)) for opt, n in elems]

        def build(a: dict[str, Any]) -> list[Any]:
            out: list[Any] = []
            for opt, f in parts:
                v = f(a)
                if opt:
                    if not isinstance(v, Optional):
                        raise stdlib.no_overload("optional list element", v)
                    if v.has_value():
                        out.append(v.value())
                else:
                    out.append(v)
            return out

        return build

    def _c_map_lit(self, tree: Tree) -> Node:
        entries: list[tuple[bool, Node, Node]] = []
        if tree.children:
            kids = tree.children[0].children
            for i in range(0, len(kids), 2):
                inner = optional_entry(kids[i], "opt_key")
                key = self.compile(inner if inner is not None else kids[i])
                if isinstance(key, Const) and type(key.value) not in (str, int, Uint, bool):
                    raise self.error(kids[i], f"unsupported map key type '{type_name(key.value)}'")
                entries.append((inner is not None, key, self.compile(kids[i + 1])))
        self.types.homogeneous(tree, [k for _, k, _ in entries])
        self.types.homogeneous(tree, [v for opt, _, v in entries if not opt])
        parts = [(opt, as_fn(k), as_fn(v)) for opt, k, v in entries]
        constant = all(isinstance(k, Const) and isinstance(v, Const) and not opt for opt, k, v in entries)

        def build(a: dict[str, Any]) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for opt, kf, vf in parts:
                k = kf(a)
                if type(k) not in (str, int, Uint, bool):
                    raise CelRuntimeError(f"unsupported key type: {type_name(k)}")
                v = vf(a)
                if opt:
                    if not isinstance(v, Optional):
                        raise stdlib.no_overload("optional map entry", v)
                    if not v.has_value():
                        continue
                    v = v.value()
                if k in out and any(type(x) is type(k) or (type(k) is not bool and type(x) is not bool) for x in out):
                    raise CelRuntimeError(f"Failed with repeated key: {k}")
                out[k] = v
            return out

        if constant:
            try:
                return Const(build({}))
            except CelRuntimeError:
                pass
        return build

    def _c_literal(self, tree: Tree) -> Node:
        tok: Token = tree.children[0]
        text = tok.value
        kind = tok.type
        if kind == "INT_LIT":
            return Const(self._literal_value(tree, int_literal, text))
        if kind == "UINT_LIT":
            return Const(Uint(self._literal_value(tree, uint_literal, text)))
        if kind == "FLOAT_LIT":
            return Const(float(text))
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return Const(self._literal_value(tree, string_literal, text))
        if kind == "BYTES_LIT":
            return Const(self._literal_value(tree, bytes_literal, text))
        if kind == "BOOL_LIT":
            return Const(text == "true")
        if kind == "NULL_LIT":
            return Const(None)
        raise self.error(tree, f"unsupported literal {text}")  # pragma: no cover

    def _literal_value(self, tree: Any, read: Callable[[str], Any], text: str) -> Any:
        try:
            return read(text)
        except ValueError as e:
            raise self.error(tree, str(e)) from None


_PASS_THROUGH: Final = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
    | {"primary", "paren_expr"}
)


class _IndexKey(str):
    """A path key written as `["k"]` (index) rather than `.k` (selection): same lookup, other error text."""

    __slots__ = ()


# The most a constant call may cost to be folded at compile time (a result of at most ~10^4 elements).
_FOLD_COST_MAX: Final = 1000
_FOLDED_AT_COMPILE: Final = frozenset({"int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp"})
