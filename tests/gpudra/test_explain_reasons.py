"""`gpudra policy explain` says why (issue 25, item 8): the false match condition of each policy that did not match,
the `gpu` facts the conditions read, and the claim's own variables (the values the claim was built from) beside the
pod-level ones."""

from __future__ import annotations

import json
from pathlib import Path

from gpudra.commands.policy import explain

PATTERNS = Path(__file__).resolve().parents[1] / "fixtures" / "public_patterns"


def test_explain_names_the_false_condition_and_the_facts_it_read() -> None:
    out = explain(PATTERNS / "production-stack-deployment.yaml")
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    multi = next(line for line in lines if line.strip().startswith("multi-gpu"))
    assert "not matched: matchCondition 'has-multi-gpu-container' is false: gpu.max > 1" in multi
    assert "gpu facts: gpu.legacy = true" in out.stdout and "gpu.max = 1" in out.stdout


def test_explain_shows_the_claim_variables_the_sizing_reached() -> None:
    out = explain(PATTERNS / "production-stack-deployment.yaml")
    claim_vars = out.stdout.split("claim variables of right-size for container vllm")[1]
    # The pod-level right-size.vramBytes reads the annotation only (0.0 here); the claim's vram is the model's size.
    assert 'right-size.claim.vram = "20427Mi"' in claim_vars
    assert "right-size.claim.mig = [" in claim_vars and '"profile": "1g.35gb"' in claim_vars


def test_explain_json_carries_the_unmatched_conditions() -> None:
    out = explain(PATTERNS / "tgi-sharded.yaml", as_json=True)
    decision = json.loads(out.stdout)["templates"][0]["decision"]
    assert decision["policy"] == "multi-gpu" and "multi-gpu" not in decision["unmatched"]
    out = explain(PATTERNS / "triton.yaml", as_json=True)
    unmatched = json.loads(out.stdout)["templates"][0]["decision"]["unmatched"]
    assert unmatched["multi-gpu"]["condition"] == "has-multi-gpu-container"
    assert unmatched["multi-gpu"]["expression"].startswith("gpu.max > 1")


def test_a_ray_worker_is_explained_as_the_pod_kuberay_creates() -> None:
    out = explain(PATTERNS / "kuberay-raycluster.yaml")
    worker = out.stdout.split("spec.workerGroupSpecs[0].template")[1]
    assert "multi-gpu            priority 300   builds the claim (enforce)" in worker


def test_explain_warns_for_kinds_decided_at_admission_and_notes_a_file_without_templates() -> None:
    out = explain(PATTERNS / "kubeflow-trainer-v2.yaml")
    assert out.code == 0, out.stderr
    assert "== ClusterTrainingRuntime torch-distributed-gpu" in out.stdout
    assert "warning: " in out.stderr and "TrainJob 'mnist-ddp'" in out.stderr and "gpudra serve" in out.stderr
    out = explain(PATTERNS / "production-stack-vllmruntime.yaml")
    assert out.code == 0 and out.stdout == "" and "spec.deploymentConfig.resources.gpu" in out.stderr
    out = explain(PATTERNS / "configmap-only.yaml")
    assert out.code == 0 and out.stderr.startswith("note: ") and "nothing to explain" in out.stderr


def test_explain_lists_what_the_controller_adds_to_a_workloads_pod() -> None:
    out = explain(PATTERNS / "leaderworkerset-vllm.yaml")
    worker = out.stdout.split("spec.leaderWorkerTemplate.workerTemplate")[1]
    added = worker.split("policies (in evaluation order):")[0]
    assert "as its controller creates it:" in added and "leaderworkerset.sigs.k8s.io/worker-index=1" in added
    assert "annotations: leaderworkerset.sigs.k8s.io/size=2, leaderworkerset.sigs.k8s.io/leader-name=vllm-0" in added
    assert "env of vllm-worker: LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX" in added
    out = explain(PATTERNS / "kuberay-raycluster.yaml")
    assert 'command of ray-worker: ["/bin/bash", "-c", "--"]' in out.stdout and "--num-gpus=2" in out.stdout
    assert "  init containers: wait-gcs-ready" in out.stdout
    single = explain(PATTERNS / "hami-pod.yaml")  # a Pod is decided as written: nothing added
    assert "as its controller creates it" not in single.stdout


def test_explain_json_carries_what_the_controller_adds() -> None:
    data = json.loads(explain(PATTERNS / "leaderworkerset-vllm.yaml", as_json=True).stdout)
    leader, worker = data["templates"]
    assert leader["controller"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert worker["controller"]["env"] == {"vllm-worker": ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]}
    assert worker["controller"]["owner"] == ["StatefulSet/vllm-0"]
