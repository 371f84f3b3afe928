"""Issue 24: the simulator's scheduling against the real kube-scheduler v1.37.2, decision by decision.

Generated pods as gpudra's policies translate them (right-sized MIG claims with `firstAvailable` over dynamic MIG on
H100 and static MIG on A100, multi-GPU claims with matchAttribute constraints, whole GPUs) arrive and leave one event
at a time on 8 nodes with 48 GPUs; before each real decision the model is asked in the same state. Each test starts
its own control plane (the session one holds other tests' Nodes, which the scheduler would see).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from policyengine import load_policies
from simulator.cluster import ClusterSpec, cluster_from_spec
from simulator.scheduling import DEFAULT_PROFILE, node_slices
from simulator.traces import GeneratorConfig, generate
from simulator.verify import ControlPlane, find_components, verify_scheduler
from simulator.verify.compare import model_ask, tally
from simulator.verify.replay import replay
from tests.controlplane import binaries, sourcehash

pytestmark = [pytest.mark.e2e]

POOLS = [
    {"name": "hgx", "count": 4, "gpu": "H100-SXM5-80GB", "gpus": 8, "cpu": 192, "memory": "2Ti", "mig": "dynamic"},
    {"name": "a100", "count": 2, "gpu": "A100-PCIE-80GB", "gpus": 4, "cpu": 64, "memory": "512Gi",
     "mig": ["3g.40gb", "2g.20gb", "1g.10gb"]},
    {"name": "l40s", "count": 2, "gpu": "L40S", "gpus": 4, "cpu": 64, "memory": "512Gi"},
]  # fmt: skip
ARRIVALS = 150  # with the queue's retries, about 2.7 decisions per arrival at this load


def _bin_dir() -> Path:
    binaries.require("components")  # MissingBinaries: the test skips, naming them (tests/controlplane/fixtures.py)
    return binaries.bin_dir()


def _cluster() -> ClusterSpec:
    return cluster_from_spec({"name": "fidelity", "pools": POOLS}, None, Path("fidelity.yaml"))


def _shown(found: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in found.items() if k != "disagreements"} | {
        "disagreements": found["disagreements"][:8]}, indent=1)  # fmt: skip


def test_real_scheduler_decisions_match_the_simulator() -> None:
    spec = _cluster()
    assert spec.total_gpus == 48 and len(spec.nodes) == 8
    pods = generate(GeneratorConfig(pods=ARRIVALS, seed=0, load=0.6), spec.total_gpus).pods
    found = verify_scheduler(spec, pods, sample=ARRIVALS, bin_dir=_bin_dir(), seed=0)
    shown = _shown(found)
    assert found["kube_scheduler_version"] == sourcehash.kubernetes_version(), shown
    # the mix the issue asks for, with churn
    assert found["decisions"] >= 300 and found["departures"] >= 50 and found["unschedulable"] >= 20, shown
    assert {"right-size", "multi-gpu", "whole-gpu"} <= set(found["bound_by_policy"]), shown
    assert set(found["bound_by_pool"]) == {"hgx", "a100", "l40s"}, shown  # dynamic MIG, static MIG, whole GPUs
    assert found["bound_multi_device"] >= 20, shown
    # the real scheduler's waits, per GPUs per pod: every size the sample placed, unschedulable ones waited
    assert set(found["pending_by_gpus"]) >= {"1", "8"} and max(found["pending_by_gpus"].values()) > 0, shown
    # the figures
    assert found["feasibility_agreement"] == 1.0, shown
    assert found["node_in_top_set"] >= 0.99, shown
    assert found["same_devices"] >= 0.99, shown


MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


def test_cli_verify_scheduler_adds_the_verification_to_the_summary(tmp_path: Path) -> None:
    config = tmp_path / "most-allocated.yaml"
    config.write_text(MOST_ALLOCATED)
    result = CliRunner().invoke(
        app,
        ["simulate", "--strategies", "gpudra", "--allocator-mode", "upstream", "--verify-scheduler", "--sample", "12",
         "--k8s-bin", str(_bin_dir()), "--scheduler-config", str(config), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    found = summary["verification"]
    assert list(found)[:5] == [
        "decisions", "feasibility_agreement", "node_in_top_set", "same_devices", "kube_scheduler_version",
    ]  # fmt: skip
    assert found["sample"] == 12 and found["decisions"] >= 12 and found["scheduler_config"] == str(config)
    assert found["feasibility_agreement"] == 1.0, _shown(found)
    assert summary["strategies"]["gpudra"]["pods_total"] == summary["input"]["workload"]["pods"]


def test_a_model_with_another_profile_than_the_scheduler_is_caught() -> None:
    """The check can fail: kube-scheduler packs (MostAllocated) while the model spreads (the defaults)."""
    spec = _cluster()
    pods = generate(GeneratorConfig(pods=40, seed=1, load=0.6), spec.total_gpus).pods
    cp = ControlPlane.launch(find_components(_bin_dir()), scheduler_config=yaml.safe_load(MOST_ALLOCATED))
    try:
        replayed = replay(
            cp, spec, pods, policies=load_policies(), ask=model_ask(DEFAULT_PROFILE),
            slices_of=lambda node: list(node_slices(node, node.name).slices),
        )  # fmt: skip
    finally:
        cp.stop()
    found = tally(replayed.steps).figures()
    assert found["bound"] >= 30 and found["node_in_top_set"] < 0.8, _shown(found)
    assert max(found["causes"], key=found["causes"].get) == "score: NodeResourcesFit", _shown(found)
    assert found["same_devices"] == 1.0, _shown(found)  # the devices on the real node do not depend on the profile


def test_untranslated_pods_take_kep_5004s_claim_in_both(tmp_path: Path) -> None:
    """No policy translates them: the pods keep `nvidia.com/gpu`, kube-scheduler makes the extended resource's claim
    (pod.status.extendedResourceClaimStatus) and the model is asked with the claim the DeviceClass implies."""
    spec = _cluster()
    pods = generate(GeneratorConfig(pods=12, seed=3, load=0.6), spec.total_gpus).pods
    found = verify_scheduler(spec, pods, sample=12, bin_dir=_bin_dir(), policies=tmp_path)  # an empty directory
    shown = _shown(found)
    assert found["bound_by_policy"] == {"legacy request": found["bound"]} and found["bound"] >= 10, shown
    assert found["bound_multi_device"] >= 1, shown
    assert (found["feasibility_agreement"], found["node_in_top_set"], found["same_devices"]) == (1.0, 1.0, 1.0), shown
