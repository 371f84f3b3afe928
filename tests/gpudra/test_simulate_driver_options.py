"""`gpudra simulate --driver-release/--driver-gates/--consumable-capacity`. Issue 26: with ConsumableShares gpudra
wastes less VRAM than the device plugin and KEP-5004 on a share-heavy openb trace (the committed excerpt); issue 38.5:
`--driver-release` is honoured or refused (never ignored), and `--consumable-capacity` is `--driver-gates
ConsumableShares` under another name: the same run, the same summary."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app

FIXTURES = Path(__file__).parents[1] / "simulator" / "fixtures"
OPENB = ["--trace", str(FIXTURES / "openb_pod_excerpt.csv"), "--cluster", str(FIXTURES / "openb_node_excerpt.csv")]
RUN = ["simulate", *OPENB, "--strategies", "gpudra", "--json"]


def _summary(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, [*RUN, *args])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert isinstance(summary, dict)
    return summary


def test_consumable_capacity_and_the_consumable_shares_gate_are_one_run() -> None:
    by_flag = _summary("--consumable-capacity")
    by_gate = _summary("--driver-gates", "ConsumableShares")
    assert by_flag == by_gate
    assert by_flag["input"]["driver"] == {"release": "0.5", "gates": ["ConsumableShares"]}  # type: ignore[index]


def test_a_release_the_simulator_does_not_publish_is_refused_not_ignored() -> None:
    result = CliRunner().invoke(app, [*RUN, "--driver-release", "0.4"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())  # rich wraps the line
    assert "error: NVIDIA DRA driver release 0.4: the simulator publishes the slices of release 0.5 only" in message
    assert "strategies" not in result.stdout


def test_release_0_5_spelled_as_a_tag_is_honoured() -> None:
    assert _summary("--driver-release", "v0.5.0")["input"]["driver"] == {"release": "0.5", "gates": []}  # type: ignore[index]


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
