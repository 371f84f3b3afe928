"""The runtime cost budget: a meter charged per comprehension iteration and per library call.

A program without comprehensions is bounded by its size, so its cost is the static node count checked once
before evaluation; programs with comprehensions carry a `CostMeter` in their activation (under `COST_KEY`,
a name no CEL identifier can take), charged per iteration and per call with a string/list size factor.
The default limit is Kubernetes' `CELSelectorExpressionMaxCost` / `PerCallLimit`.
"""

from __future__ import annotations

from typing import Any, Final

from dra.errors import CelCostError

__all__ = ["COST_KEY", "DEFAULT_COST_LIMIT", "CostMeter", "call_cost"]

DEFAULT_COST_LIMIT: Final = 1_000_000
COST_KEY: Final = "@cost"
# cel-go's common.StringTraversalCostFactor: string and list traversals cost 0.1 per element.
_TRAVERSAL_FACTOR: Final = 0.1


class CostMeter:
    """Counts down from the limit; raises `CelCostError` when it goes negative."""

    __slots__ = ("limit", "left", "expression")

    def __init__(self, limit: int, expression: str = "") -> None:
        self.limit = limit
        self.left = limit
        self.expression = expression

    def charge(self, amount: int) -> None:
        self.left -= amount
        if self.left < 0:
            raise CelCostError(
                f"operation cancelled: actual cost limit exceeded (limit {self.limit})", expression=self.expression
            )

    @property
    def used(self) -> int:
        return self.limit - self.left


def call_cost(args: list[Any]) -> int:
    """1 per call plus the traversal cost of string, bytes and list arguments."""
    cost = 1
    for v in args:
        t = type(v)
        if t is str or t is bytes or t is list or t is dict:
            cost += int(len(v) * _TRAVERSAL_FACTOR) + 1
    return cost
