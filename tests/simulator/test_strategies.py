"""Strategies: MIG drains under the device plugin vs partitions on the fly, and the FGD paper's baselines."""

from __future__ import annotations

import pytest

from simulator.engine import EngineConfig, fgd_workload, run
from simulator.frag import typical_pods
from simulator.kpis import summarize
from simulator.strategies import STRATEGY_NAMES, make_strategy

from .helpers import cluster, node, pod


def test_device_plugin_drains_to_change_a_mig_layout() -> None:
    # 0.2 GPU with 5 GiB: the smallest fitting MIG profile is 2g.20gb (1g is 1/7 < 0.2 of compute)
    spec = cluster(node("h", "H100-SXM5-80GB", 1, mig="dynamic"))
    pods = [pod("small", milli=200, vram=5 * 1024, lasts=100)]
    rec = run(spec, pods, make_strategy("device-plugin", drain_seconds=600))
    out = summarize(rec)
    assert out["mig_reconfigurations"] == 1
    assert out["drained_node_hours"] == pytest.approx(600 / 3600, abs=1e-3)
    assert rec.waits["small"] == pytest.approx(600)
    assert out["evicted_pods"] == 0 and out["on_the_fly_partitions"] == 0


def test_drain_evicts_and_requeues_running_pods() -> None:
    spec = cluster(node("h", "H100-SXM5-80GB", 1, mig="dynamic"))
    pods = [pod("whole", lasts=10_000), pod("small", milli=200, vram=5 * 1024, at=10, lasts=100)]
    out = summarize(run(spec, pods, make_strategy("device-plugin", drain_seconds=60, drain_max_pods=1)))
    assert out["evicted_pods"] == 1 and out["mig_reconfigurations"] >= 1
    assert out["pods_placed"] == 2


def test_dra_partitions_on_the_fly() -> None:
    spec = cluster(node("h", "H100-SXM5-80GB", 1, mig="dynamic"))
    pods = [pod("small", milli=200, vram=5 * 1024, lasts=100), pod("s2", milli=100, vram=2048, at=1)]
    for name in ("dra-whole", "gpudra"):
        rec = run(spec, pods, make_strategy(name))
        out = summarize(rec)
        assert out["on_the_fly_partitions"] == 2 and out["mig_reconfigurations"] == 0
        assert rec.waits == {"small": 0.0, "s2": 0.0}


def test_gpudra_shares_a_plain_gpu_only_with_consumable_capacity() -> None:
    shared = cluster(node("t", "L40S", 1, sharing=True))
    pods = [pod(f"p{i}", milli=250, vram=4096, at=i) for i in range(4)]
    assert summarize(run(shared, pods, make_strategy("gpudra")))["pods_placed"] == 4
    assert summarize(run(shared, pods, make_strategy("device-plugin")))["pods_placed"] == 1
    # The NVIDIA driver's own slices: one claim per GPU, as with the device plugin.
    stock = cluster(node("t", "L40S", 1))
    assert summarize(run(stock, pods, make_strategy("gpudra")))["pods_placed"] == 1


def test_fgd_no_worse_than_any_baseline_by_hand() -> None:
    # Two 1-GPU nodes; 0.5, 0.5, then a whole GPU. Packing both halves on one GPU keeps the other whole GPU
    # for the last pod (0 unallocated); spreading them leaves two half GPUs and the last pod cannot fit.
    spec = cluster(node("a", "V100M32", 1), node("b", "V100M32", 1))
    pods = [pod("h1", milli=500, at=0), pod("h2", milli=500, at=1), pod("w", at=2)]
    results = {name: summarize(run(spec, pods, make_strategy(name, seed=1))) for name in STRATEGY_NAMES
               if name not in ("device-plugin", "dra-whole", "gpudra")}  # fmt: skip
    assert results["fgd"]["unallocated_gpus"] == pytest.approx(0.0)
    assert results["fgd"]["pods_placed"] == 3
    # DotProd's integer score ties (99 on both nodes): the class seen first, the untouched node, wins and spreads
    assert results["dotprod"]["unallocated_gpus"] == pytest.approx(1.0)
    for name, out in results.items():
        assert results["fgd"]["unallocated_gpus"] <= out["unallocated_gpus"], name


def test_fgd_protocol_workload_is_the_tuned_trace_with_distinct_names() -> None:
    pods = [pod("a", milli=500), pod("b", gpus=2), pod("c", gpus=0)]
    tuned = fgd_workload(pods, total_gpus=10, load=1.3, seed=7)
    demand = sum(p.gpu_request for p in tuned)
    assert 13 - 2 < demand <= 13 + 1  # stops once the next draw's per-GPU share would cross 1.3 x 10 GPUs
    assert tuned == fgd_workload(pods, total_gpus=10, load=1.3, seed=7)
    assert len({p.name for p in tuned}) == len(tuned) and all(p.duration is None for p in tuned)
    assert {p.name.split("#")[0] for p in tuned[:3]} == {"a", "b", "c"}  # every original pod, shuffled, first


