"""The runtime cost budget: a meter charged per comprehension iteration and per library call.

Programs without loops that build no strings or lists are bounded by their size, so their cost is the static
node count (plus what the calls folded at compile time cost) checked once before evaluation. Programs with
comprehensions or bindings, and programs with `+` or a call that builds a string or list (`GROWTH_FUNCTIONS`),
carry a `CostMeter` in their activation (under `COST_KEY`, a name no CEL identifier can take), charged per
iteration and per call. The default limit is Kubernetes' `CELSelectorExpressionMaxCost` / `PerCallLimit`.

Call costs follow cel-go's `interpreter/runtimecost.go` defaults and the Kubernetes `library.CostEstimator`
(`k8s.io/apiserver/pkg/cel/library/cost.go`), with the same float arithmetic (so `ceil(30 * 0.1)` is 4 here too).
They are charged before the call, from its arguments, so a value too expensive to build is never built; cel-go
charges after the call, which gives the same total for every call that fits. Where cel-go prices a call by its
inputs only although the result can be far larger (a `replace` that grows the text, `format`, list `+`, which
cel-go concatenates lazily but this implementation copies), the charge is at least the traversal cost of the
result (`ceil(0.1 * size)`), so a chain of growing values stops before it fills memory; such calls cost more
here than in cel-go, never less.

Across expressions, an `EvaluationBudget` is what Kubernetes' `RuntimeCELCostBudget` is to a
ValidatingAdmissionPolicy: every expression's actual cost is charged to it, each expression may spend at most what
is left (and at most its own per-call limit), and once it is spent no further expression runs. It also bounds the
size of what the expressions return and keep (variables live as long as the decision), and no single string or
list a call builds may exceed `MAX_VALUE_SIZE`. A meter created under a deadline (`dra.cancellation`) checks it
every `DEADLINE_CHECK_COST` units, so a long evaluation stops within about a millisecond of its deadline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from dra.cancellation import check_deadline, current_deadline
from dra.cel.values import Optional
from dra.errors import CelCostError

__all__ = [
    "COST_KEY",
    "DEADLINE_CHECK_COST",
    "DEFAULT_COST_LIMIT",
    "GROWTH_FUNCTIONS",
    "MAX_HELD_SIZE",
    "MAX_VALUE_SIZE",
    "RUNTIME_COST_BUDGET",
    "SIZED_FUNCTIONS",
    "CostMeter",
    "EvaluationBudget",
    "add_cost",
    "call_cost",
    "cost_function",
    "value_size",
]

DEFAULT_COST_LIMIT: Final = 1_000_000
# k8s.io/apiserver/pkg/apis/cel/config.go: RuntimeCELCostBudget, "roughly 1 second" across a policy's expressions.
RUNTIME_COST_BUDGET: Final = 10_000_000
# The largest string (code points), bytes or list (elements) one call or `+` may build. Kubernetes objects are
# below 1.5 MiB in etcd, so a larger value is not the copy of one of their fields but something grown.
MAX_VALUE_SIZE: Final = 2**20
# What the values returned by one evaluation's expressions may hold together (`value_size`: code points, bytes,
# elements), kept as variables for as long as the decision is.
MAX_HELD_SIZE: Final = 8 * 2**20
# Cost units between deadline checks: about a millisecond of evaluation (PerCallLimit's 1e6 is "roughly 0.1 s").
DEADLINE_CHECK_COST: Final = 10_000
COST_KEY: Final = "@cost"
# cel-go's common.StringTraversalCostFactor and RegexStringLengthCostFactor.
_TRAVERSAL_FACTOR: Final = 0.1
_REGEX_FACTOR: Final = 0.25


_OUT_OF_BUDGET: Final = "validation failed due to running out of cost budget, no further validation rules will be run"


class EvaluationBudget:
    """The cost and held-value budget shared by every expression of one evaluation (one admission review)."""

    __slots__ = ("limit", "left", "held_limit", "held", "last")

    def __init__(self, limit: int = RUNTIME_COST_BUDGET, held_limit: int = MAX_HELD_SIZE) -> None:
        self.limit = limit
        self.left = limit
        self.held_limit = held_limit
        self.held = 0
        self.last = (0, 0)  # the cost and value size of the expression evaluated last (for memoized replays)

    def exceeded(self, expression: str) -> CelCostError:
        return CelCostError(f"{_OUT_OF_BUDGET} (RuntimeCELCostBudget {self.limit})", expression=expression)

    def spend(self, cost: int, expression: str) -> None:
        """Charge an expression's actual cost; past the budget, `CelCostError` (Kubernetes' text)."""
        self.last = (cost, 0)
        self.left -= cost
        if self.left < 0:
            raise self.exceeded(expression)

    def hold(self, value: Any, expression: str) -> None:
        """Charge the size of a value an expression returned; past `held_limit`, `CelCostError`."""
        size = value_size(value, self.held_limit - self.held)
        self.last = (self.last[0], size)
        self._hold(size, expression)

    def fits(self, charges: tuple[int, int]) -> bool:
        """Whether `replay(charges)` would stay within the budget."""
        return charges[0] <= self.left and self.held + charges[1] <= self.held_limit

    def replay(self, charges: tuple[int, int], expression: str) -> None:
        """Charge again what an expression cost (`last` after it ran) when its value is reused instead of computed,
        so that a decision is the same whether or not a memo held the value."""
        self.spend(charges[0], expression)
        self._hold(charges[1], expression)

    def _hold(self, size: int, expression: str) -> None:
        self.held += size
        if self.held > self.held_limit:
            raise CelCostError(
                f"the values this evaluation's expressions returned hold more than {self.held_limit} elements and "
                "characters (strings, bytes and lists built by CEL are bounded per evaluation)",
                expression=expression,
            )


class CostMeter:
    """Counts down from the limit; raises `CelCostError` when it goes negative. Under a deadline
    (`dra.cancellation`) it also checks the deadline every `DEADLINE_CHECK_COST` units charged."""

    __slots__ = ("limit", "left", "expression", "budget", "_checkpoint")

    def __init__(
        self, limit: int, expression: str = "", spent: int = 0, budget: EvaluationBudget | None = None
    ) -> None:
        self.budget = budget if budget is not None and budget.left < limit else None  # set when it binds
        self.limit = limit if self.budget is None else max(0, self.budget.left)
        self.left = self.limit - spent
        self.expression = expression
        self._checkpoint = max(0, self.left - DEADLINE_CHECK_COST) if current_deadline() is not None else 0

    def charge(self, amount: int) -> None:
        self.left -= amount
        if self.left < self._checkpoint:
            self._check()

    def _check(self) -> None:
        if self.left < 0:
            if self.budget is not None:
                raise self.budget.exceeded(self.expression)
            raise CelCostError(
                f"operation cancelled: actual cost limit exceeded (limit {self.limit})", expression=self.expression
            )
        check_deadline()
        self._checkpoint = max(0, self.left - DEADLINE_CHECK_COST)

    @property
    def used(self) -> int:
        return self.limit - self.left


def value_size(value: Any, stop_after: int = 1 << 62) -> int:
    """Code points of strings, bytes' and lists' and maps' lengths, summed through lists and maps; a walk that stops
    once the total passes `stop_after` (shared sublists can make the tree far larger than the graph)."""
    return _deep_size(value, stop_after)


def _built(size: int) -> int:
    """`size` when a call or `+` may build a value that large; `CelCostError` above `MAX_VALUE_SIZE`."""
    if size > MAX_VALUE_SIZE:
        raise CelCostError(
            f"the value it would build has {size} elements or characters, more than the {MAX_VALUE_SIZE} a CEL "
            "string or list may have here"
        )
    return size


def call_cost(args: list[Any]) -> int:
    """The cost of a call to a function without a size rule below: 1 plus the traversal cost of string,
    bytes, list and map arguments (cel-go charges 1; this errs high for the few remaining library functions)."""
    cost = 1
    for v in args:
        t = type(v)
        if t is str or t is bytes or t is list or t is dict:
            cost += int(len(v) * _TRAVERSAL_FACTOR) + 1
    return cost


def _size(v: Any) -> int:
    """cel-go's actualSize: code points of a string, length of bytes, lists and maps; 1 for anything else."""
    t = type(v)
    if t is str or t is bytes or t is list or t is dict:
        return len(v)
    if t is Optional and v.has_value():
        return _size(v.value())
    return 1


