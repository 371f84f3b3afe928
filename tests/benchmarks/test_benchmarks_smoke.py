"""Every benchmark in benchmarks/ runs, on inputs small enough for CI, and prints JSON (issue 27: none may rot
unnoticed). The list of benchmarks is read from the directory, so a new one without smoke arguments here fails.

Benchmarks take the openb trace by path; here they get the committed excerpt (tests/simulator/fixtures) under the
file names the full trace uses. Those that need the real control plane use the one tests/controlplane/build.sh
built (skipped with the reason where it is missing, as every e2e test)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.controlplane import binaries

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
FIXTURES = ROOT / "tests" / "simulator" / "fixtures"
TRACE_NAMES = ("cpu050", "cpu100", "cpu200", "cpu250", "default", "gpushare100", "gpushare40", "gpushare80")
TRACE_NAMES += ("gpuspec10", "gpuspec20", "gpuspec25", "multigpu20", "multigpu30", "multigpu40")
# Benchmarks whose smoke run is a test of its own below, with its checks (their SMOKE arguments are its arguments)
OWN_TEST = {"scheduler_cost.py"}
SHARED_REFERENCE = ROOT.parent / "shared" / "reference" / "fgd-peer-allocation.csv"

# benchmark -> (its smallest useful arguments, with {traces} and {root} filled in; needs the control plane)
SMOKE: dict[str, tuple[list[str], bool]] = {
    "admission.py": (["--requests", "200", "--concurrency", "4", "--limit-seconds", "30", "--rates", "100"], False),
    "admission_steady.py": (["--rate", "20", "--seconds", "3", "--rounds", "1"], True),
    "admission_sizing.py": (
        [
            "--recommendations",
            "200",
            "--requests",
            "200",
            "--concurrency",
            "4",
            "--rounds",
            "1",
            "--limit-seconds",
            "30",
        ],
        False,
    ),
    "allocator.py": (["--repeat", "1"], True),
    "cel.py": (["--seconds", "0.02"], True),
    "cli_startup.py": (["--smoke", "--no-compile"], False),
    "fgd_gpudra.py": (["--traces", "{traces}", "--names", "default", "--seeds", "42", "--workers", "1"], False),
    "fgd_peer_table.py": (["--traces", "{traces}", "--seeds", "42", "--workers", "1"], False),
    "hostile_neighbours.py": (["--smoke", "--hostile", "2"], False),
    "plan.py": (["{root}/examples/plan/pools.yaml", "--pods", "40", "--workers", "1"], False),
    "policy_eval.py": (["--pods", "200"], False),
    "satisfiability.py": (["--pods", "100"], False),
    "recommender_passes.py": (["--pods", "200", "--replicas", "2", "--days", "1"], False),
    "review_stages.py": (["--pods", "50", "--repeats", "1", "--profile", "5"], False),
    "scheduler_cost.py": (["--smoke"], True),
    "scheduler_fidelity.py": (["--arrivals", "10", "--only", "built-in"], True),
    "simulate.py": (["{traces}", "--strategies", "device-plugin,gpudra", "--scales", "1"], False),
    "simulate_scaling.py": (["{traces}", "--strategies", "gpudra", "--scales", "1,2"], False),
    "simulate_vs_baseline.py": (["{root}", "{traces}", "--strategies", "gpudra", "--scales", "1"], False),
    "sizing_bounds.py": (["--repeats", "1", "--cases", "ordinary,expansion"], False),
    "tenant_attacks.py": (["--smoke", "--only", "forged_reviews", "--only", "bytes_after_refusal"], True),
    "timing_bounds.py": (["--repeat", "1"], False),
    "translate_stream.py": (["--mb", "0.2"], False),
    "verify_whole_run.py": (["--sample", "8", "--replays", "1"], True),
    "webhook_memory.py": (["--pods", "10", "--annotation-bytes", "1024"], False),
    "webhook_reliability.py": (
        ["--random", "10", "--normal", "20", "--rounds", "1", "--half-sent", "3", "--half-sent-bytes", "65536"],
        False,
    ),
    "webhook_soak.py": (["--minutes", "0.2", "--rate", "5", "--window-seconds", "5"], True),
    "yaml_io.py": (["--pod-mb", "0.1", "--documents", "50", "--repeat", "1"], False),
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed openb excerpt under the full trace's file names."""
    folder = tmp_path_factory.mktemp("openb")
    for name in ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv"):
        shutil.copy(FIXTURES / "openb_node_excerpt.csv", folder / name)
    for trace in TRACE_NAMES:  # the names the FGD paper's tables use
        shutil.copy(FIXTURES / "openb_pod_excerpt.csv", folder / f"openb_pod_list_{trace}.csv")
    return folder


