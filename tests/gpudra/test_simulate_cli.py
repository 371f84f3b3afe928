"""`gpudra simulate`: the stable JSON summary, errors with file:line, and the default run."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app
from tests.simulator.conftest import POD_HEADER, write

KEYS = {
    "pods_total", "pods_placed", "pods_pending", "gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio",
    "unallocated_gpus", "nvlink_satisfied_ratio", "mig_reconfigurations", "drained_node_hours", "mean_pending_seconds",
}  # fmt: skip
RATIOS = ("gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio", "nvlink_satisfied_ratio")


def _check(summary: dict[str, object], strategies: list[str]) -> None:
    assert set(summary) == {"input", "strategies", "notes", "explanations", "assumptions"}
    table = summary["strategies"]
    assert isinstance(table, dict) and list(table) == strategies
    for row in table.values():
        assert KEYS <= set(row)
        for key in RATIOS:
            assert 0.0 <= row[key] <= 1.0


def test_simulate_json_on_openb_files(pod_csv: Path, node_csv: Path) -> None:
    result = CliRunner().invoke(
        app, ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies",
              "device-plugin,dra-whole,fgd", "--protocol", "replay", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    _check(summary, ["device-plugin", "dra-whole", "fgd"])
    assert summary["input"]["workload"]["pods"] == 4 and summary["input"]["cluster"]["gpus"] == 6
    assert summary["strategies"]["fgd"]["pods_placed"] == 4


def test_simulate_openb_defaults_to_the_fgd_protocol(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "fgd", "--json"]
    result = CliRunner().invoke(app, [*args, "--seed", "3"])
    summary = json.loads(result.stdout)
    assert summary["input"]["protocol"] == "fgd"
    # sampled with replacement until the requested GPUs reach the cluster's 6 GPUs
    assert summary["strategies"]["fgd"]["pods_total"] > 4


def test_the_fgd_protocol_table_shows_no_wait_and_the_pods_it_submitted(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "device-plugin,fgd"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    wait = next(line for line in result.stdout.splitlines() if line.strip().startswith("wait s"))
    assert [c for c in wait.split()[2:] if c != "│"] == ["n/a", "n/a"], wait  # no time in the protocol: not 0
    summary = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    submitted = summary["explanations"]["demand"]["submitted_pods"]
    assert f"FGD protocol: {submitted} pods submitted" in " ".join(result.stdout.split())


def test_simulate_reports_bad_trace_line(tmp_path: Path, node_csv: Path) -> None:
    bad = write(tmp_path / "bad.csv", POD_HEADER + "\np0,1,1,1,oops,,LS,Running,0,1,0\n")
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(node_csv), "--trace", str(bad), "--json"])
    assert result.exit_code == 2
    assert f"{bad}:2" in result.stderr and "gpu_milli" in result.stderr


def test_simulate_unknown_strategy() -> None:
    result = CliRunner().invoke(app, ["simulate", "--strategies", "nope"])
    assert result.exit_code == 2 and "unknown strategies" in result.stderr


def test_simulate_default_run() -> None:
    result = CliRunner().invoke(app, ["simulate", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    _check(summary, ["device-plugin", "gpudra"])
    dp, gd = summary["strategies"]["device-plugin"], summary["strategies"]["gpudra"]
    assert summary["input"]["workload"]["kind"] == "generated" and summary["input"]["cluster"]["gpus"] == 80
    assert gd["vram_waste_ratio"] < dp["vram_waste_ratio"]
    assert gd["drained_node_hours"] == 0 and dp["mig_reconfigurations"] > 0


def test_simulate_allocator_mode(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "gpudra", "--json"]
    result = CliRunner().invoke(app, [*args, "--protocol", "replay", "--allocator-mode", "upstream"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["input"]["allocator_mode"] == "upstream"
    assert summary["input"]["strategy_details"]["gpudra"]["mode"] == "upstream"
    assert summary["strategies"]["gpudra"]["pods_placed"] == 4
    bad = CliRunner().invoke(app, [*args, "--allocator-mode", "fast"])
    assert bad.exit_code == 2 and "allocator-mode" in bad.stderr


def test_simulate_fgd_protocol_prints_the_kpis_at_each_load(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "fgd,gpudra"]
    result = CliRunner().invoke(app, [*args, "--protocol", "fgd"])
    assert result.exit_code == 0, result.output
    for title in ("alloc % @80%", "alloc % @100%", "frag @130%", "failed @130%"):
        assert title in result.stdout
    vram = next(line for line in result.stdout.splitlines() if "VRAM waste" in line)
    cells = [c.strip() for c in vram.split("│")]
    assert cells[1] == "-" and 0 <= float(cells[2]) <= 1  # FGD's model has no VRAM; gpudra's has a ratio


def test_simulate_node_score(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "gpudra", "--json"]
    result = CliRunner().invoke(app, [*args, "--node-score", "fragmentation"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["input"]["node_score"] == "fragmentation"
    assert summary["input"]["strategy_details"]["gpudra"]["node_score"] == "fragmentation"
    bad = CliRunner().invoke(app, [*args, "--node-score", "tightest"])
    assert bad.exit_code == 2 and "--node-score must be" in bad.stderr and "fragmentation" in bad.stderr


def test_simulate_counts_pods_it_keeps_but_cannot_serve_as_asked(tmp_path: Path, node_csv: Path) -> None:
    rows = ["p0,4000,8192,1,500,A800,LS,Running,0,100,0", "p1,4000,8192,1,500,T4|A800,LS,Running,5,5,5"]
    trace = write(tmp_path / "pods.csv", POD_HEADER + "\n" + "\n".join(rows) + "\n")
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(trace), "--strategies", "fgd,gpudra"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["input"]["workload"]["kept_notes"]
    assert notes["GPU model not in the cluster: A800"] == {"count": 1, "examples": [f"{trace}:2"]}
    assert notes["zero-length pod"] == {"count": 1, "examples": [f"{trace}:3"]}  # T4|A800: the T4 node serves it
    table = CliRunner().invoke(app, args)
    assert "(2 kept with notes, see --json)" in " ".join(table.stdout.split())  # the heading may wrap
