"""The gpudra strategy: real policy decisions turned into device options, placed with MIG/sharing on the fly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.engine import run
from simulator.kpis import summarize
from simulator.strategies import make_strategy
from simulator.strategies.policy_claims import ClaimDemand, PolicyClaims, legacy_claim
from simulator.workload import SimPod, legacy_pod

from .helpers import cluster, node


def _pod(gpus: int, milli: int, vram: int, klass: str = "trace", spec: dict[str, object] | None = None) -> SimPod:
    return SimPod("p", 1000, 1024, gpus, milli, vram, workload_class=klass, pod=spec)


def test_right_size_claim_goes_to_the_allocator_as_the_policy_built_it() -> None:
    strategy = PolicyClaims()
    _, demand = strategy._demand(_pod(1, 250, 3072))
    assert isinstance(demand, ClaimDemand) and demand.share_milli == 250
    (request,) = json.loads(demand.claim)["devices"]["requests"]
    classes = [alt["deviceClassName"] for alt in request["firstAvailable"]]
    assert classes[0] == "mig.nvidia.com" and classes[-1] == "gpu.nvidia.com"
    assert strategy.outcomes["policy right-size"] == 1


def test_tensor_parallel_pod_prefers_a_partition_then_nvlink_then_pcie_then_any() -> None:
    spec = legacy_pod("vllm", 8000, 65536, 4, "llm-serving")
    _, demand = PolicyClaims()._demand(_pod(4, 1000, 60000, "llm-serving", spec))
    assert isinstance(demand, ClaimDemand)
    claim = json.loads(demand.claim)
    assert claim["devices"]["constraints"] == [
        {"matchAttribute": "gpu.nvidia.com/partition4", "requests": ["main/same-partition4"]},
        {"matchAttribute": "gpu.gpudra.io/nvlinkGroup", "requests": ["main/same-nvlinkgroup"]},
        {"matchAttribute": "resource.kubernetes.io/pcieRoot", "requests": ["main/same-pcieroot"]},
    ]
    (request,) = claim["devices"]["requests"]
    names = [alt["name"] for alt in request["firstAvailable"]]
    assert names == ["same-partition4", "same-nvlinkgroup", "same-pcieroot", "any"]


def test_untouched_pod_keeps_its_legacy_request(tmp_path: Path) -> None:
    strategy = PolicyClaims(policies=tmp_path)  # no policy: nothing mutates
    _, demand = strategy._demand(_pod(2, 1000, 2048))
    assert isinstance(demand, ClaimDemand) and json.loads(demand.claim) == legacy_claim(2)
    assert strategy.outcomes["legacy request"] == 1


def test_denying_policy_keeps_pods_pending(tmp_path: Path) -> None:
    (tmp_path / "deny.yaml").write_text(
        """apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: deny-all}
spec:
  mode: enforce
  matchConditions:
  - name: any-gpu
    expression: "size(gpu.resources) > 0"
  validations:
  - expression: "object.metadata.name == 'never'"
    message: no GPUs here
"""
    )
    strategy = make_strategy("gpudra", policies=tmp_path)
    pods = [SimPod("a", 1000, 1024, 1, 1000, 1024), SimPod("cpu", 1000, 1024, 0, 0, 0)]
    out = summarize(run(cluster(node("n", "T4", 1)), pods, strategy))
    assert out["pods_placed"] == 1 and out["pods_pending"] == 1
    assert isinstance(strategy, PolicyClaims) and strategy.outcomes["denied"] == 1


def test_modes_and_errors() -> None:
    with pytest.raises(ValueError, match="mode"):
        PolicyClaims(mode="fast")
    upstream, scored = PolicyClaims(mode="upstream"), PolicyClaims(mode="scored")
    assert (upstream.placer.mode, scored.placer.mode) == ("upstream", "scored")


def test_claims_are_shaped_by_the_simulated_cluster() -> None:
    """As the webhook shapes them by the real one (dra.shapes): alternatives no node of the cluster can satisfy are
    dropped before placement; a claim left with none is denied (onUnsatisfiable: Deny), never left pending."""
    spec = legacy_pod("vllm", 8000, 65536, 4, "llm-serving")
    spec["metadata"]["annotations"] = {"gpudra.io/vram": "40Gi"}  # per device: an H100 holds it, a T4 does not
    tp4 = SimPod("tp4", 1000, 1024, 4, 1000, 40960, workload_class="llm-serving", pod=spec)
    strategy = make_strategy("gpudra")
    assert isinstance(strategy, PolicyClaims)
    out = summarize(run(cluster(node("h", "H100-SXM5-80GB", 8)), [tp4], strategy))
    assert out["pods_placed"] == 1
    _, demand = strategy._demand(tp4)
    assert isinstance(demand, ClaimDemand)
    names = [alt["name"] for alt in json.loads(demand.claim)["devices"]["requests"][0]["firstAvailable"]]
    assert names == ["same-pcieroot", "any"]  # the driver publishes no partition4 and no gpudra NVLink group
    small = make_strategy("gpudra")
    out = summarize(run(cluster(node("t", "T4", 4)), [tp4], small))
    assert out["pods_placed"] == 0 and isinstance(small, PolicyClaims) and small.outcomes["denied"] == 1