def _traverse(n: int) -> int:
    return math.ceil(float(n) * _TRAVERSAL_FACTOR)


def _traverse_twice(n: int) -> int:
    return math.ceil(float(n) * 2 * _TRAVERSAL_FACTOR)


def _k8s_traversal(v: Any) -> int:
    """Kubernetes' traversalCost (isSorted, sum, min, max, indexOf, lastIndexOf, includes): 0.1 per byte of
    strings and bytes (truncated), summed over lists and maps, 1 for other values."""
    t = type(v)
    if t is str:
        return int(float(len(v.encode("utf-8", "surrogatepass"))) * _TRAVERSAL_FACTOR)
    if t is bytes:
        return int(float(len(v)) * _TRAVERSAL_FACTOR)
    if t is list:
        return sum(_k8s_traversal(x) for x in v)
    if t is dict:
        return sum(_k8s_traversal(k) + _k8s_traversal(x) for k, x in v.items())
    return 1


def _regex(args: list[Any]) -> int:
    str_cost = math.ceil((1.0 + float(_size(args[0]))) * _TRAVERSAL_FACTOR)
    regex_cost = math.ceil(float(_size(args[1])) * _REGEX_FACTOR)
    return str_cost * regex_cost


def _contains(args: list[Any]) -> int:
    return _traverse(_size(args[0])) * _traverse(_size(args[1]))


