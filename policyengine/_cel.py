"""The one place the policy engine touches `dra.cel`: compile in the two environments, evaluate, convert.

Policy expressions run in the Kubernetes admission environment with gpudra's extra variables `gpu` (facts the
engine computed about the pod's GPU resources) and, inside `spec.claim`, `container` and `legacy`.
Device selectors compile in the DRA selector environment, so a broken selector is a lint error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dra import cel
from dra.cancellation import check_deadline

__all__ = [
    "BUDGET_KEY",
    "EXTRA_VARIABLES",
    "PER_CALL_COST_LIMIT",
    "Program",
    "compile_admission",
    "compile_selector",
    "evaluate",
]

# k8s.io/apiserver/pkg/apis/cel/config.go: PerCallLimit, "roughly 0.1 s".
PER_CALL_COST_LIMIT = 1_000_000
EXTRA_VARIABLES = ("gpu", "pod", "container", "legacy")
# Where an evaluation's `cel.EvaluationBudget` rides in the activation (no CEL identifier can take this name).
BUDGET_KEY = "@budget"


class Program(Protocol):
    def evaluate(
        self, activation: Mapping[str, Any], cost_limit: int | None = None, budget: cel.EvaluationBudget | None = None
    ) -> Any: ...


def _admission_environment() -> Any:
    env = cel.Environment.admission()
    declare = getattr(env, "with_variables", None)
    return declare(*EXTRA_VARIABLES) if callable(declare) else env


_ADMISSION = _admission_environment()
_SELECTOR = cel.Environment.dra_selector()


def compile_admission(expression: str) -> Program:
    """Compile a policy expression; raises `CelCompileError` (with `.position`)."""
    program: Program = _ADMISSION.compile(expression)
    return program


def compile_selector(expression: str) -> Program:
    """Compile a DRA device selector; raises `CelCompileError`."""
    program: Program = _SELECTOR.compile(expression)
    return program


def evaluate(program: Program, activation: Mapping[str, Any], cost_limit: int = PER_CALL_COST_LIMIT) -> Any:
    """Evaluate with the per-call limit and the evaluation's budget (`BUDGET_KEY` of the activation, when there);
    raises `CelRuntimeError` / `CelCostError`, or `EvaluationCancelled` once the evaluation's deadline passed."""
    check_deadline()
    return program.evaluate(activation, cost_limit=cost_limit, budget=activation.get(BUDGET_KEY))


def from_json(data: Any) -> Any:
    return cel.from_json(data)


def to_json(value: Any) -> Any:
    return cel.to_json(value)
