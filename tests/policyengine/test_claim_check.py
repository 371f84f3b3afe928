"""policyengine.claim_check: decided claims checked against device shapes, and `spec.onUnsatisfiable`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.gpus import device_classes
from dra.shapes import DeviceShapes, fold_shapes
from policyengine import ClaimCheck, PolicySet, load_policies, load_policy_text
from policyengine.translate import translate
from tests.dra.shapes._clusters import node_slices

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

HUGE = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: huge}
spec:
  mode: enforce
  %s
  matchConditions:
  - {name: gpu, expression: gpu.legacy}
  claim:
    deviceClassName: gpu.nvidia.com
    selectors: ["device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('500Gi')) >= 0"]
"""


def _shapes(*kinds: str) -> DeviceShapes:
    return fold_shapes([s for k, kind in enumerate(kinds) for s in node_slices(kind, f"n{k}")], device_classes())


def _pod(namespace: str = "default", gpus: int = 1) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [container]}}  # fmt: skip


def _huge(line: str, shapes: DeviceShapes) -> PolicySet:
    policies, errors = load_policy_text(HUGE % line)
    assert not errors
    return PolicySet.of(policies).with_claim_check(ClaimCheck(lambda: shapes))


def test_on_unsatisfiable_defaults_to_deny_and_is_checked_at_load() -> None:
    (policy,), _ = load_policy_text(HUGE % "")
    assert policy.on_unsatisfiable == "Deny"
    _, errors = load_policy_text(HUGE % "onUnsatisfiable: Maybe")
    assert (
        errors and "spec.onUnsatisfiable" in str(errors[0]) and "'Deny', 'Warn' or 'LeaveUnchanged'" in str(errors[0])
    )


def test_deny_refuses_with_the_evidence() -> None:
    shapes = _shapes("L40S", "H100-SXM5-80GB")
    decision = _huge("", shapes).evaluate(_pod())
    assert not decision.allowed and decision.reason == "Invalid"
    assert decision.message.startswith("GPUClaimPolicy 'huge': no device can satisfy this claim")
    assert "memory >= 500Gi" in decision.message and "the largest device memory is 81559Mi" in decision.message
    assert translate(_pod(), decision).templates == ()
    unchecked = _huge("", shapes).with_claim_check(None).evaluate(_pod())
    assert unchecked.allowed and unchecked.claim is not None


def test_warn_keeps_the_claim_and_leave_unchanged_keeps_the_pod() -> None:
    shapes = _shapes("L40S")
    warned = _huge("onUnsatisfiable: Warn", shapes).evaluate(_pod())
    assert warned.allowed and warned.claim is not None
    assert any("no device can satisfy this claim" in w for w in warned.warnings)
    assert len(translate(_pod(), warned).templates) == 1
    left = _huge("onUnsatisfiable: LeaveUnchanged", shapes).evaluate(_pod())
    assert left.allowed and left.claim is None and left.containers == ()
    assert any(w.startswith("left untranslated (onUnsatisfiable: LeaveUnchanged)") for w in left.warnings)
    translation = translate(_pod(), left)
    assert not translation.changed and translation.templates == ()


def test_audit_mode_only_records() -> None:
    shapes = _shapes("L40S")
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "default", "labels": {"gpudra.io/mode": "audit"}}}  # fmt: skip
    decision = _huge("", shapes).evaluate(_pod(), namespace)
    assert decision.allowed and decision.mode == "audit"
    assert any(a.startswith("would refuse (onUnsatisfiable: Deny)") for a in decision.audit)


def test_a_view_that_cannot_decide_changes_nothing() -> None:
    empty = fold_shapes([], device_classes())
    decision = _huge("", empty).evaluate(_pod())
    assert decision.allowed and decision.claim is not None and not decision.warnings


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return load_policies()


def test_the_readme_tp4_example_in_team_a_is_refused_naming_max_vram(shipped: PolicySet) -> None:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    namespace = yaml.safe_load((EXAMPLES / "namespace-team-a.yaml").read_text())
    decision = shipped.with_claim_check(ClaimCheck(lambda: _shapes("h100-dynamic", "a100-static", "L40S"))).evaluate(
        pod, namespace
    )
    assert not decision.allowed
    assert "cap namespace team-a: gpudra.io/max-vram=160Gi, gpudra.io/max-gpus=4" in decision.message
    assert "request vllm (size 53634Mi from the model estimate)" in decision.message
    assert "every alternative asks memory >= 53634Mi and memory <= 40Gi" in decision.message


def test_dead_alternatives_are_dropped_before_the_template_is_named(shipped: PolicySet) -> None:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    pod["metadata"]["namespace"] = "default"
    plain = shipped.evaluate(pod)
    checked = shipped.with_claim_check(ClaimCheck(lambda: _shapes("H100-SXM5-80GB"))).evaluate(pod)
    assert plain.claim is not None and checked.claim is not None and checked.allowed
    names = [s["name"] for s in checked.claim["devices"]["requests"][0]["firstAvailable"]]
    assert "same-partition4" not in names and "same-nvlinkgroup" not in names and "any" in names
    (template,) = translate(pod, checked).templates
    assert template["spec"]["spec"] == checked.claim
    (before,) = translate(pod, plain).templates
    assert template["metadata"]["name"] != before["metadata"]["name"]  # named from the claim that leaves
    patch = translate(pod, checked).patch
    assert template["metadata"]["name"] in repr(patch)
