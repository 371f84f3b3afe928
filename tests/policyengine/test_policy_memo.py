"""The engine's memo tables are invisible: a decision is the same whether it was memoized or computed afresh."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

from policyengine import PolicySet, load_policies, load_policy_text
from policyengine._deps import ALL_VARIABLES, closure, paths, reads
from policyengine._memo import Plan

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from policy_eval import generate_pods  # noqa: E402

SHIPPED = load_policies()


def _fresh(pod: dict[str, Any], namespace: dict[str, Any] | None) -> Any:
    return PolicySet.of(SHIPPED.policies).evaluate(pod, namespace)  # a new set: empty memo tables


def _same(a: Any, b: Any) -> None:
    assert a.to_json() == b.to_json()
    assert {k: list(v) for k, v in a.variables.items()} == {k: list(v) for k, v in b.variables.items()}  # order
    assert a.claim == b.claim
    assert [dict(c.variables) for c in a.containers] == [dict(c.variables) for c in b.containers]


def test_reads_finds_roots_and_variables() -> None:
    assert reads("gpu.legacy || gpu.dra") == (frozenset({"gpu"}), frozenset())
    assert reads("variables.a + variables . b + legacy['x']") == (frozenset({"legacy"}), frozenset({"a", "b"}))
    # An identifier inside a string literal is no read (the lexer's literals are blanked first); one in a comment
    # or as a comprehension variable counts: the answer may only over-approximate.
    assert reads("gpu.total > 1 ? 'object' : ''")[0] == frozenset({"gpu"})
    assert reads(r"""r'container\' + b"legacy" + '''object'''.size() + "\"params" + R"request" """)[0] == frozenset()
    assert reads("'a\\'' + gpu.total + ' object'")[0] == frozenset({"gpu"})
    assert reads("gpu.total // object")[0] == frozenset({"gpu", "object"})
    assert reads("[1].all(object, object > 0)")[0] == frozenset({"object"})
    # A literal only blanks its own text: what follows it is read.
    assert paths("'x'.size() + object.metadata.name.size()")[0] == frozenset({("object", ("metadata", "name"))})
    assert ALL_VARIABLES in reads("variables['a']")[1]


def test_closure_follows_variables_through_levels() -> None:
    claim_vars = {"count": "legacy['n']", "t": "variables.attr"}
    pod_vars = {"attr": "object.metadata.name", "g": "gpu.total"}
    assert closure(["variables.count"], [claim_vars, pod_vars]) == frozenset({"legacy"})
    assert closure(["variables.t"], [claim_vars, pod_vars]) == frozenset({"object"})
    assert closure(["variables.g + variables.count"], [claim_vars, pod_vars]) == frozenset({"gpu", "legacy"})
    assert closure(["variables['count']"], [claim_vars, pod_vars]) is None
    # A pod-level variable cannot see claim-level names: `variables.count` there is not the claim's count.
    assert closure(["variables.x"], [claim_vars, {"x": "variables.count"}]) == frozenset()


def test_plans_of_the_shipped_policies() -> None:
    plans = {p.name: Plan.of(p) for p in SHIPPED.policies}
    whole_gpu = plans["whole-gpu"]
    assert whole_gpu.fact_conditions == 1 and not whole_gpu.claim_from_facts  # reads gpudra.io/max-vram
    # only the label it asks for (`'gpudra.io/max-vram' in ...labels`), whether the labels are there, and null-ness
    max_vram = ("namespaceObject", ("metadata", "labels", "gpudra.io/max-vram"))
    assert whole_gpu.claim_reads is not None and max_vram in whole_gpu.claim_reads
    assert ("namespaceObject", ("metadata", "labels")) not in whole_gpu.claim_reads
    assert ("namespaceObject", ("",)) in whole_gpu.claim_reads and ("namespaceObject", ()) not in whole_gpu.claim_reads
    assert plans["guardrails"].fact_conditions == 1 and not plans["guardrails"].claim_from_facts
    assert plans["guardrails"].claim_reads is None  # no claim
    right_size, multi_gpu = plans["right-size"], plans["multi-gpu"]
    assert right_size.fact_conditions == 1 and not right_size.claim_from_facts  # reads annotations
    assert right_size.claim_reads is not None and ("object", ("metadata", "annotations")) in right_size.claim_reads
    assert multi_gpu.fact_conditions == 1 and not multi_gpu.claim_from_facts  # reads the namespace
    assert multi_gpu.claim_reads is not None and max_vram in multi_gpu.claim_reads


def test_memoized_decisions_equal_fresh_ones_on_varied_pods() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pods = generate_pods(400, seed=11)
    for pod, namespace in pods + pods:  # the second round is served from the memo tables
        _same(policies.evaluate(pod, namespace), _fresh(pod, namespace))
    sizes = policies.memo_sizes()
    assert sizes["gpu"] > 1 and sizes["match"] > 1 and sizes["claim"] > 1


def test_memoized_claims_are_copies() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    first = policies.evaluate(pod, None)
    assert first.policy == "whole-gpu" and first.claim is not None
    first.claim["devices"]["requests"][0]["exactly"]["count"] = 99
    second = policies.evaluate(pod, None)
    assert second.claim is not None and second.claim["devices"]["requests"][0]["exactly"]["count"] == 1
    assert policies.memo_sizes()["claim"] == 1


@pytest.mark.parametrize("seed", [1, 2])
def test_a_change_in_gpu_facts_changes_the_memoized_outcome(seed: int) -> None:
    policies = PolicySet.of(SHIPPED.policies)
    rng = random.Random(seed)
    for _ in range(30):
        gpus = rng.choice([0, 1, 2, 3])
        resource = rng.choice(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"])
        name = rng.choice(["a", "b"])
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": name, "image": "i", "resources": {"limits": {resource: gpus}}}]},
        }
        _same(policies.evaluate(pod, None), _fresh(pod, None))


def test_a_policy_reading_other_inputs_is_not_memoized() -> None:
    text = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: by-name}
spec:
  matchConditions:
  - {name: legacy, expression: "gpu.legacy && object.metadata.name != 'skip'"}
  claim:
    deviceClassName: {expression: "container.name == 'big' ? 'big.example.com' : 'gpu.nvidia.com'"}
    count: {expression: "legacy['nvidia.com/gpu']"}
"""
    policies_list, errors = load_policy_text(text, "t.yaml")
    assert errors == []
    policies = PolicySet.of(policies_list)
    plan = Plan.of(policies.policies[0])
    assert plan.fact_conditions == 0 and not plan.claim_from_facts
    assert plan.claim_reads is not None and ("container", ("name",)) in plan.claim_reads

    def pod(name: str, container: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": container, "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
        }

    assert policies.evaluate(pod("p", "big")).claim["devices"]["requests"][0]["exactly"]["deviceClassName"] == (
        "big.example.com"
    )
    assert policies.evaluate(pod("skip", "big")).policy is None
    small = policies.evaluate(pod("p", "small")).claim
    assert small is not None and small["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    assert policies.memo_sizes()["claim"] == 2  # keyed by the container's name, which the claim reads


def test_a_claim_memo_hit_still_lists_the_pod_variables_it_read() -> None:
    policies = PolicySet.of(SHIPPED.policies)
    pod = {
        "metadata": {"name": "p", "annotations": {"gpudra.io/vram": "8Gi"}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    first, second = policies.evaluate(pod), policies.evaluate(pod)
    assert first.policy == "right-size" and "migChoices" in first.variables["right-size"]
    assert dict(second.variables["right-size"]) == dict(first.variables["right-size"])
    assert list(second.variables["right-size"]) == list(first.variables["right-size"])


def test_memoization_off_evaluates_everything_and_decides_the_same() -> None:
    warm, cold = PolicySet.of(SHIPPED.policies), PolicySet.of(SHIPPED.policies, memoize=False)
    for pod, namespace in generate_pods(150, seed=23) * 2:
        _same(warm.evaluate(pod, namespace), cold.evaluate(pod, namespace))
    assert set(cold.memo_sizes().values()) == {0}
    assert warm.memo_sizes()["value"] > 0


def test_memo_tables_are_bounded_in_bytes_not_only_entries() -> None:
    from policyengine._memo import MAX_BYTES, MemoTable, weigh

    policies = load_policies()
    for i in range(40):  # 40 distinct pods, each with a 1 MB annotation every pod-level fingerprint holds
        pod, namespace = generate_pods(1, seed=i)[0]
        pod["metadata"].setdefault("annotations", {})["note"] = f"{i}" + "x" * 2**20
        policies.evaluate(pod, namespace)
    held = policies.memo_bytes()
    assert all(size <= MAX_BYTES for size in held.values()), held
    assert held["value"] > 2**20  # the big fingerprints were memoized, then dropped when the bound came

    table: MemoTable[str, str] = MemoTable(max_entries=100, max_bytes=10_000)
    table.put("a", "x" * 4000)
    table.put("b", "y" * 4000)
    assert len(table) == 2 and table.bytes == weigh("a") + weigh("x" * 4000) + weigh("b") + weigh("y" * 4000)
    table.put("c", "z" * 4000)  # over the bound: cleared whole, then stored
    assert len(table) == 1 and table.get("c") is not None
    table.put("d", "w" * 20_000)  # larger than the whole bound: never stored
    assert table.get("d") is None and len(table) == 1
