"""One review's CEL is bounded across all its expressions, as ValidatingAdmissionPolicy's RuntimeCELCostBudget
bounds a policy's: a policy of many expressions, each within its own per-call limit, is denied once their total
cost or the size of the values they keep passes the review's budget, with a message naming the policy and the
expression, and the memory it takes stays bounded. Decisions remember what they hold, for the decision cache."""

from __future__ import annotations

import tracemalloc
from typing import Any

from dra.cel import RUNTIME_COST_BUDGET
from dra.cel.cost import MAX_HELD_SIZE
from policyengine import Decision, PolicySet, load_policy_text

# 200 kB: within the API server's 256 KiB limit on a pod's annotations.
PAD = "x" * 200_000
VARIABLES = 60


def _policy(expression: str, name: str = "hog") -> PolicySet:
    """A policy of `VARIABLES` variables (each `expression`) and one validation that reads them all."""
    variables = "\n".join(f"  - name: v{i}\n    expression: {expression!r}" for i in range(VARIABLES))
    reads = " + ".join(f"size(variables.v{i})" for i in range(VARIABLES))
    text = f"""\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: {name}}}
spec:
  matchConditions:
  - {{name: legacy, expression: gpu.legacy}}
  variables:
{variables}
  validations:
  - expression: "{reads} >= 0"
    message: never
"""
    policies, errors = load_policy_text(text, "hog.yaml")
    assert errors == []
    return PolicySet.of(policies)


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": {"pad": PAD}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }


def _evaluate_traced(policies: PolicySet) -> tuple[Decision, int]:
    pod = _pod()
    tracemalloc.start()
    try:
        decision = policies.evaluate(pod)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return decision, peak


def test_sixty_variables_that_each_build_a_large_string_are_denied_by_the_held_size_budget() -> None:
    # Each variable is 800,000 characters, under the per-value bound, for about 80,000 cost units, under the
    # per-call limit: 60 of them are 48 MB that the decision (and the decision cache) would keep.
    policies = _policy("object.metadata.annotations['pad'].replace('x', 'xxxx')")
    decision, peak = _evaluate_traced(policies)
    assert decision.allowed is False and decision.reason == "InternalError"
    assert "GPUClaimPolicy 'hog' could not be evaluated" in decision.message
    assert f"hold more than {MAX_HELD_SIZE}" in decision.message
    assert "spec.validations[0].expression" in decision.message and "variables.v" in decision.message
    assert peak < 4 * MAX_HELD_SIZE, peak


def test_sixty_variables_within_their_own_limits_are_denied_by_the_review_cost_budget() -> None:
    # About 800,000 cost units each (under the 1,000,000 per call) and small values: 48 million in all.
    policies = _policy(
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(i, object.metadata.annotations['pad'].replace('x', 'xxxx').size())"
    )
    decision, peak = _evaluate_traced(policies)
    assert decision.allowed is False and decision.reason == "InternalError"
    message = decision.message
    assert "GPUClaimPolicy 'hog' could not be evaluated" in message
    assert f"no further validation rules will be run (RuntimeCELCostBudget {RUNTIME_COST_BUDGET})" in message
    assert "hog.yaml" in message and "spec.validations[0].expression" in message
    assert peak < 64 * 2**20, peak


def test_a_policy_within_the_budget_is_unaffected_and_its_decision_weighs_what_it_holds() -> None:
    policies = _policy("object.metadata.name + '-suffix'")
    decision = policies.evaluate(_pod())
    assert decision.allowed is True and decision.violations == ()
    assert decision.variables["hog"]["v0"] == "p-suffix"
    assert VARIABLES * len("p-suffix") < decision.held_bytes < 100_000


def test_the_budget_is_per_review() -> None:
    # 5 x 40,000 cost units a variable, 12 million for the 60: over the budget in each review, memo or not.
    policies = _policy("[1, 2, 3, 4, 5].map(i, object.metadata.annotations['pad'].replace('x', 'xx').size())")
    messages = {policies.evaluate(_pod()).message for _ in range(3)}
    assert len(messages) == 1 and "running out of cost budget" in messages.pop()
    small = _policy("object.metadata.name")
    assert small.evaluate(_pod()).allowed is True
