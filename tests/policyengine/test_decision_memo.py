"""The whole-evaluation memo (`_memo.WholePlan`, `DecisionEntry`) and the pod facts memo (`PolicyMemo.pod_facts`):
a decision or the facts are reused only for pods equal in every input read, and a reused decision is the one a cold
evaluation makes, with a claim of its own."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from policyengine import PolicySet, load_policies
from policyengine.decision import Decision
from policyengine.translate import translate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from policy_eval import generate_pods  # noqa: E402

SHIPPED = load_policies()


def _cold() -> PolicySet:
    return PolicySet.of(SHIPPED.policies, memoize=False)


def _same(memoized: Decision, fresh: Decision) -> None:
    assert memoized.to_json() == fresh.to_json()
    assert {k: dict(v) for k, v in memoized.variables.items()} == {k: dict(v) for k, v in fresh.variables.items()}
    assert [dict(c.variables) for c in memoized.containers] == [dict(c.variables) for c in fresh.containers]
    assert memoized.held_bytes == fresh.held_bytes
    assert memoized.claim_digest in ("", fresh.claim_digest or memoized.claim_digest)


def _namespace(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": labels}}


def _pod(
    name: str = "p",
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    scheduler: str | None = None,
    container: str = "c",
    gpus: int = 1,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"seq": name}}
    if annotations is not None:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "containers": [{"name": container, "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


# Pairs of inputs that differ only where some policy (or the facts) looks, each pair's decisions different.
VARIANTS: list[tuple[str, list[tuple[dict[str, Any], dict[str, Any] | None]]]] = [
    ("vram annotation (facts)", [(_pod(annotations={"gpudra.io/vram": v}), None) for v in ("10Gi", "70Gi")]),
    (
        "compute capability annotation (right-size)",
        [(_pod(annotations={"gpudra.io/vram": "10Gi", "gpudra.io/compute-capability": v}), None) for v in ("8.0", "9")],
    ),
    (
        "topology annotation (multi-gpu)",
        [(_pod(gpus=2, annotations={"gpudra.io/topology": v}), None) for v in ("nvlink", "pcie")],
    ),
    (
        "share annotation (right-size)",
        [(_pod(annotations={"gpudra.io/vram": "10Gi", "gpudra.io/share": v}), None) for v in ("false", "mps")],
    ),
    ("namespace max-vram label", [(_pod(), _namespace({"gpudra.io/max-vram": v})) for v in ("20Gi", "90Gi")]),
    ("namespace mode label", [(_pod(), _namespace({"gpudra.io/mode": v})) for v in ("enforce", "audit")]),
    ("scheduler name (facts)", [(_pod(scheduler=v), None) for v in ("default-scheduler", "volcano")]),
    ("container name (claim)", [(_pod(container=v), None) for v in ("a", "b")]),
]


@pytest.mark.parametrize("inputs", [v[1] for v in VARIANTS], ids=[v[0] for v in VARIANTS])
def test_inputs_differing_where_a_policy_or_the_facts_look_get_their_own_decisions(
    inputs: list[tuple[dict[str, Any], dict[str, Any] | None]],
) -> None:
    policies = PolicySet.of(SHIPPED.policies)
    cold = [_cold().evaluate(pod, namespace) for pod, namespace in inputs]
    assert cold[0].to_json() != cold[1].to_json()  # the pair is one the memo must tell apart
    for _round in range(2):  # the second round from the memo
        for (pod, namespace), fresh in zip(inputs, cold, strict=True):
            renamed = copy.deepcopy(pod)
            renamed["metadata"]["name"] += f"-{_round}"  # read by no policy: the memo is used
            _same(policies.evaluate(renamed, namespace), fresh)
    assert policies.memo_sizes()["decision"] == 2 and policies.memo_sizes()["facts"] >= 1


def test_facts_not_memoized_when_the_caller_says_the_pod_is_too_large_to_key() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pod = _pod(annotations={"gpudra.io/vram": "10Gi"})
    _same(policies.evaluate(pod, memoize_facts=False), _cold().evaluate(pod))
    assert policies.memo_sizes()["facts"] == 0
    _same(policies.evaluate(pod), _cold().evaluate(pod))
    assert policies.memo_sizes()["facts"] == 1


def test_a_reused_decision_is_the_cold_one_for_varied_pods() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pods = generate_pods(120, seed=7)
    for pod, namespace in pods + pods:
        _same(policies.evaluate(pod, namespace), _cold().evaluate(pod, namespace))
    assert policies.memo_sizes()["decision"] > 0


def test_a_reused_decision_has_a_claim_of_its_own() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    first = policies.evaluate(_pod(name="a"))
    assert first.claim is not None
    expected = copy.deepcopy(dict(first.claim))
    first.claim["devices"]["requests"].clear()
    second = policies.evaluate(_pod(name="b"))
    third = policies.evaluate(_pod(name="c"))
    assert second.claim == expected and third.claim == expected
    assert second.claim is not third.claim
    assert second.claim["devices"] is not third.claim["devices"]
    second.containers[0].replaces["nvidia.com/gpu"] = 9  # type: ignore[index]
    assert dict(third.containers[0].replaces) == {"nvidia.com/gpu": 1}
    assert translate(_pod(name="c"), third).patch == translate(_pod(name="c"), _cold().evaluate(_pod(name="c"))).patch


def test_a_decision_with_a_violation_is_the_cold_one_again() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    bad = _pod(annotations={"gpudra.io/vram": "10Gi", "gpudra.io/compute-capability": "x" * 5000})
    for _ in range(2):
        _same(policies.evaluate(bad), _cold().evaluate(bad))


def _slim(decision: Decision) -> dict[str, Any]:
    """What a decision without variables shows: every field, its containers' too, and what it held."""
    return {
        "json": decision.to_json(),
        "variables": dict(decision.variables),
        "containers": [dict(c.variables) for c in decision.containers],
        "held_bytes": decision.held_bytes,
    }


def test_a_decision_without_variables_is_the_full_one_without_them_memoized_or_not() -> None:
    """`with_variables=False` (the webhook's) skips restoring a memoized decision's variables: what is left is what
    `without_variables()` leaves of the full decision, on a memo miss and on a hit, whichever came first."""
    pods = generate_pods(120, seed=11)
    slim_first, full_first = PolicySet.of(SHIPPED.policies), PolicySet.of(SHIPPED.policies)
    for pod, namespace in pods + pods:
        full = _cold().evaluate(pod, namespace)
        assert full.variables or any(c.variables for c in full.containers) or full.claim is None
        expected = _slim(full.without_variables())
        slim = slim_first.evaluate(pod, namespace, with_variables=False)
        assert _slim(slim) == expected
        memoized = full_first.evaluate(pod, namespace).without_variables()
        assert _slim(memoized) == expected
        assert (slim.claim_digest, slim.claim_blob) == (memoized.claim_digest, memoized.claim_blob)
        assert _slim(full_first.evaluate(pod, namespace, with_variables=False)) == expected
        # and a memo filled without them still serves them in full
        _same(slim_first.evaluate(pod, namespace), full)
    assert slim_first.memo_sizes()["decision"] > 0
