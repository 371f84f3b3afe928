"""Translation of decisions into a ResourceClaimTemplate and a JSONPatch (DESIGN.md translation rules)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from policyengine import Decision, load_policies
from policyengine.translate import (
    POLICY_ANNOTATION,
    TRANSLATED_ANNOTATION,
    WOULD_TRANSLATE_ANNOTATION,
    claim_template,
    pointer,
    template_name,
    translate,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POLICIES = load_policies()


def _pod(resources: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}], **spec},
    }


def _translate(pod: dict[str, Any], namespace: dict[str, Any] | None = None) -> Any:
    return translate(pod, POLICIES.evaluate(pod, namespace))


def test_pointer_escapes_tilde_and_slash() -> None:
    assert pointer("metadata", "annotations", "gpudra.io/x~y") == "/metadata/annotations/gpudra.io~1x~0y"
    assert pointer("spec", "containers", 0) == "/spec/containers/0"


def test_the_template_name_is_a_hash_of_the_spec() -> None:
    claim = {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}
    canonical = json.dumps(claim, sort_keys=True, separators=(",", ":"))
    assert template_name(claim) == "gpudra-" + hashlib.sha256(canonical.encode()).hexdigest()[:10]
    reordered = {"devices": {"requests": [{"exactly": {"count": 1, "deviceClassName": "gpu.nvidia.com"}, "name": "c"}]}}
    assert template_name(reordered) == template_name(claim)
    other = copy.deepcopy(claim)
    other["devices"]["requests"][0]["exactly"]["count"] = 2
    assert template_name(other) != template_name(claim)
    template = claim_template(claim, "team-a")
    assert template["metadata"] == {
        "name": template_name(claim),
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/managed-by": "gpudra"},
    }
    assert template["spec"] == {"spec": claim} and template["apiVersion"] == "resource.k8s.io/v1"


def test_identical_requests_from_different_pods_share_one_template() -> None:
    first = _translate(_pod({"limits": {"nvidia.com/gpu": 2}}))
    pod = _pod({"limits": {"nvidia.com/gpu": 2}})
    pod["metadata"] = {"generateName": "web-", "namespace": "ns", "labels": {"app": "x"}}
    second = _translate(pod)
    assert first.templates == second.templates
    assert len(first.templates) == 1


@pytest.mark.parametrize(
    ("resources", "expected_resources", "removals"),
    [
        ({"limits": {"nvidia.com/gpu": 1}}, {}, ["/spec/containers/0/resources/limits"]),
        ({"requests": {"nvidia.com/gpu": 1}}, {}, ["/spec/containers/0/resources/requests"]),
        (
            {"requests": {"nvidia.com/gpu": 1, "cpu": "1"}, "limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
            {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
            [
                "/spec/containers/0/resources/requests/nvidia.com~1gpu",
                "/spec/containers/0/resources/limits/nvidia.com~1gpu",
            ],
        ),
        (
            {"limits": {"nvidia.com/mig-1g.10gb": 1, "cpu": "2"}},
            {"limits": {"cpu": "2"}},
            ["/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb"],
        ),
    ],
)
def test_legacy_resources_are_removed_from_requests_and_limits(
    resources: dict[str, Any], expected_resources: dict[str, Any], removals: list[str]
) -> None:
    pod = _pod(resources)
    result = _translate(pod)
    assert [op["path"] for op in result.patch if op["op"] == "remove"] == removals
    container = result.pod["spec"]["containers"][0]
    assert container["resources"] == {**expected_resources, "claims": [{"name": "gpudra", "request": "c"}]}
    name = result.templates[0]["metadata"]["name"]
    assert result.pod["spec"]["resourceClaims"] == [{"name": "gpudra", "resourceClaimTemplateName": name}]
    assert result.pod["metadata"]["annotations"] == {TRANSLATED_ANNOTATION: name, POLICY_ANNOTATION: "whole-gpu"}
    assert jsonpatch.apply_patch(pod, list(result.patch)) == result.pod


def test_the_pod_claim_gets_a_free_name_next_to_existing_claims() -> None:
    pod = _pod(
        {"limits": {"nvidia.com/gpu": 1}},
        resourceClaims=[
            {"name": "gpudra", "resourceClaimName": "mine"},
            {"name": "gpudra-2", "resourceClaimName": "x"},
        ],
    )
    pod["spec"]["containers"].append({"name": "d", "image": "i", "resources": {"claims": [{"name": "gpudra"}]}})
    result = _translate(pod)
    assert result.pod["spec"]["resourceClaims"][-1]["name"] == "gpudra-3"
    assert result.pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpudra-3", "request": "c"}]
    assert result.pod["spec"]["containers"][1] == pod["spec"]["containers"][1]


def test_an_existing_claims_list_is_appended_to() -> None:
    pod = _pod({"limits": {"nvidia.com/gpu": 1}})
    pod["spec"]["initContainers"] = [
        {"name": "i", "image": "i", "resources": {"claims": [{"name": "other"}]}, "restartPolicy": "Always"}
    ]
    pod["spec"]["resourceClaims"] = [{"name": "other", "resourceClaimName": "x"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = []
    result = _translate(pod)
    assert {
        "op": "add",
        "path": "/spec/containers/0/resources/claims/-",
        "value": {"name": "gpudra", "request": "c"},
    } in (result.patch)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("pod-*.yaml")), ids=lambda p: p.name)
def test_every_example_translates_idempotently(path: Path) -> None:
    pod = yaml.safe_load(path.read_text())
    original = copy.deepcopy(pod)
    decision = POLICIES.evaluate(pod)
    result = translate(pod, decision)
    assert pod == original, "translate must not modify its input"
    assert jsonpatch.apply_patch(pod, list(result.patch)) == result.pod
    again = translate(result.pod, POLICIES.evaluate(result.pod))
    assert again.patch == () and again.templates == ()
    assert again.pod == result.pod


def test_a_denied_decision_translates_to_nothing() -> None:
    pod = yaml.safe_load((EXAMPLES / "pod-mixed.yaml").read_text())
    decision = POLICIES.evaluate(pod)
    assert not decision.allowed
    result = translate(pod, decision)
    assert (result.patch, result.templates, result.pod) == ((), (), pod)


def test_audit_mode_reports_the_would_be_claim_without_mutating() -> None:
    pod = _pod({"limits": {"nvidia.com/gpu": 1}})
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns", "labels": {"gpudra.io/mode": "audit"}},
    }
    decision = POLICIES.evaluate(pod, namespace)
    assert decision.mode == "audit" and not decision.mutates
    result = translate(pod, decision)
    assert result.patch == () and result.templates == () and result.pod == pod
    recorded = json.loads(result.audit_annotations[WOULD_TRANSLATE_ANNOTATION])
    assert recorded == {"template": template_name(decision.claim or {}), "claim": decision.claim}
    assert result.warnings[-1].startswith(
        "audit: GPUClaimPolicy 'whole-gpu' would replace the legacy GPU resources of c"
    )


def test_a_decision_for_another_pod_is_refused() -> None:
    decision = POLICIES.evaluate(_pod({"limits": {"nvidia.com/gpu": 1}}))
    other = _pod({"limits": {"nvidia.com/gpu": 1}})
    other["spec"]["containers"][0]["name"] = "renamed"
    with pytest.raises(ValueError, match="decision does not belong to this pod"):
        translate(other, decision)


def test_to_json_has_the_cli_contract_keys() -> None:
    result = _translate(_pod({"limits": {"nvidia.com/gpu": 1}}))
    data = result.to_json()
    assert list(data) == ["pod", "templates", "patch", "warnings"]
    assert data["templates"][0]["kind"] == "ResourceClaimTemplate"


def test_an_empty_decision_is_a_no_op() -> None:
    pod = _pod({"limits": {"cpu": "1"}})
    result = translate(pod, Decision(True))
    assert result.pod == pod and not result.changed
