"""CEL environments (admission and DRA selector), compiled programs and their cache.

`Environment.admission()` declares the ValidatingAdmissionPolicy variables, `Environment.dra_selector()` the
DRA `device` variable (results must be bool; lists' `includes` opted in). Both merge every Kubernetes
library. `env.compile(text)` is cached per (environment, text) and
reports syntax errors, unknown variables/functions and mismatches visible from literals as `CelCompileError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from dra.cel import cidr, ip, lists, quantity, regex, semver, sets, stdlib, strings, urls
from dra.cel import format as format_library
from dra.cel._functions import FunctionRegistry
from dra.cel.compiler import MACROS, Compiler
from dra.cel.cost import COST_KEY, DEFAULT_COST_LIMIT, GROWTH_FUNCTIONS, CostMeter, EvaluationBudget
from dra.cel.nodes import Const, Fn, as_fn
from dra.cel.parse import parse
from dra.errors import CelCompileError, CelCostError, CelRuntimeError

__all__ = ["ADMISSION_VARIABLES", "DRA_VARIABLES", "Environment", "Program"]

ADMISSION_VARIABLES: Final = frozenset({"object", "oldObject", "request", "namespaceObject", "variables", "params"})
DRA_VARIABLES: Final = frozenset({"device"})
_CACHE_SIZE: Final = 4096


def _library_registries(includes: bool = False) -> list[FunctionRegistry]:
    """The Kubernetes libraries' registries in merge order; `includes` opts in to lists' `includes`."""
    return [
        quantity.REGISTRY,
        semver.REGISTRY,
        lists.REGISTRY,
        *([lists.INCLUDES_REGISTRY] if includes else []),
        regex.REGISTRY,
        strings.REGISTRY,
        sets.REGISTRY,
        ip.REGISTRY,
        cidr.REGISTRY,
        urls.REGISTRY,
        format_library.REGISTRY,
    ]


class Program:
    """A compiled expression. `evaluate` takes runtime values (see `dra.cel.from_json`) by variable name."""

    __slots__ = ("expression", "_fn", "static_cost", "tracked", "constant")

    def __init__(self, expression: str, fn: Fn, static_cost: int, tracked: bool, constant: bool) -> None:
        self.expression = expression
        self._fn = fn
        self.static_cost = static_cost
        self.tracked = tracked
        self.constant = constant

    def evaluate(
        self, activation: Mapping[str, Any], cost_limit: int | None = None, budget: EvaluationBudget | None = None
    ) -> Any:
        """The expression's value; raises `CelRuntimeError`, or `CelCostError` past `cost_limit` (default 1e6) or
        past what is left of `budget`, the evaluation's budget across expressions, which is charged its cost and
        the size of its value."""
        if budget is None:
            return self._evaluate(activation, cost_limit, None)
        limit = DEFAULT_COST_LIMIT if cost_limit is None else cost_limit
        if self.static_cost > budget.left:
            raise budget.exceeded(self.expression)
        meter = CostMeter(limit, self.expression, self.static_cost, budget) if self.tracked else None
        value = self._evaluate(activation, min(limit, max(0, budget.left)), meter)
        budget.spend(self.static_cost if meter is None else meter.used, self.expression)
        budget.hold(value, self.expression)
        return value

    def evaluate_with_cost(self, activation: Mapping[str, Any], cost_limit: int | None = None) -> tuple[Any, int]:
        """`(value, actual cost)`: the static cost plus what the meter was charged (compare cel-go's ActualCost)."""
        limit = DEFAULT_COST_LIMIT if cost_limit is None else cost_limit
        meter = CostMeter(limit, self.expression, self.static_cost) if self.tracked else None
        value = self._evaluate(activation, cost_limit, meter)
        return value, self.static_cost if meter is None else meter.used

    def _evaluate(self, activation: Mapping[str, Any], cost_limit: int | None, meter: CostMeter | None) -> Any:
        limit = DEFAULT_COST_LIMIT if cost_limit is None else cost_limit
        if self.static_cost > limit:
            raise CelCostError(
                f"operation cancelled: actual cost limit exceeded (limit {limit})", expression=self.expression
            )
        if self.tracked:
            a = dict(activation)
            a[COST_KEY] = CostMeter(limit, self.expression, self.static_cost) if meter is None else meter
        elif type(activation) is dict:
            a = activation
        else:
            a = dict(activation)
        try:
            result = self._fn(a)
            if self.constant and type(result) in (list, dict):
                return copy.deepcopy(result)  # never hand out the program's own constant
            return result
        except CelRuntimeError as e:
            if not e.expression:
                e.expression = self.expression
            raise
        except RecursionError:
            raise CelRuntimeError("expression nesting too deep", expression=self.expression) from None

    def matches(self, activation: Mapping[str, Any], cost_limit: int | None = None) -> bool:
        """Evaluate a selector: the result must be a bool (DRA's DeviceMatches), else `CelRuntimeError`."""
        result = self.evaluate(activation, cost_limit)
        if result is True or result is False:
            return bool(result)
        raise CelRuntimeError(
            f"CEL result of type {stdlib.type_of(result).name} could not be converted to bool",
            expression=self.expression,
        )

    def __call__(self, activation: Mapping[str, Any]) -> Any:
        return self.evaluate(activation)

    def __repr__(self) -> str:
        return f"Program({self.expression!r})"


class Environment:
    """Declared variables plus the function registry; compiles and caches programs."""

    _shared: ClassVar[dict[str, Environment]] = {}

    def __init__(
        self,
        name: str,
        variables: frozenset[str],
        registry: FunctionRegistry | None = None,
        *,
        bool_result: bool = False,
    ) -> None:
        self.name = name
        self.variables = variables
        self.registry = registry if registry is not None else stdlib.REGISTRY.merged(_library_registries())
        self.bool_result = bool_result
        self.dyn_variables = True  # admission variables are dyn; DRA's device is a declared object type
        self.bindings = False  # cel.bind (ext.Bindings) is in DRA's environment only
        self._cache: dict[str, Program] = {}

    @classmethod
    def admission(cls) -> Environment:
        """The ValidatingAdmissionPolicy-style environment (shared instance, shared cache)."""
        env = cls._shared.get("admission")
        if env is None:
            env = cls._shared["admission"] = cls("admission", ADMISSION_VARIABLES)
        return env

    @classmethod
    def dra_selector(cls, require_bool: bool = True) -> Environment:
        """The DRA device selector environment with the `device` variable (shared instance, shared cache).

        `require_bool=False` gives the same environment without the selector's bool-result check (for
        exploring values, as `gpudra cel eval --device` does).
        """
        name = "dra-selector" if require_bool else "dra-values"
        env = cls._shared.get(name)
        if env is None:
            # DRA compiles selectors as StoredExpressions: every library, including lists' `includes`.
            registry = stdlib.REGISTRY.merged(_library_registries(includes=True))
            env = cls._shared[name] = cls(name, DRA_VARIABLES, registry, bool_result=require_bool)
            env.dyn_variables = False
            env.bindings = True
        return env

    def with_variables(self, *names: str) -> Environment:
        """A new environment with extra declared variables (own cache)."""
        env = Environment(
            f"{self.name}+{','.join(names)}",
            self.variables | frozenset(names),
            self.registry,
            bool_result=self.bool_result,
        )
        env.dyn_variables = self.dyn_variables
        env.bindings = self.bindings
        return env

    def compile(self, expression: str) -> Program:
        """Compile (cached); raises `CelCompileError` naming the position and what is wrong."""
        program = self._cache.get(expression)
        if program is not None:
            return program
        if not isinstance(expression, str):
            raise CelCompileError(f"expression must be a string, got {type(expression).__name__}")
        tree = parse(expression)
        tracked = _needs_meter(tree)
        compiler = Compiler(
            expression,
            self.variables,
            self.registry,
            tracked,
            dyn_variables=self.dyn_variables,
            bindings=self.bindings,
        )
        try:
            node = compiler.compile(tree)
        except RecursionError:
            raise CelCompileError("expression nesting too deep", expression=expression) from None
        if self.bool_result:
            result_type = stdlib.type_of(node.value).name if isinstance(node, Const) else None
            if isinstance(node, Const) and type(node.value) is bool:
                result_type = None
            result_type = result_type or _device_path_type(compiler, tree)
            if result_type is not None:
                raise CelCompileError(
                    f"must evaluate to bool or the unknown type, not {result_type}", expression=expression
                )
        program = Program(
            expression, as_fn(node), max(compiler.nodes, 1) + compiler.folded_cost, tracked, isinstance(node, Const)
        )
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        self._cache[expression] = program
        return program

    def evaluate(
        self, expression: str, activation: Mapping[str, Any] | None = None, cost_limit: int | None = None
    ) -> Any:
        """Compile (cached) and evaluate in one call."""
        return self.compile(expression).evaluate(activation or {}, cost_limit)

    def __repr__(self) -> str:
        return f"Environment({self.name!r}, variables={sorted(self.variables)})"


_METERED_MEMBERS: Final = frozenset({*MACROS, "bind", *(name.rpartition(".")[2] for name in GROWTH_FUNCTIONS)})
_METERED_GLOBALS: Final = GROWTH_FUNCTIONS


def _needs_meter(tree: Any) -> bool:
    """Whether the program's cost can outgrow its size: comprehensions, bindings, `+` (strings and lists grow)
    and calls that build strings or lists."""
    for sub in tree.iter_subtrees():
        rule = sub.data
        if rule == "member_dot_arg":
            if str(sub.children[1]) in _METERED_MEMBERS:
                return True
        elif rule in ("ident_arg", "dot_ident_arg"):
            if str(sub.children[0]) in _METERED_GLOBALS:
                return True
        elif rule == "addition_add":
            return True
    return False


def _device_path_type(compiler: Compiler, tree: Any) -> str | None:
    """The declared non-bool type of a whole expression that is a plain `device.…` path (DRA's device type)."""
    node = tree
    while node.data not in ("member_dot", "member_index") and len(node.children) == 1:
        child = node.children[0]
        if not hasattr(child, "data"):
            return None
        node = child
    path = compiler.constant_path(node) if node.data in ("member_dot", "member_index") else None
    if not path or path[0] != "device":
        return None
    if len(path) == 2 and path[1] == "driver":
        return "string"
    if len(path) == 4 and path[1] == "capacity":
        return "kubernetes.Quantity"
    if len(path) in (2, 3) and path[1] in ("attributes", "capacity"):
        return "map"
    return None
