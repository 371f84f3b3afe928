"""The engine: evaluation order, shadowing, modes, failure policies, cost budgets, claim building errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policyengine import Decision, PolicySet, load_policies, load_policy_text


def _set(*documents: str) -> PolicySet:
    policies, errors = load_policy_text("---\n".join(documents), "test.yaml")
    assert errors == []
    return PolicySet.of(policies)


def _claim_policy(name: str, priority: int, klass: str = "gpu.nvidia.com", extra: str = "") -> str:
    return f"""\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: {name}}}
spec:
  priority: {priority}
  matchConditions:
  - {{name: legacy, expression: gpu.legacy}}
  claim:
    deviceClassName: {klass}
    count: {{expression: "legacy['nvidia.com/gpu']"}}
{extra}"""


def _pod(gpus: Any = 1, name: str = "c", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", **meta},
        "spec": {"containers": [{"name": name, "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
    }


def test_the_highest_priority_claim_policy_wins_and_shadows_the_rest() -> None:
    policies = _set(_claim_policy("low", 1, "low.example.com"), _claim_policy("high", 9, "high.example.com"))
    decision = policies.evaluate(_pod(2))
    assert decision.policy == "high" and decision.shadowed == ("low",)
    assert decision.claim == {
        "devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "high.example.com", "count": 2}}]}
    }
    assert decision.mutates and decision.mode == "enforce"


def test_equal_priorities_are_ordered_by_name() -> None:
    policies = _set(_claim_policy("zeta", 5, "z.example.com"), _claim_policy("alpha", 5, "a.example.com"))
    assert policies.names() == ["alpha", "zeta"]
    assert policies.evaluate(_pod()).policy == "alpha"


def test_decisions_are_deterministic_and_json_serialisable() -> None:
    policies = load_policies()
    pod = _pod(4, annotations={"gpudra.io/vram": "12Gi"})
    first, second = policies.evaluate(pod), policies.evaluate(pod)
    assert first == second
    assert json.loads(json.dumps(first.to_json())) == first.to_json()


def test_variables_are_recorded_per_policy_and_per_container() -> None:
    extra = """\
  variables:
  - {name: total, expression: gpu.total}
  - {name: twice, expression: variables.total * 2}
"""
    text = _claim_policy("p", 0).replace(
        "  claim:\n", extra + "  claim:\n    variables:\n    - {name: mine, expression: container.name}\n"
    )
    lazy = _set(text).evaluate(_pod(3))
    assert lazy.variables == {"p": {}}, "variables nobody reads are not evaluated"
    assert lazy.containers[0].replaces == {"nvidia.com/gpu": 3}
    decision = _set(text).explaining().evaluate(_pod(3))
    assert decision.variables == {"p": {"total": 3, "twice": 6}}
    assert decision.containers[0].variables == {"mine": "c"}


LAZY = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: p}}
spec:
  variables:
  - {{name: broken, expression: "object.metadata.labels['nope']"}}
  - {{name: gpus, expression: "gpu.total > 0"}}
  claim:
    deviceClassName: gpu.nvidia.com
    count: {{expression: "{count}"}}
"""


def test_variables_are_evaluated_when_read_and_their_errors_belong_to_the_reader() -> None:
    ok = _set(LAZY.format(count="variables.gpus ? 1 : 2")).evaluate(_pod(1, labels={}))
    assert ok.allowed and ok.variables == {"p": {"gpus": True}}
    broken = _set(LAZY.format(count="variables.broken == 'x' ? 1 : 2")).evaluate(_pod(1, labels={}))
    assert not broken.allowed
    assert "variables.broken (test.yaml:6:32): no such key: nope" in broken.message
    assert "spec.claim.count.expression: evaluation error" in broken.message
    explained = _set(LAZY.format(count="1")).explaining().evaluate(_pod(1, labels={}))
    assert not explained.allowed and "spec.variables[0].expression: evaluation error" in explained.message


VALIDATING = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: limit}}
spec:
  mode: {mode}
  priority: 50
  validations:
  - expression: gpu.total <= 2
    messageExpression: "'too many: ' + string(gpu.total)"
    reason: Forbidden
  - expression: "!has(object.metadata.labels)"
  warnings:
  - expression: gpu.total < 2
    message: two or more GPUs
