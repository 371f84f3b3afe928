"""`gpudra translate FILE` and `gpudra policy explain FILE` on workloads, streams and Lists (issue 11).

The manifests in fixtures/workloads are written after public examples (NVIDIA device plugin demos, KubeRay samples,
vLLM production-stack, Kubeflow): every kind gpudra knows the pod templates of is translated at its own path, the
template named after the workload and the template's role.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.commands.policy import explain
from gpudra.commands.translate import translate_file
from manifest_translation import SOURCE_ANNOTATION
from policyengine.translate import MANAGED_BY

FIXTURES = Path(__file__).parent / "fixtures" / "workloads"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

HASH = r"[0-9a-f]{10}"


def _stream(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _at(obj: Any, *path: str | int) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _legacy(obj: Any) -> bool:
    """Whether `nvidia.com/gpu` is a key anywhere (a resource), not a value (a toleration's key, a selector)."""
    return '"nvidia.com/gpu":' in json.dumps(obj)


# (file, kind, the pod template paths that ask for GPUs, the template-name prefix of each, paths left alone)
KINDS = [
    ("deployment-vllm.yaml", "Deployment", [("spec", "template")], ["vllm-llama3-8b"], []),
    ("statefulset-triton.yaml", "StatefulSet", [("spec", "template")], ["triton"], []),
    ("daemonset-gpu-burn.yaml", "DaemonSet", [("spec", "template")], ["gpu-burn"], []),
    ("replicaset-embeddings.yaml", "ReplicaSet", [("spec", "template")], ["embeddings-7d9c5b6f4"], []),
    ("job-vectoradd.yaml", "Job", [("spec", "template")], ["cuda-vectoradd"], []),
    ("cronjob-batch-inference.yaml", "CronJob", [("spec", "jobTemplate", "spec", "template")], ["nightly-scoring"], []),
    (
        "raycluster.yaml",
        "RayCluster",
        [("spec", "workerGroupSpecs", 0, "template"), ("spec", "workerGroupSpecs", 1, "template")],
        ["raycluster-gpu-gpu-group", "raycluster-gpu-big-gpu-group"],
        [("spec", "headGroupSpec", "template")],
    ),
    (
        "rayservice.yaml",
        "RayService",
        [("spec", "rayClusterConfig", "workerGroupSpecs", 0, "template")],
        ["text-summarizer-gpu-group"],
        [("spec", "rayClusterConfig", "headGroupSpec", "template")],
    ),
    (
        "rayjob.yaml",
        "RayJob",
        [("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template")],
        ["pytorch-mnist-small-group"],
        [("spec", "rayClusterSpec", "headGroupSpec", "template"), ("spec", "submitterPodTemplate")],
    ),
    (
        "pytorchjob.yaml",
        "PyTorchJob",
        [("spec", "pytorchReplicaSpecs", "Master", "template"), ("spec", "pytorchReplicaSpecs", "Worker", "template")],
        ["resnet50-ddp-master", "resnet50-ddp-worker"],
        [],
    ),
    (
        "leaderworkerset.yaml",
        "LeaderWorkerSet",
        [("spec", "leaderWorkerTemplate", "leaderTemplate"), ("spec", "leaderWorkerTemplate", "workerTemplate")],
        ["vllm-multinode-leader", "vllm-multinode-worker"],
        [],
    ),
]


@pytest.mark.parametrize(("file", "kind", "paths", "prefixes", "untouched"), KINDS, ids=[k[1] for k in KINDS])
def test_every_known_kind_is_translated_at_its_pod_template_paths(
    file: str, kind: str, paths: list[tuple[str | int, ...]], prefixes: list[str], untouched: list[tuple[str, ...]]
) -> None:
    source = yaml.safe_load((FIXTURES / file).read_text())
    outcome = translate_file(FIXTURES / file)
    assert outcome.code == 0, outcome.stderr
    workload, *templates = _stream(outcome.stdout)
    assert workload["kind"] == kind and workload["metadata"] == source["metadata"]
    assert [t["kind"] for t in templates] == ["ResourceClaimTemplate"] * len(paths)
    names = [t["metadata"]["name"] for t in templates]
    for path, prefix, name in zip(paths, prefixes, names, strict=True):
        assert name.startswith(prefix + "-") and len(name) == len(prefix) + 11, name
        template = _at(workload, *path)
        assert template["spec"]["resourceClaims"] == [{"name": "gpudra", "resourceClaimTemplateName": name}]
        assert template["metadata"]["annotations"]["gpudra.io/translated"] == name
        assert not _legacy(template), "the legacy GPU resources are gone from the template"
        assert all(c["resources"]["claims"][0]["name"] == "gpudra" for c in template["spec"]["containers"])
        assert "namespace" not in template["metadata"] and "generateName" not in template["metadata"]
    for path in untouched:
        assert _at(workload, *path) == _at(source, *path), f"{path} asks for no GPU and stays as written"
    for template in templates:
        metadata = template["metadata"]
        assert metadata["namespace"] == source["metadata"]["namespace"]
        assert metadata.get("labels", {}).items() & MANAGED_BY.items() == set(), "gpudra gc must not own these"
        assert metadata["annotations"][SOURCE_ANNOTATION].startswith(f"{kind}/{source['metadata']['name']} spec.")
    assert not _legacy({k: v for k, v in workload.items() if k != "spec"})


def test_the_rest_of_a_workload_is_kept_as_written() -> None:
    outcome = translate_file(FIXTURES / "statefulset-triton.yaml")
    workload = _stream(outcome.stdout)[0]
    source = yaml.safe_load((FIXTURES / "statefulset-triton.yaml").read_text())
    assert workload["spec"]["volumeClaimTemplates"] == source["spec"]["volumeClaimTemplates"]
    assert workload["spec"]["serviceName"] == "triton" and workload["spec"]["replicas"] == 2
    assert workload["spec"]["template"]["metadata"]["labels"] == {"app": "triton"}
    container = workload["spec"]["template"]["spec"]["containers"][0]
    assert container["volumeMounts"] == [{"name": "models", "mountPath": "/models"}]
    assert "limits" not in container["resources"], "nvidia.com/gpu was its only limit"


def test_a_vllm_deployment_gets_the_multi_gpu_claim_with_the_workload_labels_seen_by_the_policy() -> None:
    outcome = translate_file(FIXTURES / "deployment-vllm.yaml", output="json")
    data = json.loads(outcome.stdout)
    (translation,) = data["translations"]
    assert translation["policy"] == "multi-gpu" and translation["path"] == "spec.template"
    (template,) = data["templates"]
    request = template["spec"]["spec"]["devices"]["requests"][0]
    choices = [request["exactly"]] if "exactly" in request else request["firstAvailable"]
    assert {choice["count"] for choice in choices} == {2}, "every alternative asks for the two GPUs"
    container = data["objects"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {
        "requests": {"cpu": "8", "memory": "32Gi"},
        "limits": {"memory": "32Gi"},
        "claims": [{"name": "gpudra", "request": "vllm"}],
    }


def test_json_patch_paths_start_at_the_object_root() -> None:
    data = json.loads(translate_file(FIXTURES / "cronjob-batch-inference.yaml", output="json").stdout)
    (translation,) = data["translations"]
    assert translation["kind"] == "CronJob" and translation["namespace"] == "analytics"
    assert all(op["path"].startswith("/spec/jobTemplate/spec/template/") for op in translation["patch"])
    assert list(data) == ["objects", "templates", "translations"]


def test_two_pods_in_one_stream_are_both_translated_in_order(tmp_path: Path) -> None:
    stream = tmp_path / "pods.yaml"
    stream.write_text(
        (EXAMPLES / "pod-legacy-1gpu.yaml").read_text() + "---\n" + (EXAMPLES / "pod-legacy-vram.yaml").read_text()
    )
    outcome = translate_file(stream)
    assert outcome.code == 0, outcome.stderr
    documents = _stream(outcome.stdout)
    assert [d["kind"] for d in documents] == ["Pod", "ResourceClaimTemplate", "Pod", "ResourceClaimTemplate"]
    first, first_rct, second, second_rct = documents
    assert first["metadata"]["name"] == "cuda-job" and second["metadata"]["name"] != "cuda-job"
    for pod, rct in ((first, first_rct), (second, second_rct)):
        assert not _legacy(pod["spec"])
        assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == rct["metadata"]["name"]
        assert rct["metadata"]["name"].startswith(pod["metadata"]["name"] + "-")


@pytest.mark.parametrize("list_kind", ["List", "PodList", "DeploymentList"])
def test_a_list_is_translated_item_by_item(tmp_path: Path, list_kind: str) -> None:
    item = "deployment-vllm.yaml" if list_kind == "DeploymentList" else "job-vectoradd.yaml"
    pod = yaml.safe_load((EXAMPLES / "pod-legacy-1gpu.yaml").read_text())
    first = yaml.safe_load((FIXTURES / item).read_text()) if list_kind != "PodList" else pod
    second = yaml.safe_load((FIXTURES / "statefulset-triton.yaml").read_text()) if list_kind == "List" else first
    if list_kind == "PodList":
        second = {**pod, "metadata": {**pod["metadata"], "name": "cuda-job-2"}}
    if list_kind == "DeploymentList":
        second = {**first, "metadata": {**first["metadata"], "name": "vllm-second"}}
    listing = tmp_path / "list.yaml"
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": list_kind, "items": [first, second]}))
    outcome = translate_file(listing)
    assert outcome.code == 0, outcome.stderr
    documents = _stream(outcome.stdout)
    workloads = [d for d in documents if d["kind"] != "ResourceClaimTemplate"]
    assert [w["metadata"]["name"] for w in workloads] == [first["metadata"]["name"], second["metadata"]["name"]]
    assert not any(_legacy(w["spec"]) for w in workloads)
    assert sum(d["kind"] == "ResourceClaimTemplate" for d in documents) == 2


def test_objects_without_gpus_pass_through_unchanged(tmp_path: Path) -> None:
    stream = tmp_path / "app.yaml"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"template": "x"}}
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
    }
    stream.write_text(yaml.safe_dump_all([config, web, yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())]))
    outcome = translate_file(stream)
    assert outcome.code == 0, outcome.stderr
    documents = _stream(outcome.stdout)
    assert documents[:2] == [config, web]
    assert [d["kind"] for d in documents[2:]] == ["Job", "ResourceClaimTemplate"]


