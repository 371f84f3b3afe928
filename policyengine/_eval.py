"""Evaluating one compiled expression with the policy's error conventions (shared by engine and claim builder)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra.errors import CelCostError, CelError, PolicyError

from . import _cel
from .loader import CompiledExpr

__all__ = ["Failed", "check", "run"]


class Failed(Exception):
    """A policy could not be evaluated; carries the error to report under the policy's failurePolicy."""

    def __init__(self, error: PolicyError) -> None:
        self.error = error
        super().__init__(str(error))


def run(expr: CompiledExpr, activation: Mapping[str, Any]) -> Any:
    """The expression's value, or `Failed` naming the file, line and expression."""
    try:
        return _cel.evaluate(expr.program, activation)
    except CelCostError as exc:
        raise Failed(expr.error(f"cost budget exceeded: {exc.message}")) from exc
    except CelError as exc:
        raise Failed(expr.error(f"evaluation error: {exc.message}")) from exc


def check(expr: CompiledExpr, activation: Mapping[str, Any]) -> bool:
    """A condition's value, which must be a bool."""
    value = run(expr, activation)
    if type(value) is not bool:
        raise Failed(expr.error(f"expected a bool (got {_cel.to_json(value)!r})"))
    return value
