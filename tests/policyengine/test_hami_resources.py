"""HAMi resources (`nvidia.com/gpumem`, `gpumem-percentage`, `gpucores`) and the per-claim device limit.

HAMi's resources become the right-size policy's hints; translation removes them from the pod (a cluster without
HAMi would leave it pending) with one warning per resource saying what it became. A device count beyond what one
DRA claim allocates (AllocationResultsMaxSize, 32) is refused before any policy runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpudra.commands.translate import translate_file
from policyengine import HAMI_RESOURCES, load_policies, pod_facts
from policyengine.pod_shape import check_pod_shape
from policyengine.translate import translate
from webhook.review import AdmissionDenied

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_policies(ROOT / "policies")
WHOLE_GPU_ONLY = load_policies(ROOT / "policies" / "whole-gpu.yaml")


def _pod(limits: dict[str, Any], requests: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": dict(limits)}
    if requests is not None:
        resources["requests"] = dict(requests)
    metadata: dict[str, Any] = {"name": "p", "namespace": "team-a"}
    if annotations:
        metadata["annotations"] = {k.replace("_", "/", 1).replace("_", "-"): v for k, v in annotations.items()}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [
        {"name": "cuda", "image": "cuda", "resources": resources}]}}  # fmt: skip


def _all_resources(pod: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for container in pod["spec"]["containers"]:
        for part in ("requests", "limits"):
            found.update((container.get("resources") or {}).get(part) or {})
    return found


HAMI = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000, "nvidia.com/gpumem-percentage": 50, "nvidia.com/gpucores": 30}


def test_the_hami_resource_names_are_hamis_defaults() -> None:
    # HAMi's resourceMem, resourceMemPercentage and resourceCores defaults (docs/config.md, charts/hami values).
    assert set(HAMI_RESOURCES) == {"nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"}


def test_hami_facts_reach_cel_per_container_limits_winning_and_zeros_dropped() -> None:
    pod = _pod(
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem": "4000", "nvidia.com/gpucores": 0},
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000, "nvidia.com/gpumem-percentage": 25},
    )
    pod["spec"]["containers"].append({"name": "sidecar", "resources": {"limits": {"nvidia.com/gpumem": 100}}})
    gpu = pod_facts(pod).to_cel()
    assert gpu["hami"] is True
    assert [c["name"] for c in gpu["containers"]] == ["cuda"]  # no legacy GPU: not a GPU container, no facts
    assert gpu["containers"][0]["hami"] == {"gpumem": 4000, "gpumemPercentage": 25}
    assert pod_facts(_pod({"nvidia.com/gpu": 1})).to_cel()["hami"] is False


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("nvidia.com/gpucores", 101, "expected a whole number of percent from 0 to 100 (got 101)"),
        ("nvidia.com/gpumem-percentage", "150", "expected a whole number of percent from 0 to 100 (got '150')"),
        ("nvidia.com/gpumem", "1.5", "expected a whole number of MiB (got '1.5')"),
        ("nvidia.com/gpumem", -3, "expected a whole number of MiB (got -3)"),
    ],
)
def test_a_bad_hami_value_is_invalid_input_naming_the_field(resource: str, value: Any, expected: str) -> None:
    decision = SHIPPED.evaluate(_pod({"nvidia.com/gpu": 1, resource: value}))
    assert not decision.allowed and decision.reason == "Invalid"
    assert f"spec.containers[0].resources.limits[{resource}]" in decision.message
    assert expected in decision.message


def test_right_size_maps_every_hami_resource_and_translation_removes_them_with_one_warning_each() -> None:
    pod = _pod({**HAMI, "cpu": "1"}, dict(HAMI))
    decision = SHIPPED.evaluate(pod)
    assert decision.policy == "right-size"
    result = translate(pod, decision)
    assert _all_resources(result.pod) == {"cpu": "1"}
    hami_warnings = [w for w in result.warnings if w.startswith("HAMi ")]
    for name in HAMI_RESOURCES:
        assert len([w for w in hami_warnings if w.startswith(f"HAMi {name}: ")]) == 1, (name, hami_warnings)
    # gpumem wins over gpumem-percentage, as in HAMi's scheduler.
    assert any("became the right-size VRAM request 3000Mi" in w for w in hami_warnings)
    assert any("gpumem-percentage: 50" in w and "ignored" in w for w in hami_warnings)
    request = decision.claim["devices"]["requests"][0] if decision.claim else {}
    shared = [s for s in request["firstAvailable"] if s["name"] == "shared"]
    assert shared[0]["capacity"] == {"requests": {"memory": "3000Mi"}}
    # gpucores 30: only MIG profiles with at least 30 % of the 7 compute slices (3g and up).
    migs = [s["name"] for s in request["firstAvailable"] if s["name"].startswith("mig-")]
    assert migs and all(int(name.split("-")[1][0]) >= 3 for name in migs)


def test_a_policy_that_ignores_hami_still_gets_them_removed_with_a_warning_saying_so() -> None:
    pod = _pod({**HAMI, "memory": "1Gi"})
    decision = WHOLE_GPU_ONLY.evaluate(pod)
    assert decision.policy == "whole-gpu"
    result = translate(pod, decision)
    assert _all_resources(result.pod) == {"memory": "1Gi"}
    assert list(result.warnings) == [
        f"HAMi resource {name}: {HAMI[name]} ({meaning}) removed from container 'cuda': GPUClaimPolicy 'whole-gpu' "
        "does not read it, the container's DRA request asks for 1 x gpu.nvidia.com"
        for name, meaning in (
            ("nvidia.com/gpumem", "MiB of device memory per GPU"),
            ("nvidia.com/gpumem-percentage", "percent of the device's memory"),
            ("nvidia.com/gpucores", "percent of the device's SMs"),
        )
    ]


def test_audit_mode_leaves_the_hami_resources_in_place() -> None:
    pod = _pod(dict(HAMI))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {
        "gpudra.io/mode": "audit"}}}  # fmt: skip
    decision = SHIPPED.evaluate(pod, namespace)
    result = translate(pod, decision)
    assert not result.patch and _all_resources(result.pod) == HAMI


@pytest.mark.parametrize("count", ["2Ki", "33", 33, "1e3"])
def test_a_count_beyond_one_claims_limit_is_denied_naming_the_container_resource_and_limit(count: Any) -> None:
    decision = SHIPPED.evaluate(_pod({"nvidia.com/gpu": count}))
    assert not decision.allowed and decision.reason == "Invalid" and decision.claim is None
    assert "spec.containers[0].resources.limits[nvidia.com/gpu]: container 'cuda'" in decision.message
    assert "at most 32 (resource.k8s.io/v1 AllocationResultsMaxSize)" in decision.message


def test_32_devices_are_allowed_but_33_over_two_containers_are_not() -> None:
    assert SHIPPED.evaluate(_pod({"nvidia.com/gpu": 32})).allowed
    pod = _pod({"nvidia.com/gpu": 16})
    pod["spec"]["initContainers"] = [{"name": "warm", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 17}}}]
    decision = SHIPPED.evaluate(pod)
    assert not decision.allowed
    assert "33 GPU devices in all ('warm' 17, 'cuda' 16)" in decision.message
    assert "allocates at most 32" in decision.message


@pytest.mark.parametrize("count", ["0.5", "-1", "1m"])
def test_fractional_or_negative_counts_stay_invalid(count: str) -> None:
    decision = SHIPPED.evaluate(_pod({"nvidia.com/gpu": count}))
    assert not decision.allowed and "expected a whole number of devices" in decision.message


def test_the_cli_refuses_2ki_naming_the_container_and_the_limit(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(_pod({"nvidia.com/gpu": "2Ki"})))
    outcome = translate_file(path)
    # Denied (1) by the policy engine's facts, or refused as bad input (2) by the pod-shape check before it.
    assert outcome.code in (1, 2) and outcome.stdout == ""
    assert "container 'cuda'" in outcome.stderr and "nvidia.com/gpu" in outcome.stderr
    assert "32" in outcome.stderr and "AllocationResultsMaxSize" in outcome.stderr


def test_the_webhook_pod_shape_check_names_the_container() -> None:
    with pytest.raises(AdmissionDenied) as caught:
        check_pod_shape(_pod({"nvidia.com/gpu": "2Ki"}))
    assert caught.value.code == 400
    assert "of container 'cuda' is '2Ki'" in str(caught.value.message)
    assert "AllocationResultsMaxSize" in str(caught.value.message)
