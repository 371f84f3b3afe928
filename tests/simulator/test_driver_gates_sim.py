"""Issue 26: the simulator knows KEP-5004's native path (`kep-5004`, the same placement as `dra-whole`) and the
NVIDIA DRA driver 0.5's gates; with ConsumableShares, gpudra wastes less VRAM than the device plugin and KEP-5004
on a share-heavy openb trace (the committed excerpt), and the summary says which gates the result needs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app
from simulator.comparison import SimulationConfig, simulate
from simulator.driver import simulated_driver

FIXTURES = Path(__file__).parent / "fixtures"
OPENB = ["--trace", str(FIXTURES / "openb_pod_excerpt.csv"), "--cluster", str(FIXTURES / "openb_node_excerpt.csv")]


def test_kep_5004_is_dra_whole_under_its_feature_name() -> None:
    summary = simulate(SimulationConfig(strategies=("kep-5004", "dra-whole"))).summary()
    kep, whole = summary["strategies"]["kep-5004"], summary["strategies"]["dra-whole"]
    assert kep == whole
    assert any("kep-5004 and dra-whole give the same results" in note for note in summary["notes"])


def test_consumable_shares_let_gpudra_waste_less_than_both() -> None:
    args = ["simulate", *OPENB, "--strategies", "device-plugin,kep-5004,gpudra", "--json"]
    result = CliRunner().invoke(app, [*args, "--driver-release", "0.5", "--driver-gates", "ConsumableShares"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    waste = {name: row["vram_waste_ratio"] for name, row in summary["strategies"].items()}
    assert waste["gpudra"] < waste["device-plugin"] and waste["gpudra"] < waste["kep-5004"], waste
    assert summary["input"]["driver"] == {"release": "0.5", "gates": ["ConsumableShares"]}
    assert summary["input"]["cluster"]["shareable_gpus"] == summary["input"]["cluster"]["gpus"]


def test_without_the_gate_gpudra_has_nothing_to_share() -> None:
    args = ["simulate", *OPENB, "--strategies", "device-plugin,gpudra", "--json"]
    summary = json.loads(CliRunner().invoke(app, args).stdout)
    assert summary["input"]["driver"]["gates"] == [] and summary["input"]["cluster"]["shareable_gpus"] == 0


def test_gates_the_simulator_does_not_model_or_the_driver_refuses_are_errors() -> None:
    for gates, message in (("MPSSupport", "not MPSSupport"), ("Bogus", "unknown NVIDIA DRA driver feature gate")):
        result = CliRunner().invoke(app, ["simulate", *OPENB, "--driver-gates", gates])
        assert result.exit_code == 2 and message in result.output, result.output
    result = CliRunner().invoke(
        app, ["simulate", *OPENB, "--driver-release", "0.4", "--driver-gates", "ConsumableShares"]
    )
    assert result.exit_code == 2 and "0.5" in result.output


def test_fabric_manager_partitions_keep_multi_gpu_pods_on_nvlink() -> None:
    plain = simulate(SimulationConfig(strategies=("gpudra",))).summary()["strategies"]["gpudra"]
    gated = simulate(SimulationConfig(strategies=("gpudra",), driver=simulated_driver("FabricManagerPartitioning")))
    partitioned = gated.summary()["strategies"]["gpudra"]
    assert partitioned["nvlink_satisfied_ratio"] > plain["nvlink_satisfied_ratio"]
    assert gated.input["driver"]["gates"] == ["FabricManagerPartitioning"]
