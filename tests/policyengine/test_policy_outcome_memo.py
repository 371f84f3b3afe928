"""The whole-policy memo (`_memo.Outcome`): a policy's pod-level outcome is reused only for pods equal in every input
its expressions read, and a decision is the same, to its held bytes, whether it was reused or computed."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path
from typing import Any

from policyengine import PolicySet, load_policies, load_policy_text
from policyengine._memo import weigh
from policyengine.decision import Decision, JsonView, claim_digest
from policyengine.translate import template_name, translate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from policy_eval import generate_pods  # noqa: E402

SHIPPED = load_policies()

LABELLED = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: team-label}
spec:
  priority: 2000
  matchConditions:
  - {name: legacy, expression: gpu.legacy}
  variables:
  - name: team
    expression: >-
      has(object.metadata.labels) && 'team' in object.metadata.labels ? object.metadata.labels['team'] : ''
  validations:
  - expression: "variables.team != 'blocked'"
    messageExpression: "'team ' + variables.team + ' may not use GPUs (container ' + gpu.containers[0].name + ')'"
  warnings:
  - expression: "variables.team != ''"
    message: pods should name their team
"""


def _same(memoized: Decision, fresh: Decision) -> None:
    assert memoized.to_json() == fresh.to_json()
    assert {k: list(v) for k, v in memoized.variables.items()} == {k: list(v) for k, v in fresh.variables.items()}
    assert [dict(c.variables) for c in memoized.containers] == [dict(c.variables) for c in fresh.containers]
    assert memoized.held_bytes == fresh.held_bytes


def _pod(labels: dict[str, str], name: str = "p", vram: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if vram is not None:
        metadata["annotations"] = {"gpudra.io/vram": vram}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }


def _policies() -> PolicySet:
    extra, errors = load_policy_text(LABELLED, "team.yaml")
    assert errors == []
    return PolicySet.of([*SHIPPED.policies, *extra])


def test_pods_differing_in_a_label_a_policy_reads_do_not_share_its_outcome() -> None:
    policies = _policies()
    allowed = policies.evaluate(_pod({"team": "ml"}))
    blocked = policies.evaluate(_pod({"team": "blocked"}))
    unnamed = policies.evaluate(_pod({}))
    assert allowed.allowed and not blocked.allowed and unnamed.allowed
    assert "team blocked may not use GPUs (container c)" in blocked.message
    assert "pods should name their team" in unnamed.warnings and "pods should name their team" not in allowed.warnings
    assert dict(allowed.variables["team-label"]) == {"team": "ml"}
    # and again, now from the memo, each as computed without it
    for labels in ({"team": "blocked"}, {"team": "ml"}, {}, {"team": "blocked"}):
        _same(policies.evaluate(_pod(labels)), _cold(labels))


def _cold(labels: dict[str, str]) -> Decision:
    extra, _ = load_policy_text(LABELLED, "team.yaml")
    return PolicySet.of([*SHIPPED.policies, *extra], memoize=False).evaluate(_pod(labels))


def test_pods_differing_only_in_what_no_policy_reads_share_every_outcome() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    policies.evaluate(_pod({"app": "x"}, name="first", vram="8Gi"))
    outcomes = policies.memo_sizes()["outcome"]
    assert outcomes > 0
    for i in range(20):  # a distinct name each (no shipped policy reads it); labels only multi-gpu reads
        decision = policies.evaluate(_pod({"app": "x"}, name=f"p-{i}", vram="8Gi"))
        _same(decision, PolicySet.of(SHIPPED.policies, memoize=False).evaluate(_pod({"app": "x"}, f"p-{i}", "8Gi")))
    assert policies.memo_sizes()["outcome"] == outcomes
    # an annotation right-size reads is a new outcome, and a different decision
    other = policies.evaluate(_pod({"app": "x"}, name="p", vram="not-a-quantity"))
    assert not other.allowed and "gpudra.io/vram must be a positive quantity" in other.message
    assert policies.memo_sizes()["outcome"] > outcomes


def test_memoized_outcomes_equal_fresh_ones_on_varied_pods_and_namespaces() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pods = generate_pods(300, seed=31)
    renamed = []
    for i, (pod, namespace) in enumerate(pods):  # the same pods again under other names: outcome memo hits
        again = copy.deepcopy(pod)
        again["metadata"]["name"] = f"again-{i}"
        renamed.append((again, namespace))
    for pod, namespace in pods + renamed:
        _same(policies.evaluate(pod, namespace), PolicySet.of(SHIPPED.policies).evaluate(pod, namespace))
    assert policies.memo_sizes()["outcome"] > 0


def test_the_mode_a_namespace_sets_is_part_of_the_outcome() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pod = _pod({}, vram="bogus")
    labels = {"gpudra.io/mode": "audit"}
    audit = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": labels}}
    enforced = policies.evaluate(pod, None)
    audited = policies.evaluate(pod, audit)
    assert not enforced.allowed and audited.allowed
    assert any(w.startswith("audit: GPUClaimPolicy 'right-size' would deny") for w in audited.warnings)
    _same(policies.evaluate(pod, None), PolicySet.of(SHIPPED.policies, memoize=False).evaluate(pod, None))
    _same(policies.evaluate(pod, audit), PolicySet.of(SHIPPED.policies, memoize=False).evaluate(pod, audit))