def test_unknown_kinds_with_pod_templates_are_named_with_the_paths_found(tmp_path: Path) -> None:
    manifest = tmp_path / "cloneset.yaml"  # OpenKruise's CloneSet: a kind gpudra does not know
    manifest.write_text(
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: canary}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: app\n        image: app:1\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"
    )
    outcome = translate_file(manifest)
    # exit 0: the Rollout and the ConfigMap come back unchanged, with a warning that admission translates its pods
    assert outcome.code == 0 and [d["kind"] for d in yaml.safe_load_all(outcome.stdout)] == ["CloneSet", "ConfigMap"]
    assert outcome.stderr.startswith(f"warning: {manifest}:1: CloneSet 'canary' (apps.kruise.io/v1alpha1): not a kind")
    assert "`gpudra serve` translates its pods when they are created" in outcome.stderr
    assert "pod templates at spec.template" in outcome.stderr
    assert "GPU resources at spec.template.spec.containers[0].resources.limits['nvidia.com/gpu']" in outcome.stderr
    assert "Deployment" in outcome.stderr and "RayCluster" in outcome.stderr


def test_a_known_kind_in_another_api_group_is_unknown(tmp_path: Path) -> None:
    job = yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump({**job, "apiVersion": "example.com/v1"}))
    outcome = translate_file(manifest)
    assert outcome.code == 0 and "warning: " in outcome.stderr
    assert "Job 'cuda-vectoradd' (example.com/v1): not a kind" in outcome.stderr