def test_every_benchmark_has_smoke_arguments() -> None:
    assert sorted(SMOKE) == BENCHMARKS, "add the new benchmark's smallest arguments to SMOKE"


def _json_of(stdout: str) -> object:
    """The JSON a benchmark printed: its whole stdout, or else its last line."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", [b for b in BENCHMARKS if b not in OWN_TEST])
def test_the_benchmark_runs_and_prints_json(name: str, traces: Path) -> None:
    args, needs_control_plane = SMOKE[name]
    if needs_control_plane:
        try:
            binaries.require("components")
            binaries.require("oracles")
        except binaries.MissingBinaries as exc:
            pytest.skip(str(exc))
    if name == "fgd_peer_table.py":
        if not SHARED_REFERENCE.is_file():
            pytest.skip(f"needs the peer simulator's published table {SHARED_REFERENCE} (not redistributed)")
        args = [*args, "--reference", str(SHARED_REFERENCE)]
    argv = [a.format(traces=traces, root=ROOT) for a in args]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *argv], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    printed = _json_of(done.stdout)
    assert printed is not None
    if name == "admission.py":  # the fixed-rate comparison ran both ways, every review answered
        assert isinstance(printed, dict)
        (at_rate,) = printed["loopback"]["unique_pods_at_fixed_rates"]
        assert at_rate["offered_per_s"] == 100
        for path in ("echo", "mutate"):
            assert [run["reviews"] for run in at_rate[path]["runs"]] == [200, 200]
            assert [run["failures"] for run in at_rate[path]["runs"]] == [0, 0]
        assert at_rate["p99_mutate_over_echo"] > 0
        # the server's CPU per unique /mutate review, beside echo's (issue 41)
        assert printed["loopback"]["echo"]["mean_of_runs"]["server_cpu_us_per_review"] > 0
        assert printed["loopback"]["mutate"]["unique_pods"]["ratio"]["server_cpu_mutate_over_echo"] > 0
    if name == "admission_steady.py":  # each kind's load through the API server, every pod mutated by its webhook
        assert isinstance(printed, dict) and [r["kind"] for r in printed["runs"]] == ["legacy", "echo_patch", "gpudra"]
        kinds = printed["by_kind"]
        assert [kinds[k]["created"] for k in ("legacy", "echo_patch", "gpudra")] == [60, 60, 60]
        assert kinds["gpudra"]["translated"] == 60 and kinds["echo_patch"]["patched"] == 60
        assert kinds["gpudra"]["server_side_p99_ms_median"] > 0 and kinds["legacy"]["server_side_p99_ms_median"] is None
    if name == "review_stages.py":  # every stage of a unique review measured, the decision among them (issue 41)
        assert isinstance(printed, dict) and printed["pods_per_repeat"] == 50
        stages = printed["cpu_us_per_review"]
        assert stages["parse_review"] > 0 and stages["decide"] > 0 and stages["encode"] > 0
        assert sum(printed["share"].values()) == pytest.approx(1, abs=0.01)
        assert "cumulative" in done.stderr or "tottime" in done.stderr  # the --profile listing
    if name == "tenant_attacks.py":  # through the API server, the rows' keys, forged reviews both ways
        assert isinstance(printed, dict) and printed["through_apiserver"]
        forged = printed["attacks"]["forged_reviews"]
        rows = [forged["with_client_ca"], forged["without_client_ca"], printed["attacks"]["bytes_after_refusal"]]
        for row in rows:
            assert row["ordinary_pods"] > 0 and row["p99_ms_baseline"] > 0 and row["rss_mib_peak"] > 0
            assert {"admitted", "translated", "p99_ms_under_attack", "p99_ratio", "rss_mib_after_30s"} <= set(row)
            assert 0 <= row["ordinary_pods_due_during_attack"] <= row["ordinary_pods"]
        assert forged["with_client_ca"]["attack"]["forged_reviews"] >= 20  # and on while the ordinary pods went
        assert forged["with_client_ca"]["ordinary_pods_due_during_attack"] == forged["with_client_ca"]["ordinary_pods"]


@pytest.mark.slow
@pytest.mark.e2e
def test_admission_through_the_api_server_runs_and_keeps_its_keys() -> None:
    """`--through-apiserver` (issue 27 item 1, issue 41) at its smallest: every burst kind, the Deployment burst, a
    steady load of 2 s, and the JSON keys the issues name, with every pod through the webhook translated, every pod of
    the MutatingAdmissionPolicy's bursts mutated by it, and the webhook's server-side latency read from
    kube-apiserver's histogram for every pod of the steady load."""
    try:
        binaries.require("components")
    except binaries.MissingBinaries as exc:
        pytest.skip(str(exc))
    argv = ["--no-loopback", "--through-apiserver", "--pods", "8", "--rounds", "1", "--deployments", "1"]
    argv += ["--replicas", "4", "--steady-rate", "50", "--steady-seconds", "2", "--steady-gated"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "admission.py"), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"admission.py --through-apiserver exited {done.returncode}:\n{done.stderr[-3000:]}"
    result = _json_of(done.stdout)
    assert isinstance(result, dict)
    burst = result["through_apiserver"]
    assert burst["pods"] == 8 and burst["pods_translated"] == 8 and burst["pods_translated_without_webhook"] == 0
    assert burst["p99_ratio"] > 0 and burst["echo"]["p99_ratio"] > 0 and burst["echo"]["webhook_p99_over_echo"] > 0
    assert set(burst["cpu_seconds_per_burst"]) >= {"legacy", "translated", "webhook", "echo", "echo_patch", "map"}
    # the native peer (a MutatingAdmissionPolicy in kube-apiserver) mutated every pod of its burst
    assert burst["map"]["pods_mutated"] == burst["map"]["pods"] == 8 and burst["map"]["p99_ratio"] > 0
    # the mutating floor patched every pod it saw, and translated none
    assert burst["echo_patch"]["pods_patched"] == burst["echo_patch"]["pods"] == 8
    assert burst["echo_patch"]["p99_ratio"] > 0 and burst["echo_patch"]["webhook_p99_over_echo_patch"] > 0
    if "http1" in burst:
        assert burst["http1"]["pods_translated"] == burst["http1"]["pods"] == 8 and burst["http1"]["p99_over_map"] > 0
    # the steady load: every pod created and translated, and kube-apiserver recorded a call to the webhook for each
    steady = burst["steady"]
    assert steady["gated"] is True  # gated pods are admitted and translated as any other
    assert steady["pods"] == steady["created"] == steady["pods_translated"] == 100 and steady["failures"] == 0
    assert steady["failures_by_status"] == {}
    assert steady["webhook_calls"] >= 100 and steady["server_side_p99_ms"] >= steady["server_side_p50_ms"] > 0
    # and the same load without the webhook, in the same run: no webhook call, every pod created
    assert steady["without_webhook"]["created"] == 100 and steady["without_webhook"]["webhook_calls"] == 0
    assert steady["client_p99_ratio"] > 0
    assert burst["deployments"]["pods_translated"] == 4 and burst["deployments"]["pods_translated_without_webhook"] == 0


