"""The public-pattern manifest tree (issue 25's acceptance): one manifest per project in the shape it publishes.

tests/fixtures/public_patterns holds gpudra's own manifests written after the upstream examples each file's comment
names (NVIDIA device plugin, HAMi, KubeRay, Kubeflow Trainer v1 and v2, JobSet, LeaderWorkerSet, vLLM production-stack,
NIM, TGI, SGLang, Triton, Argo Rollouts). Through the CLI (`gpudra translate FILE`), every file exits 0, no container
of a rewritten template keeps `nvidia.com/gpu`, every claim reference resolves, and translating the output again
changes nothing. The kinds gpudra cannot rewrite ahead of time come back unchanged with a warning naming their GPU
path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml
from typer.testing import CliRunner

from dra.documents import read_documents
from gpudra.cli import app
from manifest_translation import translate_documents
from policyengine import load_policies
from tests.workloads.test_stamping import NAMESPACE, _admission, _webhook_claim
from workloads import UnknownWorkload, controller_pod, pod_templates

PATTERNS = Path(__file__).resolve().parents[1] / "fixtures" / "public_patterns"
FILES = sorted(PATTERNS.glob("*.yaml"))
# Files that ask for no GPU: the device plugin's own DaemonSet (a nvidia.com/gpu toleration is no request) and a
# ConfigMap.
UNCHANGED = {"configmap-only", "device-plugin-daemonset"}


def _run(path: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["translate", str(path)])
    return result.exit_code, result.stdout, result.stderr


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _namespace(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _resources(container: dict[str, Any]) -> list[str]:
    resources = container.get("resources") or {}
    return [name for part in ("requests", "limits") for name in (resources.get(part) or {})]


def test_the_tree_has_a_manifest_per_project() -> None:
    names = {p.stem for p in FILES}
    projects = ["device-plugin", "hami", "kuberay-raycluster", "kuberay-rayjob", "kuberay-rayservice", "jobset",
                "kubeflow-pytorchjob", "kubeflow-trainer-v2", "leaderworkerset", "production-stack-deployment",
                "production-stack-vllmruntime", "nim", "tgi", "sglang", "triton"]  # fmt: skip
    for prefix in projects:
        assert any(n.startswith(prefix) for n in names), prefix
    for path in FILES:  # each opens with a comment citing the upstream example it follows (a repository path)
        comment = "".join(line for line in path.read_text().splitlines() if line.startswith("#"))
        assert path.read_text().startswith("# ") and ("/" in comment or path.stem == "configmap-only"), path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_public_pattern_translates_resolvably_and_idempotently(path: Path) -> None:
    code, out, err = _run(path)
    assert code == 0, err
    documents = _documents(out)
    templates = {(_namespace(d), d["metadata"]["name"]): d for d in documents if d["kind"] == "ResourceClaimTemplate"}
    rewritten = 0
    for obj in documents:
        if obj["kind"] == "ResourceClaimTemplate":
            continue
        try:
            found_templates = pod_templates(obj)
        except UnknownWorkload:  # passed through: checked by the warning below
            continue
        for found in found_templates:
            spec, metadata = found.template["spec"], found.template.get("metadata") or {}
            if "gpudra.io/translated" not in (metadata.get("annotations") or {}):
                continue
            rewritten += 1
            claims = {c["name"]: c for c in spec.get("resourceClaims") or []}
            for name, claim in claims.items():
                key = (_namespace(obj), claim["resourceClaimTemplateName"])
                assert key in templates, f"{path.name} {found.where}: claim {name} names a missing template {key}"
            for container in spec["containers"] + (spec.get("initContainers") or []):
                assert not any(r.startswith("nvidia.com/") for r in _resources(container)), (path.name, container)
                for ref in (container.get("resources") or {}).get("claims") or []:
                    assert ref["name"] in claims, (path.name, ref)
                    entry = claims[ref["name"]]
                    template = templates[(_namespace(obj), entry["resourceClaimTemplateName"])]
                    requests = {r["name"] for r in template["spec"]["spec"]["devices"]["requests"]}
                    assert ref.get("request", next(iter(requests))) in requests, (path.name, ref)
    passed_through = "passed through unchanged" in err
    if path.stem in UNCHANGED:  # no GPU request anywhere: printed back as it is
        assert not rewritten and documents == _documents(path.read_text()), path.name
    else:
        assert rewritten or passed_through, (path.name, err)
    # Idempotent: the output translated again is the output, with nothing left to rewrite.
    rerun = CliRunner().invoke(app, ["translate", "-"], input=out)
    assert rerun.exit_code == 0, rerun.stderr
    assert _documents(rerun.stdout) == documents, path.name


def _translated(name: str) -> tuple[list[dict[str, Any]], str]:
    code, out, err = _run(PATTERNS / name)
    assert code == 0, err
    return _documents(out), err


def _templates(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d["spec"]["spec"] for d in documents if d["kind"] == "ResourceClaimTemplate"]


def test_a_raycluster_gpu_worker_gets_the_topology_claim_and_keeps_rays_gpu_count() -> None:
    documents, err = _translated("kuberay-raycluster.yaml")
    worker = documents[0]["spec"]["workerGroupSpecs"][0]
    assert worker["rayStartParams"] == {"num-gpus": "2"}  # KubeRay read it from the limit gpudra moved to a claim
    assert worker["template"]["metadata"]["annotations"]["gpudra.io/policy"] == "multi-gpu"
    assert documents[0]["spec"]["headGroupSpec"]["rayStartParams"] == {"num-gpus": "0"}
    (claim,) = _templates(documents)
    assert claim["devices"]["constraints"] and "rayStartParams: set num-gpus" in err


def test_tgi_num_shard_2_gets_two_gpus_with_a_topology_constraint_and_no_mig() -> None:
    documents, _ = _translated("tgi-sharded.yaml")
    (claim,) = _templates(documents)
    alternatives = claim["devices"]["requests"][0]["firstAvailable"]
    assert all(a["count"] == 2 and a["deviceClassName"] == "gpu.nvidia.com" for a in alternatives)
    assert claim["devices"]["constraints"]


def test_kubeflow_trainer_v2_runtime_is_rewritten_and_the_trainjob_passed_through_with_its_gpu_path() -> None:
    documents, err = _translated("kubeflow-trainer-v2.yaml")
    runtime, trainjob = documents[0], documents[2]
    assert [d["kind"] for d in documents] == ["ClusterTrainingRuntime", "ResourceClaimTemplate", "TrainJob"]
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert node["resourceClaims"] and trainjob == _documents((PATTERNS / "kubeflow-trainer-v2.yaml").read_text())[1]
    assert "TrainJob 'mnist-ddp'" in err and "spec.trainer.resourcesPerNode.limits['nvidia.com/gpu']" in err
    assert "`gpudra serve` translates its pods" in err
    assert "drops its DRA claim reference" in err and "must exist in each namespace" in err


def test_a_vllmruntime_is_passed_through_naming_its_gpu_field() -> None:
    documents, err = _translated("production-stack-vllmruntime.yaml")
    assert documents == _documents((PATTERNS / "production-stack-vllmruntime.yaml").read_text())
    assert "VLLMRuntime 'vllmruntime-sample'" in err and "spec.deploymentConfig.resources.gpu (1)" in err
    assert "`gpudra serve` translates its pods" in err


def test_an_argo_rollout_is_rewritten_at_spec_template() -> None:
    documents, _ = _translated("argo-rollout.yaml")
    assert documents[0]["spec"]["template"]["spec"]["resourceClaims"]
    assert [d["kind"] for d in documents] == ["Rollout", "ResourceClaimTemplate"]


def test_a_configmap_only_file_is_printed_unchanged() -> None:
    code, out, err = _run(PATTERNS / "configmap-only.yaml")
    assert code == 0 and _documents(out) == _documents((PATTERNS / "configmap-only.yaml").read_text())
    assert err.startswith("note: ")


ORDINARY = {
    # a chart's values file: no kind, GPUs in resources.limits
    "values.yaml": "replicaCount: 1\nresources:\n  limits:\n    nvidia.com/gpu: 1\n",
    "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
    # Flux's HelmRelease carries a chart's values, GPUs included
    "helmrelease.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: v}\nspec:\n"
    "  values:\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
    "quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n"
    "spec: {hard: {requests.nvidia.com/gpu: '4'}}\n---\n"
    "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\nspec:\n  limits:\n  - type: Container\n"
    "    default: {nvidia.com/gpu: '1'}\n",
    "comments.yaml": "# nothing but a comment\n",
    # an Argo Rollout that takes its pods from a Deployment (workloadRef): nothing of its own to translate
    "rollout-ref.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n"
    "  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n",
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_an_ordinary_manifest_never_exits_2(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(ORDINARY[name])
    code, out, err = _run(path)
    assert code == 0, err
    assert _documents(out) == _documents(ORDINARY[name])  # printed unchanged
    assert err.startswith(("note: ", "warning: ")) and "error" not in err.split(":")[0]
    if "nvidia.com/gpu: 1" in ORDINARY[name]:
        assert "nvidia.com/gpu" in err and "`gpudra serve` translates its pods" in err  # the GPU path is named


def test_the_tree_translates_in_place_with_translate_r_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = CliRunner().invoke(app, ["translate", "-R", str(PATTERNS), "--out", str(out), "-o", "json"])
    assert first.exit_code == 0, first.stderr
    report = json.loads(first.stdout)
    assert not report["errors"] and not report["denied"] and len(report["changed"]) >= 12
    ray = _documents((out / "kuberay-raycluster.yaml").read_text())[0]
    assert ray["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "2"}
    # the pass-through kinds and the ConfigMap stay byte for byte
    for name in ("production-stack-vllmruntime.yaml", "configmap-only.yaml", "device-plugin-daemonset.yaml"):
        assert (out / name).read_bytes() == (PATTERNS / name).read_bytes()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = CliRunner().invoke(app, ["translate", "-R", str(out), "-o", "json"])
    assert second.exit_code == 0 and json.loads(second.stdout)["changed"] == []
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_json_patches_turn_each_input_object_into_its_output(path: Path) -> None:
    result = CliRunner().invoke(app, ["translate", str(path), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["objects", "templates", "translations"]  # one shape, one Pod or many
    originals = [d for d in _documents(path.read_text()) if d.get("kind") != "ResourceClaimTemplate"]
    by_object: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for t in data["translations"]:
        by_object.setdefault((t["kind"], t["name"]), []).extend(t["patch"])
    for original, output in zip(originals, data["objects"], strict=True):
        ops = by_object.get((original["kind"], original["metadata"]["name"]), [])
        assert jsonpatch.apply_patch(copy.deepcopy(original), ops) == output, path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_translate_and_the_webhook_agree_on_every_public_pattern(path: Path) -> None:
    """Item 1 on the real shapes: each template's claim and policy from `translate` are the webhook's for the pod
    the workload's controller creates (tests/policyengine/test_controller_pods.py has the generated spread)."""
    documents = read_documents(path)
    objects, _ = translate_documents(documents, load_policies())
    for obj in objects:
        for t in obj.templates:
            admission, api = _admission()
            namespace = t.pod.namespace or NAMESPACE
            pod = controller_pod(obj.document.data, t.pod.template, t.pod.pod)
            pod = {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}
            webhook = _webhook_claim(admission, api, pod, namespace)
            if t.denied:
                assert webhook[0] == "denied", t.pod.label
            elif not t.translation.changed:
                assert webhook == ("unchanged", None), t.pod.label
            else:
                assert (t.decision.policy, t.templates[0]["spec"]["spec"]) == webhook, t.pod.label