def test_a_known_kind_without_its_pod_template_names_the_paths_tried(tmp_path: Path) -> None:
    manifest = tmp_path / "ray.yaml"
    manifest.write_text("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: empty}\nspec: {rayVersion: '2.9'}\n")
    outcome = translate_file(manifest)
    assert outcome.code == 0 and outcome.stderr.startswith("warning: ")
    assert (
        "RayCluster 'empty' (ray.io/v1): no pod template at spec.headGroupSpec.template, "
        "spec.workerGroupSpecs[*].template" in outcome.stderr
    )


def test_gpu_requests_outside_the_known_paths_are_reported(tmp_path: Path) -> None:
    job = yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())
    job["spec"]["sidecarOverrides"] = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    outcome = translate_file(manifest)
    assert outcome.code == 0 and yaml.safe_load(outcome.stdout) == job, "passed through unchanged"
    assert "GPU resources at spec.sidecarOverrides.resources.limits['nvidia.com/gpu'], outside" in outcome.stderr
    assert "(tried spec.template)" in outcome.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: [1]}\n",
            ":1: spec.template must be a pod template object (got list)",
        ),
        (
            "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r}\nspec: {workerGroupSpecs: {a: 1}}\n",
            ":1: spec.workerGroupSpecs must be a list (got dict)",
        ),
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec: {containers: x}\n",
            ":1: Job j spec.template: pod field spec.containers must be a list (got str)",
        ),
        ("apiVersion: batch/v1\nkind: Job\nspec: [\n", ":4: invalid YAML"),
    ],
)
def test_malformed_input_names_the_file_the_line_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(text)
    outcome = translate_file(manifest)
    assert outcome.code == 2 and outcome.stdout == ""
    assert outcome.stderr.startswith(f"error: {manifest}") and message in outcome.stderr, outcome.stderr