"""


def test_failed_validations_deny_in_enforce_mode_with_their_messages() -> None:
    policies = _set(VALIDATING.format(mode="enforce"), _claim_policy("claim", 0))
    decision = policies.evaluate(_pod(3, labels={"a": "b"}))
    assert not decision.allowed and decision.reason == "Forbidden"
    assert decision.message == (
        "GPUClaimPolicy 'limit' denied the pod: too many: 3; "
        "GPUClaimPolicy 'limit' denied the pod: failed expression: !has(object.metadata.labels)"
    )
    assert decision.warnings == ("two or more GPUs",)
    assert not decision.mutates


def test_audit_mode_records_instead_of_denying() -> None:
    decision = _set(VALIDATING.format(mode="audit")).evaluate(_pod(3))
    assert decision.allowed
    assert decision.audit == ("GPUClaimPolicy 'limit' would deny the pod: too many: 3",)
    assert "audit: GPUClaimPolicy 'limit' would deny the pod: too many: 3" in decision.warnings


@pytest.mark.parametrize(
    ("label", "allowed", "mode"), [("audit", True, "audit"), ("enforce", False, "enforce"), ("off", True, None)]
)
def test_the_namespace_mode_label_overrides_every_policy(label: str, allowed: bool, mode: str | None) -> None:
    policies = _set(
        VALIDATING.format(mode="enforce"),
        _claim_policy("claim", 0).replace("priority: 0", "priority: 0\n  mode: audit"),
    )
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns", "labels": {"gpudra.io/mode": label}},
    }
    decision = policies.evaluate(_pod(3), namespace)
    assert decision.allowed is allowed and decision.mode == mode


BROKEN = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: broken}}
spec:
  failurePolicy: {failure}
  priority: 60
  validations:
  - expression: object.metadata.labels['missing'] == 'x'
"""


def test_a_runtime_error_denies_under_failure_policy_fail_naming_file_line_and_expression() -> None:
    decision = _set(BROKEN.format(failure="Fail"), _claim_policy("claim", 0)).evaluate(_pod(1, labels={}))
    assert not decision.allowed and decision.reason == "InternalError"
    assert decision.message.startswith("GPUClaimPolicy 'broken' could not be evaluated: test.yaml:8:17:")
    assert "expression: object.metadata.labels['missing'] == 'x'" in decision.message
    assert decision.policy == "claim"


def test_a_runtime_error_is_skipped_with_a_warning_under_failure_policy_ignore() -> None:
    decision = _set(BROKEN.format(failure="Ignore"), _claim_policy("claim", 0)).evaluate(_pod(1, labels={}))
    assert decision.allowed and decision.claim is not None
    assert decision.warnings[0].startswith("GPUClaimPolicy 'broken' could not be evaluated (failurePolicy Ignore)")


def test_a_runaway_expression_is_stopped_by_the_cost_budget() -> None:
    runaway = BROKEN.format(failure="Fail").replace(
        "object.metadata.labels['missing'] == 'x'", "lists.range(2000).all(i, lists.range(2000).all(j, i + j >= 0))"
    )
    decision = _set(runaway).evaluate(_pod(1))
    assert not decision.allowed
    assert "cost budget exceeded" in decision.message


def test_a_match_condition_that_is_not_bool_is_an_error() -> None:
    text = _claim_policy("p", 0).replace("expression: gpu.legacy", "expression: gpu.total")
    decision = _set(text).evaluate(_pod(1))
    assert not decision.allowed and "expected a bool (got 1)" in decision.message


@pytest.mark.parametrize(
    ("count", "fragment"),
    [
        ("'0'", "spec.claim.count: expected a positive integer (got 0)"),
        ("'\"two\"'", "expected a positive integer (got 'two')"),
    ],
)
def test_a_claim_with_bad_values_is_a_policy_error(count: str, fragment: str) -> None:
    text = _claim_policy("p", 0).replace(
        "count: {expression: \"legacy['nvidia.com/gpu']\"}", f"count: {{expression: {count}}}"
    )
    decision = _set(text).evaluate(_pod(1))
    assert not decision.allowed and fragment in decision.message and decision.claim is None


