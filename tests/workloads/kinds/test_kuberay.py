"""`workloads.kinds.kuberay`: KubeRay's pod templates, the operator's stamp, Ray's count of GPUs and the owner label.

Each expectation names the ray-operator (or Ray autoscaler) source it comes from.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dra.documents import Document
from manifest_translation import translate_documents
from tests.workloads.builders import NAMESPACE, POLICIES, Template, gpu_template, make_workload, pod_of
from workloads import pod_owner
from workloads.kinds import kuberay


def _cluster(t: Template) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": t()},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "rayStartParams": {}, "template": t()}],
    }


EXAMPLES = {
    "RayCluster": ("ray.io/v1", lambda t: {"spec": _cluster(t)}),
    "RayService": (
        "ray.io/v1",
        lambda t: {"spec": {"rayClusterConfig": {**_cluster(t), "enableInTreeAutoscaling": True}}},
    ),
    "RayJob": ("ray.io/v1", lambda t: {"spec": {"rayClusterSpec": _cluster(t), "submitterPodTemplate": t()}}),
    "RayCronJob": ("ray.io/v1", lambda t: {"spec": {"jobTemplate": {"rayClusterSpec": _cluster(t)}}}),
}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in kuberay.KINDS if k.paths} == set(EXAMPLES)


def test_a_ray_pod_names_its_ray_cluster_and_a_job_submitter_its_job() -> None:
    workload = make_workload("RayJob", gpu_template(1))
    assert pod_owner(pod_of(workload, 1)) == ("RayCluster", "wl-xxxxx")  # the worker, by its ray.io/cluster label
    submitter = pod_of(workload, 2)
    assert submitter["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "wl" and pod_owner(submitter) == (
        "Job",
        "wl",
    )


def test_ray_init_containers_wait_for_the_head_and_get_its_address() -> None:
    # pod.go DefaultWorkerPodTemplate appends wait-gcs-ready to a worker; BuildPod gives every init container
    # FQ_RAY_IP and RAY_IP (empty on the head).
    template = gpu_template(1)
    template["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    ray = pod_of(make_workload("RayCluster", template))["spec"]["initContainers"]
    assert [c["name"] for c in ray] == ["fetch", "wait-gcs-ready"]
    assert ray[1]["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert all([e["name"] for e in c["env"]][-2:] == ["FQ_RAY_IP", "RAY_IP"] for c in ray)
    head = pod_of(make_workload("RayCluster", template), 0)["spec"]["initContainers"]
    assert [c["name"] for c in head] == ["fetch"] and head[0]["env"][0] == {"name": "FQ_RAY_IP", "value": ""}


def test_a_ray_worker_is_labelled_as_kuberay_labels_it() -> None:
    # ray-operator/controllers/ray/common/pod.go labelPod: the template's own labels override all but
    # ray.io/node-type, ray.io/group and ray.io/cluster; a RayService's cluster is <name>-<5 random characters>.
    template = gpu_template(4)
    template["metadata"]["labels"].update({"ray.io/node-type": "head", "app.kubernetes.io/name": "mine"})
    pod = pod_of(make_workload("RayService", template))
    labels = pod["metadata"]["labels"]
    assert labels["ray.io/node-type"] == "worker" and labels["ray.io/group"] == "gpu"
    assert labels["ray.io/cluster"] == "wl-xxxxx" and labels["ray.io/is-ray-node"] == "yes"
    assert labels["app.kubernetes.io/name"] == "mine" and labels["app"] == "x"
    assert labels["ray.io/serve"] == "true"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_the_multi_gpu_policy_decides_a_ray_worker_the_same_from_translate_and_the_webhook() -> None:
    workload = make_workload("RayCluster", gpu_template(4))
    objects, _ = translate_documents([Document(workload, "w.yaml", 1)], POLICIES)
    worker = objects[0].templates[1]
    assert worker.decision.policy == "multi-gpu"
    constraints = worker.templates[0]["spec"]["spec"]["devices"]["constraints"]
    assert constraints and all("matchAttribute" in c for c in constraints)


def test_kuberay_wraps_the_ray_containers_command_around_ray_start() -> None:
    # common/pod.go BuildPod: a command without `ray start` runs first, then KubeRay's generated `ray start`, under
    # /bin/bash -c --; num-gpus in the generated command comes from the limit (addWellKnownAcceleratorResources).
    template = gpu_template(2, command=["python", "serve.py"], args=["--tensor-parallel-size", "2"])
    pod = pod_of(make_workload("RayCluster", template))
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "-c", "--"]
    (args,) = container["args"]
    assert args.startswith(" python  serve.py  --tensor-parallel-size  2  && ulimit -n ") and "ray start " in args
    assert " --num-gpus=2 " in args and " --block " in args and " --address=wl-head-svc.team-ml.svc" in args
    assert {e["name"]: e.get("value") for e in container["env"]}["KUBERAY_GEN_RAY_START_CMD"].startswith("ray start")
    template["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    kept = pod_of(make_workload("RayCluster", template))["spec"]["containers"][0]
    assert kept["command"] == ["python", "serve.py"] and kept["args"] == ["--tensor-parallel-size", "2"]


def test_in_tree_autoscaling_adds_kuberays_autoscaler_to_the_head() -> None:
    # pod.go DefaultHeadPodTemplate: no-monitor in rayStartParams and BuildAutoscalerContainer's sidecar
    workload = make_workload("RayCluster", gpu_template(2))
    workload["spec"]["enableInTreeAutoscaling"] = True
    head = pod_of(workload, 0)
    assert [c["name"] for c in head["spec"]["containers"]] == ["main", "autoscaler"]
    assert head["spec"]["containers"][1]["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    assert " --no-monitor " in head["spec"]["containers"][0]["args"][0]
    worker = pod_of(workload, 1)
    assert [c["name"] for c in worker["spec"]["containers"]] == ["main"]


def test_kuberay_annotations_on_its_pods() -> None:
    # pod.go initTemplateAnnotations (the RayCluster's overwrite-container-cmd is copied to its pods) and
    # configureGCSFaultTolerance (the head says whether GCS fault tolerance is on)
    workload = make_workload("RayCluster", gpu_template(1, command=["python", "app.py"]))
    head = pod_of(workload, 0)["metadata"]["annotations"]
    assert head["ray.io/ft-enabled"] == "false"
    workload["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    workload["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    assert pod_of(workload, 0)["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    worker = pod_of(workload, 1)
    assert worker["metadata"]["annotations"] == {"ray.io/overwrite-container-cmd": "true"}
    assert worker["spec"]["containers"][0]["command"] == ["python", "app.py"]  # not wrapped around ray start


def _ray(limits: dict[str, Any], params: dict[str, Any] | None, **group: Any) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "groupName": "gpu",
        "template": {
            "spec": {
                "containers": [
                    {"name": "ray-worker", "image": "rayproject/ray:2.9.0-gpu", "resources": {"limits": limits}}
                ]
            }
        },  # fmt: skip
        **group,
    }
    if params is not None:
        worker["rayStartParams"] = params
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "head", "image": "ray"}]}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": NAMESPACE},
        "spec": {"headGroupSpec": head, "workerGroupSpecs": [worker]},
    }


def _translated(obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    objects, errors = translate_documents([Document(obj, "rc.yaml", 1)], POLICIES)
    assert not errors
    return objects[0].result, [w for t in objects[0].templates for w in t.warnings]


@pytest.mark.parametrize(
    ("limits", "params", "group", "expected"),
    [
        # pod.go addWellKnownAcceleratorResources: num-gpus from the Ray container's GPU limit when not set
        (
            {"nvidia.com/gpu": 2, "cpu": "4"},
            {"dashboard-host": "0.0.0.0"},
            {},
            {"dashboard-host": "0.0.0.0", "num-gpus": "2"},
        ),  # fmt: skip
        ({"nvidia.com/gpu": "4"}, None, {}, {"num-gpus": "4"}),  # rayStartParams is optional (KubeRay >= 1.2)
        ({"nvidia.com/mig-1g.10gb": 1}, {}, {}, {"num-gpus": "1"}),  # IsGPUResourceKey's MIG form
        ({"nvidia.com/gpu": 2}, {"num-gpus": "1"}, {}, {"num-gpus": "1"}),  # the user's own count stays
        ({"nvidia.com/gpu": 2}, {}, {"resources": {"GPU": "2"}}, {}),  # the group's resources field rules
    ],
)
def test_ray_groups_keep_their_gpu_count_when_the_limit_moves_to_a_claim(
    limits: dict[str, Any], params: dict[str, Any] | None, group: dict[str, Any], expected: dict[str, Any]
) -> None:
    result, warnings = _translated(_ray(limits, params, **group))
    worker = result["spec"]["workerGroupSpecs"][0]
    assert worker.get("rayStartParams", {}) == expected
    assert "nvidia.com" not in json.dumps(worker["template"]["spec"]["containers"][0]["resources"].get("limits", {}))
    assert any("num-gpus" in w for w in warnings) == ("num-gpus" in expected and "num-gpus" not in (params or {}))
    again, _ = _translated(result)
    assert again == result  # idempotent: nothing left to move


def test_a_gpu_request_without_a_limit_still_counts_for_the_ray_autoscaler() -> None:
    # KubeRay reads limits only, but the autoscaler (python/ray/autoscaler/_private/kuberay/autoscaling_config.py
    # _get_num_gpus) reads limits, then requests: the count it planned with is kept.
    obj = _ray({}, {})
    obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": 3}
    }
    result, _ = _translated(obj)
    assert result["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "3"}


def test_a_ray_sidecars_gpu_is_not_rays() -> None:
    obj = _ray({"cpu": "1"}, {})
    template = obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    template["containers"].append({"name": "side", "image": "s", "resources": {"limits": {"nvidia.com/gpu": 1}}})
    result, warnings = _translated(obj)
    assert result["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {} and not any("num-gpus" in w for w in warnings)