def test_gpu_counts_beyond_a_claim_are_refused_with_the_limit(tmp_path: Path) -> None:
    job = yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 64
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    outcome = translate_file(manifest)
    assert outcome.code == 2
    where = "Job default/cuda-vectoradd spec.template: spec.containers[0].resources.limits['nvidia.com/gpu']"
    assert where in outcome.stderr and "is 64: a device count must be a whole number from 0 to 32" in outcome.stderr


def test_a_denied_template_prints_nothing_and_names_the_workload(tmp_path: Path) -> None:
    mixed = yaml.safe_load((EXAMPLES / "pod-mixed.yaml").read_text())
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "mixed", "namespace": "team-a"},
        "spec": {"template": {"metadata": {"labels": {"app": "m"}}, "spec": mixed["spec"]}},
    }
    manifest = tmp_path / "mixed.yaml"
    manifest.write_text(yaml.safe_dump_all([yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text()), deployment]))
    outcome = translate_file(manifest)
    assert outcome.code == 1 and outcome.stdout == ""
    assert outcome.stderr.startswith("denied: Deployment team-a/mixed spec.template: GPUClaimPolicy 'guardrails'")


def test_a_file_without_pod_templates_says_what_it_found() -> None:
    outcome = translate_file(EXAMPLES / "namespace-team-a.yaml")
    # an ordinary manifest is not an error: printed unchanged, with a note of what it holds
    assert outcome.code == 0 and yaml.safe_load(outcome.stdout)["kind"] == "Namespace"
    assert "note: " in outcome.stderr
    assert "no Pod object in the file, nor a workload with a pod template (found Namespace)" in outcome.stderr


def test_translating_the_output_again_changes_nothing(tmp_path: Path) -> None:
    for file in ("raycluster.yaml", "pytorchjob.yaml", "leaderworkerset.yaml"):
        once = translate_file(FIXTURES / file)
        assert once.code == 0, once.stderr
        again_input = tmp_path / file
        again_input.write_text(once.stdout)
        twice = translate_file(again_input)
        assert twice.code == 0, twice.stderr
        assert _stream(twice.stdout) == _stream(once.stdout), f"{file}: the second run must be a no-op"


def test_identical_requests_of_one_role_share_the_hash_and_roles_keep_names_apart() -> None:
    data = json.loads(translate_file(FIXTURES / "leaderworkerset.yaml", output="json").stdout)
    leader, worker = (t["templates"][0] for t in data["translations"])
    assert leader.startswith("vllm-multinode-leader-") and worker.startswith("vllm-multinode-worker-")
    ray = json.loads(translate_file(FIXTURES / "rayjob.yaml", output="json").stdout)
    service = json.loads(translate_file(FIXTURES / "rayservice.yaml", output="json").stdout)
    job_hash = ray["templates"][0]["metadata"]["name"].rsplit("-", 1)[1]
    service_hash = service["templates"][0]["metadata"]["name"].rsplit("-", 1)[1]
    assert job_hash == service_hash, "the same one-GPU claim spec has the same hash whatever the workload"