def test_fgd_protocol_reads_the_kpis_at_80_100_and_130_percent_arrived() -> None:
    # fine steps (1.25 % and 2.5 % of 8 GPUs), VRAM in proportion to compute (a T4 has 16 GiB), CPU to spare
    a, b = pod("a", milli=100, vram=1638, cpu=100), pod("b", milli=200, vram=3276, cpu=100)
    pods = [a, b, pod("c", gpus=0, cpu=100)]
    shared = cluster(node("n", "T4", 8, sharing=True))  # driver 0.5's ConsumableShares: fractions share GPUs
    rec = run(shared, pods, make_strategy("gpudra"), EngineConfig(protocol="fgd", seed=7))
    out = summarize(rec)
    tuned = fgd_workload(pods, 8, 1.3, 7)
    assert out["pods_total"] == len(tuned)
    assert rec.samples[-1].arrived == pytest.approx(sum(p.gpu_request for p in tuned) / 8)
    at = out["at_load"]
    assert list(at) == ["80", "100", "130"]
    assert 78 <= at["80"]["gpu_allocation_pct"] <= 81  # everything fits up to the node's 8 GPUs
    assert at["80"]["failed_pods"] == 0 and at["130"]["failed_pods"] > 0  # 1.3 x 8 GPUs cannot all fit
    assert at["130"]["gpu_allocation_pct"] <= 100
    assert all(0 <= at[load]["fragmentation_ratio"] <= 1 for load in at)


def test_preemption_evicts_lower_priority() -> None:
    pods = [pod("low", lasts=1000, priority=0), pod("high", at=5, lasts=10, priority=2)]
    spec = cluster(node("n", "T4", 1))
    off = run(spec, pods, make_strategy("device-plugin"))
    on = run(spec, pods, make_strategy("device-plugin"), EngineConfig(preemption=True))
    assert off.waits["high"] == pytest.approx(995) and off.evicted_pods == 0
    assert on.waits["high"] == pytest.approx(0) and on.evicted_pods == 1
    assert summarize(on)["pods_placed"] == 2


def test_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        make_strategy("magic")


def test_openb_excerpt_fgd_protocol_orders_sharing_above_whole_gpus() -> None:
    from pathlib import Path

    from simulator.cluster import read_openb_nodes
    from simulator.traces import read_openb_pods

    fixtures = Path(__file__).parent / "fixtures"
    spec = read_openb_nodes(fixtures / "openb_node_excerpt.csv")
    pods = read_openb_pods(fixtures / "openb_pod_excerpt.csv").pods
    config = EngineConfig(protocol="fgd", seed=0)
    out = {
        name: summarize(run(spec, pods, make_strategy(name), config)) for name in ("device-plugin", "fgd", "bestfit")
    }
    # sharing GPUs serves more of the requested demand than whole GPUs by count
    assert out["fgd"]["gpu_allocation_ratio"] > out["device-plugin"]["gpu_allocation_ratio"]
    assert out["bestfit"]["gpu_allocation_ratio"] > out["device-plugin"]["gpu_allocation_ratio"]
    assert out["device-plugin"]["vram_waste_ratio"] > out["fgd"]["vram_waste_ratio"]


def test_fgd_breaks_ties_towards_the_fuller_node() -> None:
    # Whichever node takes the second whole-GPU pod, fragmentation grows alike (the workload has no 2-GPU
    # shape); FGD then packs onto the busy node, which leaves a whole node for the 2-GPU pod that follows.
    spec = cluster(node("a", "V100M32", 2), node("b", "V100M32", 2))
    pods = [pod("first", at=0), pod("second", at=1), pod("pair", gpus=2, at=2)]
    out = summarize(run(spec, pods, make_strategy("fgd", typical=typical_pods(pods[:2]))))
    assert out["pods_placed"] == 3 and out["unallocated_gpus"] == pytest.approx(0.0)


def test_gpudra_shares_are_bound_by_compute_only_when_asked() -> None:
    # two 0.6-GPU pods with 4 GiB each: memory lets both share one 32 GiB GPU, compute does not
    spec = cluster(node("v", "V100M32", 1, sharing=True))
    pods = [pod("a", milli=600, vram=4096, at=0), pod("b", milli=600, vram=4096, at=1)]
    memory_only = summarize(run(spec, pods, make_strategy("gpudra")))
    bound = summarize(run(spec, pods, make_strategy("gpudra", compute_bound=True)))
    assert memory_only["pods_placed"] == 2 and bound["pods_placed"] == 1


def test_gpudra_fragmentation_node_score_keeps_a_node_whole_for_the_two_gpu_pod() -> None:
    spec = cluster(node("a", "V100M16", 2), node("b", "V100M16", 2))
    pods = [pod("first", at=0), pod("second", at=1), pod("pair", gpus=2, at=2)]
    spread = summarize(run(spec, pods, make_strategy("gpudra")))  # kube-scheduler's least-allocated
    packed = summarize(run(spec, pods, make_strategy("gpudra", node_score="fragmentation")))
    assert spread["pods_placed"] == 2  # one whole GPU per node: the pair fits nowhere
    assert packed["pods_placed"] == 3 and packed["unallocated_gpus"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="fragmentation"):
        make_strategy("gpudra", node_score="tightest")


def test_replay_dotprod_scores_as_the_peer_the_smaller_dot_product_wins() -> None:
    # second 4-GPU pod: the half-used node scores int(100 * (1 - 0.25 / 2)) = 87, the idle one 75 (dot 0.5)
    spec = cluster(node("a", "V100M32", 8), node("b", "V100M32", 8))
    pods = [pod("p1", gpus=4, at=0), pod("p2", gpus=4, at=1), pod("p8", gpus=8, at=2)]
    out = summarize(run(spec, pods, make_strategy("dotprod")))
    assert out["pods_placed"] == 3 and out["unallocated_gpus"] == pytest.approx(0.0)
