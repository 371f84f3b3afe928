"""Issue 26: the simulator knows KEP-5004's native path (`kep-5004`, the same placement as `dra-whole`) and the
NVIDIA DRA driver 0.5's gates, and the summary says which gates the result needs (the `gpudra simulate` side:
tests/gpudra/test_simulate_driver_options.py)."""

from __future__ import annotations

from simulator.comparison import SimulationConfig, simulate
from simulator.driver import simulated_driver


def test_kep_5004_is_dra_whole_under_its_feature_name() -> None:
    summary = simulate(SimulationConfig(strategies=("kep-5004", "dra-whole"))).summary()
    kep, whole = summary["strategies"]["kep-5004"], summary["strategies"]["dra-whole"]
    assert kep == whole
    assert any("kep-5004 and dra-whole give the same results" in note for note in summary["notes"])


def test_fabric_manager_partitions_keep_multi_gpu_pods_on_nvlink() -> None:
    plain = simulate(SimulationConfig(strategies=("gpudra",))).summary()["strategies"]["gpudra"]
    gated = simulate(SimulationConfig(strategies=("gpudra",), driver=simulated_driver("FabricManagerPartitioning")))
    partitioned = gated.summary()["strategies"]["gpudra"]
    assert partitioned["nvlink_satisfied_ratio"] > plain["nvlink_satisfied_ratio"]
    assert gated.input["driver"]["gates"] == ["FabricManagerPartitioning"]