def test_the_template_goes_to_the_namespace_object_or_nowhere(tmp_path: Path) -> None:
    job = yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text())
    del job["metadata"]["namespace"]
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    (rct,) = json.loads(translate_file(manifest, output="json").stdout)["templates"]
    assert "namespace" not in rct["metadata"], "kustomize or kubectl -n places it with the workload"
    (rct,) = json.loads(
        translate_file(manifest, output="json", namespace_file=EXAMPLES / "namespace-team-a.yaml").stdout
    )["templates"]
    assert rct["metadata"]["namespace"] == "team-a"


def test_one_pod_has_the_shape_of_many() -> None:
    """`-o json` is one shape: a file of one Pod gives `{"objects", "templates", "translations"}` too (the pod is
    `objects[0]`, its patch and warnings `translations[0]`'s)."""
    data = json.loads(translate_file(EXAMPLES / "pod-legacy-1gpu.yaml", output="json").stdout)
    assert list(data) == ["objects", "templates", "translations"]
    (pod,), (template,), (translation,) = data["objects"], data["templates"], data["translations"]
    assert template["metadata"]["name"].startswith("cuda-job-")
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert translation["kind"] == "Pod" and translation["templates"] == [template["metadata"]["name"]]
    assert any(op["path"] == "/spec/resourceClaims" for op in translation["patch"])


def test_explain_names_each_pod_template_by_workload_kind_and_path() -> None:
    outcome = explain(FIXTURES / "raycluster.yaml")
    assert outcome.code == 0
    headers = [line for line in outcome.stdout.splitlines() if line.startswith("== ")]
    assert headers == [
        "== RayCluster ml/raycluster-gpu spec.headGroupSpec.template",
        "== RayCluster ml/raycluster-gpu spec.workerGroupSpecs[0].template",
        "== RayCluster ml/raycluster-gpu spec.workerGroupSpecs[1].template",
    ]
    assert outcome.stdout.count("verdict: allowed") == 3
    data = json.loads(explain(FIXTURES / "pytorchjob.yaml", as_json=True).stdout)
    assert [(t["path"], t["role"], t["decision"]["policy"]) for t in data["templates"]] == [
        ("spec.pytorchReplicaSpecs.Master.template", "Master", "whole-gpu"),
        ("spec.pytorchReplicaSpecs.Worker.template", "Worker", "whole-gpu"),
    ]
    assert data["errors"] == []


def test_explain_reports_unknown_kinds_and_still_explains_the_rest(tmp_path: Path) -> None:
    manifest = tmp_path / "mixed.yaml"
    manifest.write_text(
        (FIXTURES / "job-vectoradd.yaml").read_text()
        + "---\napiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: t}\n"
        + "spec: {resourcesPerNode: {limits: {nvidia.com/gpu: 8}}}\n"
    )
    outcome = explain(manifest)
    assert outcome.code == 0  # as translate: a kind gpudra cannot rewrite ahead of time is a warning
    assert "== Job default/cuda-vectoradd spec.template" in outcome.stdout
    assert "warning: " in outcome.stderr and "Trainer 't' (example.com/v1): not a kind" in outcome.stderr
    assert "GPU resources at spec.resourcesPerNode.limits['nvidia.com/gpu']" in outcome.stderr


def test_the_command_line_takes_workload_files() -> None:
    result = CliRunner().invoke(app, ["translate", str(FIXTURES / "daemonset-gpu-burn.yaml")])
    assert result.exit_code == 0, result.stderr
    assert [d["kind"] for d in _stream(result.stdout)] == ["DaemonSet", "ResourceClaimTemplate"]
    result = CliRunner().invoke(app, ["translate", str(FIXTURES / "job-vectoradd.yaml"), "--dry-run"])
    assert result.exit_code == 2 and "--out and --dry-run go with -R DIR" in result.stderr