@pytest.mark.slow
@pytest.mark.e2e
def test_scheduler_cost_decides_every_pod_both_ways() -> None:
    """`scheduler_cost.py --smoke` (issue 39 point 3): 3 nodes, 12 pods, 1 round, every pod bound or unschedulable
    under gpudra's claims and under KEP-5004's whole-device claims, with the keys the issue names."""
    try:
        binaries.require("components")
    except binaries.MissingBinaries as exc:
        pytest.skip(str(exc))
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scheduler_cost.py"), *SMOKE["scheduler_cost.py"][0]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"scheduler_cost.py --smoke exited {done.returncode}:\n{done.stderr[-3000:]}"
    result = json.loads(done.stdout)
    assert isinstance(result, dict) and result["pods"] == 12
    (size,) = result["sizes"]
    assert size["nodes"] == 3 and size["devices"] > 0 and size["ratio_cpu_per_pod"] > 0
    for way in ("gpudra", "whole"):
        figures = size[way]
        assert set(figures) >= {"cpu_s", "pods_bound", "pods_unschedulable", "cpu_ms_per_pod", "decided_per_s"}
        assert figures["pods_bound"] + figures["pods_unschedulable"] == 12, (way, figures)
        assert figures["pods_bound"] > 0 and figures["cpu_s"] > 0
