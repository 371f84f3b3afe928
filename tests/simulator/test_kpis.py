"""Metrics on small cases computed by hand (allocation, held/unallocated, VRAM waste, pending, fragmentation)."""

from __future__ import annotations

import pytest

from simulator.engine import EngineConfig, run
from simulator.frag import TypicalPod, frag_amount, typical_pods
from simulator.kpis import Recorder, pending_by_gpus, summarize
from simulator.strategies import make_strategy

from .helpers import cluster, node, pod

T4 = 16 * 1024  # MiB


def test_device_plugin_holds_whole_gpus() -> None:
    # a 0.5-GPU pod and a 1-GPU pod on two T4s: 1.5 GPUs requested, 2 held
    pods = [pod("a", milli=500, vram=4096), pod("b", vram=8192)]
    out = summarize(run(cluster(node("n", "T4", 2)), pods, make_strategy("device-plugin")))
    assert out["gpu_allocation_ratio"] == pytest.approx(0.75)
    assert out["unallocated_gpus"] == pytest.approx(0.0)
    assert out["vram_waste_ratio"] == pytest.approx(1 - (4096 + 8192) / (2 * T4))
    assert out["pods_placed"] == 2 and out["pods_pending"] == 0


def test_sharing_holds_what_is_asked() -> None:
    pods = [pod("a", milli=500, vram=4096), pod("b", vram=8192)]
    out = summarize(run(cluster(node("n", "T4", 2)), pods, make_strategy("fgd")))
    assert out["gpu_allocation_ratio"] == pytest.approx(0.75)
    assert out["unallocated_gpus"] == pytest.approx(0.5)
    assert out["vram_waste_ratio"] == pytest.approx(1 - (4096 + 8192) / (4096 + T4))


def test_allocation_is_time_weighted_over_the_arrival_window() -> None:
    # [0, 50): 0.5 GPU requested; [50, 100): 1.5; window ends at the last arrival (100)
    pods = [pod("a", milli=500, lasts=100), pod("b", at=50), pod("c", at=100, milli=250)]
    out = summarize(run(cluster(node("n", "T4", 2)), pods, make_strategy("device-plugin")))
    assert out["gpu_allocation_ratio"] == pytest.approx((0.5 * 50 + 1.5 * 50) / 100 / 2)


def test_pending_time_and_saturation() -> None:
    # one GPU: y waits from 10 until x leaves at 100
    pods = [pod("x", lasts=100), pod("y", at=10, lasts=10), pod("z", at=20, gpus=0, lasts=5)]
    rec = run(cluster(node("n", "T4", 1)), pods, make_strategy("device-plugin"))
    out = summarize(rec)
    assert rec.waits == {"x": 0.0, "y": 90.0, "z": 0.0}
    assert out["mean_pending_seconds"] == pytest.approx(30.0)
    assert out["pods_pending"] == 0 and out["pods_placed"] == 3
    assert out["unallocated_gpus"] == pytest.approx(0.0)  # while y waited the only GPU was held


def test_never_placed_pod_counts_as_pending() -> None:
    pods = [pod("big", gpus=4), pod("ok", at=5)]
    out = summarize(run(cluster(node("n", "T4", 2)), pods, make_strategy("device-plugin")))
    assert out["pods_pending"] == 1 and out["pods_placed"] == 1
    assert out["mean_pending_seconds"] == pytest.approx(5 / 2)  # big waited 5 s (to the end), ok 0


def test_frag_amount_by_hand() -> None:
    share = TypicalPod(1000, 1, 500, (), 0.5)
    whole = TypicalPod(1000, 1, 1000, (), 0.5)
    # free [300, 1000]: the 300 is a fragment for both shapes
    assert frag_amount(8000, (300, 1000), "T4", (share, whole)) == pytest.approx(300)
    # no CPU left: all 1300 free milli are fragments
    assert frag_amount(500, (300, 1000), "T4", (share, whole)) == pytest.approx(1300)
    # a CPU-only shape counts all free GPU as a fragment; an excluded model too
    cpu_only = TypicalPod(1000, 0, 0, (), 1.0)
    assert frag_amount(8000, (1000,), "T4", (cpu_only,)) == pytest.approx(1000)
    assert frag_amount(8000, (1000,), "T4", (TypicalPod(1, 1, 100, ("V100M16",), 1.0),)) == pytest.approx(1000)
    # two GPUs wanted, one usable: everything is a fragment
    assert frag_amount(8000, (1000, 400), "T4", (TypicalPod(1, 2, 1000, (), 1.0),)) == pytest.approx(1400)


def test_typical_pods_weights() -> None:
    pods = [pod("a", milli=500)] * 3 + [pod("b")]
    typical = typical_pods(pods, coverage=1.0)
    assert [(t.gpu_milli, t.weight) for t in typical] == [(500, 0.75), (1000, 0.25)]


def test_nvlink_share_first_fit_vs_preferred() -> None:
    # A100 PCIe: NVLink pairs (0,1) (2,3). One GPU taken, then a 2-GPU pod.
    pods = [pod("one", vram=1000), pod("two", gpus=2, at=1)]
    spec = cluster(node("n", "A100-PCIE-80GB", 4))
    first_fit = summarize(run(spec, pods, make_strategy("dra-whole")))
    preferred = summarize(run(spec, pods, make_strategy("device-plugin")))
    assert first_fit["nvlink_satisfied_ratio"] == 0.0 and preferred["nvlink_satisfied_ratio"] == 1.0
    assert first_fit["multi_gpu_pods"] == 1


def test_ratios_in_unit_interval_for_every_strategy() -> None:
    pods = [pod(f"p{i}", milli=(i % 4 + 1) * 250, at=i, lasts=30, gpus=1 + (i % 5 == 0)) for i in range(60)]
    spec = cluster(node("a", "A100-SXM4-80GB", 4, mig="dynamic"), node("b", "T4", 2))
    for name in ("device-plugin", "dra-whole", "gpudra", "random", "bestfit", "dotprod", "gpupacking",
                 "gpuclustering", "fgd"):  # fmt: skip
        out = summarize(run(spec, pods, make_strategy(name), EngineConfig()))
        for key in ("gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio", "nvlink_satisfied_ratio"):
            assert 0.0 <= out[key] <= 1.0, (name, key, out[key])
        assert out["pods_placed"] + out["pods_pending"] == out["pods_total"] == 60


def test_pending_by_gpus_cut_off_where_a_replay_stops() -> None:
    """Issue 42.4: the verification's replay stops at the last arrival; the model's waits are cut there to compare."""
    rec = Recorder(strategy="x", total_gpus=8, protocol="replay")
    rec.waits = {"big": 100.0, "small": 5.0, "late": 30.0, "cpu": 7.0}
    rec.gpus = {"big": 8, "small": 1, "late": 1, "cpu": 0}
    assert pending_by_gpus(rec) == {"1": 17.5, "8": 100.0}
    arrivals = {"big": 0.0, "small": 0.0, "late": 40.0, "cpu": 0.0}
    assert pending_by_gpus(rec, until=50.0, arrivals=arrivals) == {"1": 7.5, "8": 50.0}  # late: 10 s by then
    with pytest.raises(ValueError, match="no arrival for pod 'late'"):
        pending_by_gpus(rec, until=50.0, arrivals={"big": 0.0, "small": 0.0})
