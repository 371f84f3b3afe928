"""Hypothesis properties of translation over generated pods, with the shipped policies.

The patch applies cleanly to the pod it was made for and gives `Translation.pod`; the result holds no legacy
GPU resource; translating the result again is a no-op; the result and its template validate (dra.model).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine import is_legacy_resource, load_policies
from policyengine.translate import translate

POLICIES = load_policies()
NAMES = ["main", "worker", "sidecar", "init", "a", "b-2", "x0"]
LEGACY = ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]


@st.composite
def containers(draw: st.DrawFn, name: str, init: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "img"}
    resources: dict[str, Any] = {}
    legacy = draw(st.sampled_from([None, *LEGACY]))
    count: Any = draw(st.sampled_from([1, 2, 4, 8, "1", "2"]))
    where = draw(st.sampled_from(["requests", "limits", "both"]))
    for part in ("requests", "limits"):
        values: dict[str, Any] = {}
        if draw(st.booleans()):
            values["cpu"] = draw(st.sampled_from(["100m", "2"]))
        if legacy is not None and where in (part, "both"):
            values[legacy] = count
        if values or draw(st.booleans()):
            resources[part] = values
    if legacy is None and draw(st.booleans()):
        resources["claims"] = [{"name": "existing"}]
    if resources or draw(st.booleans()):
        container["resources"] = resources
    if draw(st.booleans()):
        container["args"] = draw(st.sampled_from([["--tensor-parallel-size", "2"], ["--port=80"], ["-tp=4"]]))
    if init and draw(st.booleans()):
        container["restartPolicy"] = "Always"
    return container


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    split = draw(st.integers(0, len(names) - 1))
    spec: dict[str, Any] = {"containers": [draw(containers(n, False)) for n in names[split:]]}
    if split:
        spec["initContainers"] = [draw(containers(n, True)) for n in names[:split]]
    everything = spec["containers"] + spec.get("initContainers", [])
    if any("claims" in c.get("resources", {}) for c in everything):
        spec["resourceClaims"] = [{"name": "existing", "resourceClaimTemplateName": "mine"}]
    metadata: dict[str, Any] = {"namespace": "team"}
    if draw(st.booleans()):
        metadata["name"] = "pod"
    else:
        metadata["generateName"] = "pod-"
    annotations = draw(
        st.sampled_from([None, {}, {"gpudra.io/vram": "8Gi"}, {"gpudra.io/vram": "30Gi", "gpudra.io/share": "mps"}])
    )
    if annotations is not None:
        metadata["annotations"] = annotations
    if draw(st.booleans()):
        metadata["labels"] = {"ray.io/node-type": "worker"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _legacy_left(pod: dict[str, Any]) -> list[str]:
    found = []
    for kind in ("initContainers", "containers"):
        for container in pod["spec"].get(kind, []):
            for part in ("requests", "limits"):
                found.extend(n for n in container.get("resources", {}).get(part, {}) if is_legacy_resource(n))
    return found


def _validate(pod: dict[str, Any], templates: tuple[dict[str, Any], ...]) -> None:
    from dra.model import Pod, ResourceClaimTemplate

    Pod.from_k8s(pod).validate_k8s()
    for template in templates:
        ResourceClaimTemplate.from_k8s(template).validate_k8s()
    requests = {r["name"] for t in templates for r in t["spec"]["spec"]["devices"]["requests"]}
    pod_claims = {c["name"]: c for c in pod["spec"].get("resourceClaims", [])}
    for kind in ("initContainers", "containers"):
        for container in pod["spec"].get(kind, []):
            for ref in container.get("resources", {}).get("claims", []):
                assert ref["name"] in pod_claims
                if "request" in ref:
                    assert ref["request"] in requests


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods())
def test_translation_properties(pod: dict[str, Any]) -> None:
    original = copy.deepcopy(pod)
    decision = POLICIES.evaluate(pod)
    result = translate(pod, decision)
    assert pod == original
    # The patch applies cleanly to the pod it was made for.
    assert jsonpatch.apply_patch(pod, list(result.patch)) == result.pod
    if decision.mutates:
        assert _legacy_left(result.pod) == []
        assert len(result.templates) == 1
        _validate(result.pod, result.templates)
    else:
        assert result.patch == () and result.pod == pod
        if _legacy_left(pod):
            # Left unmutated only when a policy said no (or there was nothing to build).
            assert not decision.allowed or decision.claim is None
    # Re-invocation is a no-op.
    again = translate(result.pod, POLICIES.evaluate(result.pod))
    assert again.patch == () and again.pod == result.pod