def _weigh_all(decision: Decision) -> int:
    """The held bytes as every value weighed afresh would charge them (the definition `held_bytes` follows)."""
    held = weigh(decision.message) + weigh(list(decision.warnings)) + weigh(list(decision.audit))
    held += weigh(dict(decision.claim)) if decision.claim is not None else 0
    views = [*decision.variables.values(), *(c.variables for c in decision.containers)]
    for view in views:
        assert isinstance(view, JsonView)
        held += weigh(dict(view.cel_values))
    return held


def test_held_bytes_charge_what_weighing_every_value_would() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    for pod, namespace in generate_pods(120, seed=5) * 2:
        decision = policies.evaluate(pod, namespace)
        expected = _weigh_all(decision)
        # values are weighed once when computed (to a deeper depth), the claim's lists by their entries
        assert 0.9 * expected <= decision.held_bytes <= 1.5 * expected + 1024, (decision.held_bytes, expected)


def test_the_digest_a_memoized_claim_carries_is_its_own() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    digests = blobs = 0
    for pod, namespace in generate_pods(200, seed=8) * 2:
        decision = policies.evaluate(pod, namespace)
        if decision.claim is None:
            assert decision.claim_digest == ""
            continue
        assert decision.claim_digest in ("", claim_digest(decision.claim))
        digests += decision.claim_digest != ""
        if decision.claim_blob is not None:
            blobs += 1
            assert pickle.loads(decision.claim_blob) == decision.claim
        translation = translate(pod, decision)
        for template in translation.templates:  # named by the claim as it is, whichever way the digest came
            spec = template["spec"]["spec"]
            assert template["metadata"]["name"] == template_name(spec)
            assert spec == decision.claim and spec is not decision.claim
            spec["devices"]["requests"].append({"name": "changed"})  # the template shares nothing with the decision
            assert spec != decision.claim
    assert digests > 0 and blobs > 0


def _containers(data: Any) -> list[Any]:
    found = [data] if isinstance(data, (dict, list)) else []
    for item in data.values() if isinstance(data, dict) else data if isinstance(data, list) else []:
        found.extend(_containers(item))
    return found


def test_a_memoized_claim_request_is_copied_whole_and_shares_nothing() -> None:
    from policyengine._claim import BuiltRequest
    from policyengine._memo import ClaimEntry

    selectors = [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index == 0"}}]
    plain = BuiltRequest({"name": "c", "exactly": {"count": 2, "selectors": selectors}}, [{"requests": ["c"]}], [])
    shared = BuiltRequest({"name": "c", "a": selectors, "b": selectors}, [], [])  # one list in two places
    odd = BuiltRequest({"name": "c", "n": 1.5, "k": (1, 2)}, [], [])  # a tuple: not JSON
    for built, pickled in ((plain, True), (shared, False), (odd, False)):
        entry = ClaimEntry.of(built, None, (), 0)
        assert (entry.blob is not None) is pickled
        first, second = entry.copy(), entry.copy()
        for copy_ in (first, second):
            assert (copy_.request, copy_.constraints, copy_.config) == (built.request, built.constraints, built.config)
        ids = [id(c) for c in _containers([first.request, first.constraints, first.config])]
        original = {id(c) for c in _containers([built.request, built.constraints, built.config])}
        assert len(ids) == len(set(ids)) and not original & set(ids)  # fresh objects, none shared
        first.request["name"] = "changed"
        assert second.request["name"] == "c" and built.request["name"] == "c"


def test_an_evaluation_leaves_no_reference_cycles() -> None:
    """Everything a decision holds is freed when it is dropped (no variables map holding the activation that holds
    it), so a busy webhook's garbage never waits for the cyclic collector."""
    import gc

    policies = PolicySet.of(SHIPPED.policies)
    pods = generate_pods(60, seed=12)
    for pod, namespace in pods:  # warm: memo tables and caches filled (what they keep is not garbage)
        policies.evaluate(pod, namespace)
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for pod, namespace in pods:
            decision = policies.evaluate(pod, namespace)
            assert decision.to_json()["allowed"] in (True, False)
            del decision
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_a_decision_without_variables_keeps_every_other_field() -> None:
    import dataclasses

    policies = PolicySet.of(SHIPPED.policies)
    for pod, namespace in generate_pods(40, seed=3):
        decision = policies.evaluate(pod, namespace)
        slim = decision.without_variables()
        assert slim.variables == {} and all(c.variables == {} for c in slim.containers)
        for f in dataclasses.fields(decision):
            if f.name not in ("variables", "containers"):
                assert getattr(slim, f.name) == getattr(decision, f.name), f.name
        assert [dataclasses.replace(c, variables={}) for c in decision.containers] == list(slim.containers)
        assert decision.variables or not decision.matched  # the original keeps its own
