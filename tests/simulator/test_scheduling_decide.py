"""`simulator.scheduling.decide` on a state built from Kubernetes objects, and kube-scheduler's node choice in the
DRA strategies: the DynamicResources prioritized-list score, filters that read the Pod, tie sets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dra.errors import InputError
from dra.gpus import get, node_resource_slices, synthetic_node
from simulator.cluster import ClusterSpec
from simulator.scheduling import DEFAULT_PROFILE, apply_binding, decide, sim_pod, state_from_objects
from simulator.state import ClusterState
from simulator.strategies.policy_claims import ClaimDemand, PolicyClaims
from simulator.workload import SimPod, legacy_pod

from .helpers import node

L40S_ONLY = "device.attributes['gpu.nvidia.com'].productName.contains('L40S')"
SMALL = {  # what right-size builds for a 5 GB pod: MIG first, then a shared GPU, then a whole one
    "devices": {
        "requests": [
            {
                "name": "main",
                "firstAvailable": [
                    {
                        "name": "mig-1g-10gb",
                        "deviceClassName": "mig.nvidia.com",
                        "count": 1,
                        "selectors": [
                            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}
                        ],
                    },
                    {"name": "whole", "deviceClassName": "gpu.nvidia.com", "count": 1},
                ],
            }
        ]
    }
}


def _node(name: str, cpu: str = "64", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"}},
    }


def _slices(name: str, model: str, mig: str) -> list[dict[str, Any]]:
    return node_resource_slices(synthetic_node(get(model), name, 2), mig_mode=mig)  # type: ignore[arg-type]


def _pod(name: str, cpu: str = "1", node: str | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    body: dict[str, Any] = {"containers": [container], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": body}


def _cluster() -> ClusterState:
    nodes = [_node("h100"), _node("l40s-a", cpu="128"), _node("l40s-b", cpu="128")]
    slices = _slices("h100", "H100-SXM5-80GB", "dynamic") + _slices("l40s-a", "L40S", "static")
    slices += _slices("l40s-b", "L40S", "static")
    return state_from_objects(nodes, slices)


def test_the_first_alternative_wins_over_free_cpu() -> None:
    """DynamicResources scores 8 - index of the subrequest (weight 2): the MIG node beats the emptier L40S nodes."""
    state = _cluster()
    decision = decide(state, sim_pod(_pod("small")), DEFAULT_PROFILE, claims=[SMALL])
    assert decision.feasible == {"h100", "l40s-a", "l40s-b"}
    assert decision.tie_set == {"h100"} and decision.node == "h100"
    assert decision.devices["h100"] == ("gpu-0-mig-1g10gb-19-0",) and decision.devices["l40s-a"] == ("gpu-0",)
    h100, l40s = decision.plugin_scores["h100"], decision.plugin_scores["l40s-a"]
    assert h100["DynamicResources"] == 200 and l40s["DynamicResources"] == 2 * (100 * 7 // 8)  # subrequest 1: 8 - 1
    assert l40s["NodeResourcesFit"] > h100["NodeResourcesFit"]  # more free CPU: LeastAllocated prefers it
    assert decision.scores["h100"] == sum(h100.values()) and "TaintToleration" in h100


def test_ties_are_the_set_of_top_nodes_and_the_choice_is_seeded() -> None:
    state = _cluster()
    decision = decide(
        state,
        sim_pod(_pod("whole")),
        claims=[
            {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "count": 1,
                                "selectors": [{"cel": {"expression": L40S_ONLY}}],
                            },
                        }
                    ]
                }
            }
        ],
    )
    assert decision.feasible == decision.tie_set == {"l40s-a", "l40s-b"}
    picks = {decide(state, sim_pod(_pod("whole")), seed=s).node for s in range(12)}
    assert picks == {"h100", "l40s-a", "l40s-b"} or len(picks) >= 2  # CPU-only pod: every node, seeded spread


def test_bound_pods_take_cpu_and_devices() -> None:
    state = _cluster()
    claim = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "main/mig-1g-10gb",
                            "driver": "gpu.nvidia.com",
                            "pool": "h100",
                            "device": f"gpu-{g}-mig-1g10gb-19-{i}",
                        }
                        for g in range(2)
                        for i in range(7)
                    ]
                }
            }
        }
    }
    apply_binding(state, _pod("busy", cpu="8", node="h100"), [claim])
    decision = decide(state, sim_pod(_pod("small")), claims=[SMALL])
    assert decision.tie_set == {"l40s-a", "l40s-b"}  # the H100's 1g.10gb slices are all taken: a whole L40S
    assert "h100" not in decision.feasible  # its GPUs' memory slices are all held: no whole GPU either
    assert state.nodes[0].free_cpu == 64000 - 8000
    with pytest.raises(InputError, match="not in node h100's slices"):
        apply_binding(
            state,
            _pod("x", node="h100"),
            [
                {
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [
                                    {"request": "r", "driver": "gpu.nvidia.com", "pool": "h100", "device": "gpu-9"}
                                ]
                            }
                        }
                    }
                }
            ],
        )


def test_taints_node_selector_and_affinity_filter_and_score() -> None:
    nodes = [
        _node("tainted", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
        _node("soft", taints=[{"key": "busy", "effect": "PreferNoSchedule"}], labels={"zone": "a"}),
        _node("plain", labels={"zone": "b"}),
        _node("cordoned", unschedulable=True),
    ]
    state = state_from_objects(nodes, [])
    decision = decide(state, sim_pod(_pod("p")))
    assert decision.feasible == {"soft", "plain"} and decision.tie_set == {"plain"}  # PreferNoSchedule scores 0
    tolerating = _pod("t", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    assert "tainted" in decide(state, sim_pod(tolerating)).feasible
    selected = _pod("s", nodeSelector={"zone": "a"})
    assert decide(state, sim_pod(selected)).feasible == {"soft"}
    preferring = _pod(
        "a",
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    }
                ]
            }
        },
    )
    decision = decide(state, sim_pod(preferring))
    assert (
        decision.plugin_scores["soft"]["NodeAffinity"] == 200 and decision.plugin_scores["plain"]["NodeAffinity"] == 0
    )


def test_gpudra_strategy_sends_a_small_pod_to_the_first_alternative() -> None:
    """Regression (issue 24): the simulator ranked nodes by free CPU/memory only, so a right-sized pod went to the
    emptier whole-GPU node; kube-scheduler's DynamicResources score sends it where the first alternative fits."""
    spec = ClusterSpec("t", [node("l40s", "L40S", 2, cpu=128000), node("h100", "H100-SXM5-80GB", 2, mig="dynamic")])
    state = ClusterState(spec)
    strategy = PolicyClaims(mode="upstream")
    pod = SimPod("small", 1000, 1024, 1, 300, 5000, workload_class="embedding")
    choice = strategy.choose(state, pod)
    assert choice is not None and state.nodes[choice[0]].spec.name == "h100"
    assert choice[1][0].kind == "mig"


