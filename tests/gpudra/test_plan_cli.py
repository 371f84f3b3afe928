"""`gpudra plan`: the table with cost, power and the saving, the JSON summary, and exit 2 naming the field."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app

POOLS = "pools:\n  - {name: h100, gpu: H100-SXM5-80GB, gpus: 8, cpu: 192, memory: 2Ti, max: 8}\n"
PRICES = "currency: USD\ngpus:\n  H100-SXM5-80GB: {gpu_hour: 2.5, watts: 700}\n"
SMALL = ["--pods", "40", "--workers", "1", "--strategies", "device-plugin,dra-whole"]


def _files(tmp_path: Path, pools: str = POOLS, prices: str = PRICES) -> tuple[str, str]:
    (tmp_path / "pools.yaml").write_text(pools)
    (tmp_path / "prices.yaml").write_text(prices)
    return str(tmp_path / "pools.yaml"), str(tmp_path / "prices.yaml")


def test_plan_json_and_table_agree(tmp_path: Path) -> None:
    pools, prices = _files(tmp_path)
    result = CliRunner().invoke(app, ["plan", pools, "--prices", prices, "--json", *SMALL])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["target"] == "p95-pending<=10m" and summary["workload"]["pods"] == 40
    assert list(summary["strategies"]) == ["device-plugin", "dra-whole"]
    for found in summary["strategies"].values():
        assert found["pending_seconds"]["p95"] <= 600
        assert found["cost_per_month"] == found["gpus"] * 2.5 * 730
    table = CliRunner().invoke(app, ["plan", pools, "--prices", prices, *SMALL], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    base = summary["strategies"]["device-plugin"]
    assert f"h100 {base['nodes']['h100']}" in table.stdout and f"{base['cost_per_month']:,.0f} USD" in table.stdout
    saved = summary["savings_vs_device_plugin"]["dra-whole"]
    assert f"dra-whole vs device-plugin: saves {saved['nodes']} nodes, {saved['gpus']} GPUs" in table.stdout


def test_plan_without_prices_says_why_there_is_no_cost(tmp_path: Path) -> None:
    pools, _ = _files(tmp_path)
    result = CliRunner().invoke(app, ["plan", pools, *SMALL], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "cost and power: give --prices (the GPU catalog has no price or TDP)" in result.stdout


def test_plan_bad_inputs_exit_2_naming_the_field(tmp_path: Path) -> None:
    cases = [
        (POOLS.replace("H100-SXM5-80GB", "H100-SXM-80GB"), PRICES, [], "pools[0].gpu: unknown GPU model"),
        (POOLS, PRICES.replace("watts", "wats"), [], "unknown key 'wats' (did you mean 'watts'?)"),
        (POOLS.replace("max: 8", "max: 1"), PRICES, [], "device-plugin does not meet it within the pools' bounds"),
        (POOLS, PRICES, ["--target", "p95<=10m"], "--target: cannot read 'p95<=10m'"),
        (POOLS, PRICES, ["--pods", "0"], "--pods must be >= 1"),
    ]
    for pools_text, prices_text, extra, error in cases:
        pools, prices = _files(tmp_path, pools_text, prices_text)
        result = CliRunner().invoke(app, ["plan", pools, "--prices", prices, *SMALL, *extra])
        assert result.exit_code == 2, (error, result.output)
        assert error in " ".join(result.stderr.split()), result.stderr


def test_plan_tie_seeds_in_the_title_and_the_json(tmp_path: Path) -> None:
    pools, prices = _files(tmp_path)
    args = ["plan", pools, "--prices", prices, "--tie-seeds", "2", "--pods", "40", "--workers", "1"]
    result = CliRunner().invoke(app, [*args, "--strategies", "dra-whole", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tie_seeds"] == 2 and summary["strategies"]["dra-whole"]["simulations"] % 2 == 0
    table = CliRunner().invoke(app, [*args, "--strategies", "dra-whole"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    assert "under each of 2 tie-break seeds (figures: the worst run)" in text
    assert summary["strategies"]["dra-whole"]["one_node_fewer"]  # the search probed one node fewer
    for fewer in summary["strategies"]["dra-whole"]["one_node_fewer"]:
        nodes = ", ".join(f"{pool} {n}" for pool, n in fewer["nodes"].items())
        assert f"dra-whole with {nodes}: met the target in {fewer['runs_meeting']} of 2 draws" in text
    refused = CliRunner().invoke(app, ["plan", pools, "--tie-seeds", "0", *SMALL])
    assert refused.exit_code == 2 and "--tie-seeds" in refused.stderr
