"""What a claim policy that fails at run time means: `Fail` denies (fail closed), `Ignore` skips the policy, so
the next matching claim policy (the shipped `whole-gpu` fallback) builds the claim, with a warning."""

from __future__ import annotations

from typing import Any

import pytest

from policyengine import PolicySet, load_policies, load_policy_text

BROKEN = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: broken}}
spec:
  priority: 900
  failurePolicy: {failure}
  matchConditions:
  - {{name: legacy, expression: gpu.legacy}}
  claim:
    deviceClassName: gpu.nvidia.com
    count: {{expression: "1 / (size(object.metadata.name) - size(object.metadata.name))"}}
"""


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "team-a"},
        "spec": {"containers": [{"name": "main", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    }


def _with_broken(failure: str) -> PolicySet:
    broken, errors = load_policy_text(BROKEN.format(failure=failure), "broken.yaml")
    assert errors == []
    return PolicySet.of([*broken, *load_policies().policies])


def test_ignore_skips_the_failing_policy_and_the_fallback_builds_the_claim() -> None:
    decision = _with_broken("Ignore").evaluate(_pod())
    assert decision.allowed and decision.policy == "whole-gpu"
    assert "broken" not in decision.shadowed and "whole-gpu" not in decision.shadowed
    (request,) = decision.claim["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "count": 1}
    assert any("'broken' could not be evaluated (failurePolicy Ignore)" in w for w in decision.warnings)


def test_fail_denies_naming_the_policy_and_the_expression() -> None:
    decision = _with_broken("Fail").evaluate(_pod())
    assert not decision.allowed and decision.reason == "InternalError"
    assert "broken" in decision.message and "division by zero" in decision.message
    assert decision.claim is None


@pytest.mark.parametrize("failure", ["Ignore", "Fail"])
def test_a_pod_the_broken_policy_does_not_match_is_untouched_by_it(failure: str) -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["resources"] = {}
    decision = _with_broken(failure).evaluate(pod)
    assert decision.allowed and decision.claim is None and not decision.warnings
