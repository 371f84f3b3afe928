"""Sizing facts in the policy engine: gpu.containers[].sizing, the observed lookup, the memo, the shipped right-size."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dra.sizing import ObservedSizing
from policyengine import load_policies, pod_facts, shipped_policies_dir

GiB = 2**30
POLICIES = load_policies(shipped_policies_dir())
# right-size's MIG table: profile -> decimal GB its name promises.
PROFILE_GB = {
    p["profile"]: p["gb"] for p in next(p for p in POLICIES.policies if p.name == "right-size").params["migProfiles"]
}


class Lookup:
    def __init__(self, vram: int | None, raises: bool = False) -> None:
        self.vram, self.raises = vram, raises
        self.calls: list[tuple[str, str, str, str]] = []

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None:
        self.calls.append((namespace, owner_kind, owner_name, container))
        if self.raises:
            raise RuntimeError("cache broken")
        if self.vram is None:
            return None
        return ObservedSizing(self.vram, self.vram * 3 // 4, 1200, 604800, "2025-01-01T00:00:00Z")


def _pod(annotations: dict[str, str] | None = None, command: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "embed-7d9f8c6b5-abcde",
            "namespace": "team-a",
            "labels": {"pod-template-hash": "7d9f8c6b5"},
            "annotations": annotations or {},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "embed-7d9f8c6b5", "controller": True}],
        },
        "spec": {"containers": [{"name": "app", "image": "app", **({"command": command} if command else {}),
                                 "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }  # fmt: skip


def _first_alternative(decision: Any) -> str:
    return str(decision.claim["devices"]["requests"][0]["firstAvailable"][0]["name"])


def test_observed_facts_and_owner_key() -> None:
    lookup = Lookup(6 * GiB)
    facts = pod_facts(_pod(), sizing=lookup, namespace="team-a").to_cel()
    sizing = facts["containers"][0]["sizing"]
    assert (sizing["source"], sizing["vram"], sizing["vramBytes"], sizing["samples"], sizing["window"]) == (
        "observed",
        "6144Mi",
        6 * GiB,
        1200,
        "168h",
    )
    assert facts["sizing"] == sizing and lookup.calls == [("team-a", "Deployment", "embed", "app")]


def test_two_observed_sizings_get_two_claims_despite_the_memo() -> None:
    small = POLICIES.evaluate(_pod(), sizing=Lookup(4 * GiB))
    large = POLICIES.evaluate(_pod(), sizing=Lookup(30 * GiB))
    again = POLICIES.evaluate(_pod(), sizing=Lookup(4 * GiB))
    assert small.policy == large.policy == "right-size"
    assert _first_alternative(small) == "mig-1g-5gb" and _first_alternative(large) == "mig-1g-35gb"
    assert again.claim == small.claim
    assert POLICIES.evaluate(_pod()).policy == "whole-gpu"  # no lookup: no observed source, as before


def test_annotation_wins_and_a_broken_lookup_never_fails_admission() -> None:
    facts = pod_facts(_pod({"gpudra.io/vram": "10Gi"}), sizing=Lookup(4 * GiB)).to_cel()
    assert facts["sizing"]["source"] == "annotation" and facts["sizing"]["vramBytes"] == 10 * GiB
    broken = POLICIES.evaluate(_pod(), sizing=Lookup(None, raises=True))
    assert broken.allowed and broken.policy == "whole-gpu"
    reason = pod_facts(_pod(), sizing=Lookup(None, raises=True)).to_cel()["sizing"]["reason"]
    assert reason.startswith("observed lookup failed (RuntimeError: cache broken)")


def test_unknown_model_gets_a_whole_gpu_and_the_reason_says_unknown() -> None:
    pod = _pod(command=["vllm", "serve", "example-org/private-13b"])
    sizing = pod_facts(pod).to_cel()["sizing"]
    assert sizing["source"] == "default" and "unknown" in sizing["reason"] and sizing["server"] == "vllm"
    assert POLICIES.evaluate(pod).policy == "whole-gpu"


@settings(max_examples=40, deadline=None)
@given(st.integers(256, 150_000))
def test_the_chosen_device_always_holds_the_sizing_vram(mib: int) -> None:
    decision = POLICIES.evaluate(_pod(), sizing=Lookup(mib * 2**20))
    assert decision.claim is not None
    for alt in decision.claim["devices"]["requests"][0]["firstAvailable"]:
        if alt["name"].startswith("mig-"):
            profile = alt["name"][4:].replace("-", ".", 1)
            assert PROFILE_GB[profile] * 1e9 >= mib * 2**20
        elif alt["name"] == "shared":
            assert alt["capacity"]["requests"]["memory"] == f"{mib}Mi"
        else:
            assert f"quantity('{mib}Mi')" in alt["selectors"][0]["cel"]["expression"]


def test_audit_mode_says_what_observed_usage_would_size_the_pod_to() -> None:
    from policyengine.translate import translate

    audit_ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"gpudra.io/mode": "audit"}},
    }
    decision = POLICIES.evaluate(_pod(), audit_ns, sizing=Lookup(6 * GiB))
    assert decision.allowed and decision.mode == "audit" and not decision.mutates
    assert decision.sizing["app"].startswith("6Gi from observed: ")
    result = translate(_pod(), decision)
    assert not result.patch and not result.templates  # audit: the pod is left as it is
    assert any(w.startswith("audit: would size container app to 6Gi from observed: ") for w in result.warnings)
    assert '"app":"6Gi from observed: ' in result.audit_annotations["gpudra.io/would-size"]
    # Sized by the pod's own annotation: nothing to say beyond the would-be claim.
    annotated = POLICIES.evaluate(_pod({"gpudra.io/vram": "6Gi"}), audit_ns, sizing=Lookup(None))
    assert annotated.sizing == {}