def _replace(args: list[Any]) -> int:
    text, old, new = args[0], args[1], args[2]
    cost = _traverse_twice(_size(text))
    if type(text) is str and type(old) is str and type(new) is str and len(new) > len(old):
        count = text.count(old)  # one pass, nothing built
        if len(args) > 3 and type(args[3]) is int and args[3] >= 0:
            count = min(count, args[3])
        cost = max(cost, _traverse(_built(len(text) + count * (len(new) - len(old)))))
    return cost


def _join(args: list[Any]) -> int:
    # Kubernetes charges 0.2 per code point of the result; computed here before the result is built.
    values = args[0]
    sep = args[1] if len(args) > 1 and type(args[1]) is str else ""
    size = sum(len(v) for v in values if type(v) is str) if type(values) is list else 0
    if type(values) is list and values:
        size += len(sep) * (len(values) - 1)
    return _traverse_twice(_built(size))


def _format(args: list[Any]) -> int:
    # cel-go: 0.1 per code point of the template. Here also the result's traversal cost, from the sizes of the
    # arguments (a bounded walk: shared sublists can make the tree exponentially larger than the graph).
    built = _built(_size(args[0]) + _deep_size(args[1:], MAX_VALUE_SIZE + 1))
    return max(_traverse(_size(args[0])), _traverse(built))


def _deep_size(v: Any, budget: int) -> int:
    """The total size of `v`'s strings, bytes and elements, walking at most until it exceeds `budget`."""
    total = 0
    stack = [v]
    while stack and total <= budget:
        x = stack.pop()
        t = type(x)
        if t is str or t is bytes:
            total += len(x)
        elif t is list:
            total += len(x)
            stack.extend(x)
        elif t is dict:
            total += len(x)
            stack.extend(x.keys())
            stack.extend(x.values())
        else:
            total += 1
    return total


def _first_traversed(args: list[Any]) -> int:
    v = args[0]
    if type(v) is str:
        return math.ceil(float(len(v)) * _TRAVERSAL_FACTOR)
    return _traverse(_size(v))


def _first_traversed_twice(args: list[Any]) -> int:
    return _traverse_twice(_size(args[0]))