def test_decide_refuses_two_claims() -> None:
    with pytest.raises(InputError, match="one ResourceClaim per pod"):
        decide(_cluster(), sim_pod(_pod("p")), claims=[SMALL, SMALL])


def test_legacy_pod_requests_are_read_like_the_scheduler() -> None:
    pod = legacy_pod("x", 1500, 2048, 1, "trace")
    pod["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}]
    made = sim_pod(pod)
    assert (made.cpu_milli, made.memory_mib) == (4000, 2048)
    assert json.dumps(made.pod)  # the Pod kept as it was


def test_percentage_of_nodes_to_score_cuts_the_search_and_rotates_its_start() -> None:
    """schedule_one.go: with 150 nodes at most 100 feasible ones are scored, the next search starting after the
    nodes this one looked at (the 101st feasible node ends it and is not counted)."""
    state = state_from_objects([_node(f"n{i:03d}") for i in range(150)], [])
    first = decide(state, sim_pod(_pod("a")), advance=True)
    assert len(first.feasible) == 150 and first.scored == {f"n{i:03d}" for i in range(100)}
    assert state.next_start == 100
    second = decide(state, sim_pod(_pod("b")), advance=True)
    assert second.scored == {f"n{i:03d}" for i in (*range(100, 150), *range(50))}
    assert state.next_start == 50


def test_the_engines_choice_is_always_in_decides_tie_set() -> None:
    """The engine's class-cached path and `decide`'s node-by-node path agree: every placement of gpudra's pods on
    the built-in cluster lands on a node of the tie set `decide` computes in the same state."""
    from simulator.cluster import default_cluster
    from simulator.traces import GeneratorConfig, generate

    spec = default_cluster()
    state = ClusterState(spec)
    strategy = PolicyClaims(mode="upstream", seed=3)
    pods = generate(GeneratorConfig(pods=120, seed=4), spec.total_gpus).pods
    checked = 0
    for pod in pods:
        _, demand = strategy._demand(pod)
        if demand is None:
            continue
        claims = [json.loads(demand.claim)] if isinstance(demand, ClaimDemand) else []
        expected = decide(state, pod, claims=claims, placer=strategy.placer)
        choice = strategy.choose(state, pod)
        if choice is None:
            assert not expected.feasible
            continue
        assert state.nodes[choice[0]].spec.name in expected.tie_set
        state.apply(pod, choice[0], choice[1], 0.0)
        checked += 1
    assert checked >= 60