FIRST_AVAILABLE = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: fa}
spec:
  matchConditions:
  - {name: legacy, expression: gpu.legacy}
  claim:
    firstAvailable:
    - name: small
      deviceClassName: mig.nvidia.com
      selectors: ["device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"]
    - name: big
      deviceClassName: gpu.nvidia.com
      count: {expression: "legacy['nvidia.com/gpu']"}
    constraints:
    - {requests: [big], matchAttribute: resource.kubernetes.io/pcieRoot}
    config:
    - opaque:
        driver: gpu.nvidia.com
        parameters: {kind: GpuConfig, sharing: {strategy: TimeSlicing}}
"""


def test_subrequest_names_in_constraints_and_config_are_qualified_by_the_request() -> None:
    decision = _set(FIRST_AVAILABLE).evaluate(_pod(2, name="worker"))
    assert decision.claim == {
        "devices": {
            "requests": [
                {
                    "name": "worker",
                    "firstAvailable": [
                        {
                            "name": "small",
                            "deviceClassName": "mig.nvidia.com",
                            "selectors": [
                                {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}
                            ],
                        },
                        {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    ],
                }
            ],
            "constraints": [{"requests": ["worker/big"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            "config": [
                {
                    "requests": ["worker"],
                    "opaque": {
                        "driver": "gpu.nvidia.com",
                        "parameters": {"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}},
                    },
                }
            ],
        }
    }


def test_an_unknown_subrequest_name_is_reported() -> None:
    decision = _set(FIRST_AVAILABLE.replace("requests: [big]", "requests: [huge]")).evaluate(_pod(1))
    assert not decision.allowed and "no subrequest named 'huge' (known: big, small)" in decision.message


def test_a_computed_selector_that_does_not_compile_is_reported() -> None:
    text = FIRST_AVAILABLE.replace(
        "selectors: [\"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"]",
        "selectors: {expression: \"['device.driver ==']\"}",
    )
    decision = _set(text).evaluate(_pod(1))
    assert not decision.allowed and "device selector does not compile" in decision.message


@pytest.mark.parametrize(
    ("value", "shown"),
    [("1.5", "'1.5'"), ("-1", "'-1'"), ("lots", "'lots', not a quantity"), (True, "True, not a quantity")],
)
def test_an_unreadable_legacy_count_is_invalid_input(value: Any, shown: str) -> None:
    decision = load_policies().evaluate(_pod(value))
    assert decision == Decision(
        False,
        f"pod cannot be read: spec.containers[0].resources.limits[nvidia.com/gpu]: "
        f"expected a whole number of devices (got {shown})",
        "Invalid",
        namespace="ns",
    )


def test_a_zero_count_asks_for_nothing() -> None:
    decision = load_policies().evaluate(_pod(0))
    assert decision.allowed and decision.claim is None and decision.containers == ()


def test_quantity_strings_count_as_devices() -> None:
    decision = load_policies().evaluate(_pod("2"))
    assert decision.containers[0].replaces == {"nvidia.com/gpu": 2}


def test_the_namespace_comes_from_the_pod_then_the_request_then_the_namespace_object() -> None:
    policies = _set(_claim_policy("p", 0))
    pod = _pod()
    del pod["metadata"]["namespace"]
    assert policies.evaluate(pod).namespace == "default"
    assert policies.evaluate(pod, request={"namespace": "from-request"}).namespace == "from-request"
    namespace = {"metadata": {"name": "from-object"}}
    assert policies.evaluate(pod, namespace).namespace == "from-object"
    assert policies.evaluate(_pod(), namespace).namespace == "ns"


def test_claim_model_round_trips_through_dra_model() -> None:
    pytest.importorskip("dra.model")
    decision = load_policies().evaluate(_pod(2))
    model = decision.claim_model()
    assert model.to_k8s() == decision.claim


def test_right_size_can_leave_out_the_shared_alternative() -> None:
    from policyengine import shipped_policies_dir

    text = (
        (shipped_policies_dir() / "right-size.yaml")
        .read_text()
        .replace("offerSharedGPU: true", "offerSharedGPU: false")
    )
    pod = _pod(1, annotations={"gpudra.io/vram": "8Gi"})
    names = [s["name"] for s in _set(text).evaluate(pod).claim["devices"]["requests"][0]["firstAvailable"]]  # type: ignore[index]
    shipped = load_policies().evaluate(pod).claim
    assert shipped is not None
    assert "shared" in [s["name"] for s in shipped["devices"]["requests"][0]["firstAvailable"]]
    assert "shared" not in names and names[-1] == "whole"