def _k8s_list_traversal(args: list[Any]) -> int:
    return _k8s_traversal(args[0])


CostFunction = Callable[[list[Any]], int]

# Function name → cost from the call's arguments (receiver first). Names as cel-go and Kubernetes match them.
_COSTS: Final[dict[str, CostFunction]] = {
    "matches": _regex,
    "find": _regex,
    "findAll": _regex,
    "contains": _contains,
    "startsWith": _first_traversed,
    "endsWith": _first_traversed,
    "strings.quote": _first_traversed,
    "lowerAscii": _first_traversed,
    "upperAscii": _first_traversed,
    "substring": _first_traversed,
    "trim": _first_traversed,
    "url": _first_traversed,
    "replace": _replace,
    "split": _first_traversed_twice,
    "join": _join,
    "format": _format,
    "isSorted": _k8s_list_traversal,
    "sum": _k8s_list_traversal,
    "min": _k8s_list_traversal,
    "max": _k8s_list_traversal,
    "indexOf": _k8s_list_traversal,
    "lastIndexOf": _k8s_list_traversal,
    "includes": _k8s_list_traversal,
}

for _name in ("ip", "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver"):
    _COSTS[_name] = _first_traversed  # Kubernetes: a parse is one traversal of the string
_COSTS["ip.isCanonical"] = _first_traversed_twice

SIZED_FUNCTIONS: Final = frozenset(_COSTS)
# The sized functions that build a string or list from their inputs. A program calling one (or `+`) carries a
# meter even without loops. Programs whose only sized calls are tests and parses (matches, startsWith,
# quantity, ...) do not: each such call runs once, in time linear in its input, so their cost is bounded by
# the program's size times its input's; pricing them there would triple the time of a typical DRA selector.
GROWTH_FUNCTIONS: Final = frozenset(
    {"replace", "join", "split", "format", "findAll", "lowerAscii", "upperAscii", "substring", "trim", "strings.quote"}
)


def _one(args: list[Any]) -> int:
    return 1


def _to_string(args: list[Any]) -> int:
    # cel-go: string(bytes) traverses its argument; other conversions cost 1.
    return _traverse(len(args[0])) if args and type(args[0]) is bytes else 1


def _to_bytes(args: list[Any]) -> int:
    return _traverse(len(args[0])) if args and type(args[0]) is str else 1


# Functions cel-go or Kubernetes charge 1 per call whatever their arguments: accessors, comparisons of
# fixed-size values, conversions, optionals, `size`.
_UNIT_COST: Final = frozenset(
    {
        *("add", "sub", "sign", "asApproximateFloat", "asInteger", "isInteger", "isGreaterThan", "isLessThan"),
        *("compareTo", "major", "minor", "patch", "family", "masked", "prefixLength", "isUnspecified"),
        *("isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "isURL"),
        *("getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery", "format.named"),
        *("bool", "int", "uint", "double", "duration", "timestamp", "type", "dyn", "size", "charAt"),
        *("hasValue", "value", "optional.of", "optional.ofNonZeroValue", "optional.none", "first", "last"),
        *("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours"),
        *("getMilliseconds", "getMinutes", "getMonth", "getSeconds"),
    }
)


def cost_function(name: str) -> CostFunction:
    """The cost of a call of `name` from its arguments: a size rule above, 1, or `call_cost` for the rest
    (list and set functions whose cel-go trackers are not modelled: sort, distinct, flatten, sets.*, ...)."""
    rule = _COSTS.get(name)
    if rule is not None:
        return rule
    if name == "string":
        return _to_string
    if name == "bytes":
        return _to_bytes
    if name in _UNIT_COST:
        return _one
    return call_cost


def add_cost(x: Any, y: Any) -> int:
    """`x + y`: cel-go charges strings and bytes 0.1 per element of both operands; lists here the same (cel-go
    charges 1, its list concatenation being a lazy view; this one copies); other operands 1."""
    t = type(x)
    if (t is str or t is bytes or t is list) and type(y) is t:
        return max(1, _traverse(_built(len(x) + len(y))))
    return 1
