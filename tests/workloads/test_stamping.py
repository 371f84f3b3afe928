"""One decision for a workload and its pods (issue 25, item 1).

`gpudra translate` decides each pod template of a workload as the pod its controller creates
(`workloads.controller_pod`); the webhook decides that pod at admission. The property test builds every kind
gpudra rewrites around a generated spread of templates, translates it, and sends the pod the controller creates
through the in-process admission path (`webhook.admission.Admission`, as tests/webhook does): both must build the same
claim with the same policy, or both deny. The unit tests check the controller model against the controllers' source
(each test names the file its expectations come from), and Ray's `num-gpus` against KubeRay's rules.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra.documents import Document
from dra.errors import InputError
from kubeapi import NamespaceCache
from manifest_translation import translate_documents
from policyengine import PolicySet, load_policies, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import AdmissionDenied, parse_review, pod_review
from workloads import KNOWN_KINDS, controller_pod, pod_templates

NAMESPACE = "team-ml"
POLICIES: PolicySet = load_policies()


def _pod_spec(template: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(template)


def _workload(kind: str, template: dict[str, Any]) -> dict[str, Any]:
    """An object of `kind` with `template` (a pod template) at every path the kind keeps one."""
    t = lambda: _pod_spec(template)  # noqa: E731
    meta = {"name": "wl", "namespace": NAMESPACE}
    group = {
        "Pod": ("v1", {}),
        "PodTemplate": ("v1", {}),
        "ReplicationController": ("v1", {"spec": {"replicas": 1, "template": t()}}),
        "Deployment": ("apps/v1", {"spec": {"replicas": 2, "template": t()}}),
        "StatefulSet": ("apps/v1", {"spec": {"replicas": 1, "serviceName": "wl", "template": t()}}),
        "DaemonSet": ("apps/v1", {"spec": {"template": t()}}),
        "ReplicaSet": ("apps/v1", {"spec": {"replicas": 1, "template": t()}}),
        "Job": ("batch/v1", {"spec": {"completionMode": "Indexed", "completions": 2, "template": t()}}),
        "CronJob": ("batch/v1", {"spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": t()}}}}),
        "Rollout": ("argoproj.io/v1alpha1", {"spec": {"replicas": 2, "template": t()}}),
    }
    ray_cluster = {
        "headGroupSpec": {"rayStartParams": {}, "template": t()},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "rayStartParams": {}, "template": t()}],
    }
    jobset_spec = {
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {"template": t()}}},
            {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": t()}}},
        ]
    }
    runtime_spec = {
        "mlPolicy": {"numNodes": 2, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": {"template": t()},
                        },
                    }
                ]
            }
        },
    }
    others: dict[str, tuple[str, dict[str, Any]]] = {
        "RayCluster": ("ray.io/v1", {"spec": ray_cluster}),
        "RayService": ("ray.io/v1", {"spec": {"rayClusterConfig": {**ray_cluster, "enableInTreeAutoscaling": True}}}),
        "RayJob": ("ray.io/v1", {"spec": {"rayClusterSpec": ray_cluster, "submitterPodTemplate": t()}}),
        "RayCronJob": ("ray.io/v1", {"spec": {"jobTemplate": {"rayClusterSpec": ray_cluster}}}),
        "LeaderWorkerSet": (
            "leaderworkerset.x-k8s.io/v1",
            {
                "spec": {
                    "replicas": 1,
                    "leaderWorkerTemplate": {"size": 2, "leaderTemplate": t(), "workerTemplate": t()},
                }
            },
        ),
        "JobSet": ("jobset.x-k8s.io/v1alpha2", {"spec": jobset_spec}),
        "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1", {"spec": runtime_spec}),
        "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1", {"spec": runtime_spec}),
    }
    for name in ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"):
        field = {"PyTorchJob": "pytorch", "TFJob": "tf", "MPIJob": "mpi", "XGBoostJob": "xgb"}.get(name)
        field = field or name.removesuffix("Job").lower()
        roles = ("Master", "Worker") if name != "MPIJob" else ("Launcher", "Worker")
        specs = {role: {"replicas": 1 if i == 0 else 2, "template": t()} for i, role in enumerate(roles)}
        others[name] = ("kubeflow.org/v1", {"spec": {f"{field}ReplicaSpecs": specs}})
    version, body = group.get(kind) or others[kind]
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, **template.get("metadata", {})},
                "spec": copy.deepcopy(template["spec"])}  # fmt: skip
    if kind == "PodTemplate":
        return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": meta, "template": t()}
    return {"apiVersion": version, "kind": kind, "metadata": dict(meta), **body}


REWRITTEN_KINDS = [k.kind for k in KNOWN_KINDS]


def test_every_known_kind_is_built_by_the_test() -> None:
    template = {"spec": {"containers": [{"name": "a", "image": "a"}]}}
    for kind in REWRITTEN_KINDS:
        assert pod_templates(_workload(kind, template)), kind


_IMAGES = ["vllm/vllm-openai:v0.6.3", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "rayproject/ray:2.9.0-gpu"]


@st.composite
def _templates(draw: st.DrawFn) -> dict[str, Any]:
    containers = []
    for i in range(draw(st.integers(1, 2))):
        container: dict[str, Any] = {"name": f"c{i}", "image": draw(st.sampled_from(_IMAGES))}
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        if gpus:
            resource = draw(st.sampled_from(["nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]))
            count = 1 if resource.startswith("nvidia.com/mig") else gpus
            limits: dict[str, Any] = {resource: count, "cpu": "4"}
            if draw(st.booleans()):
                limits["nvidia.com/gpumem"] = 8000
            both = draw(st.booleans())  # limits only, or requests and limits as the API server defaults them
            container["resources"] = {"limits": limits, **({"requests": dict(limits)} if both else {})}
        if draw(st.booleans()):
            container["command"] = draw(st.sampled_from([["vllm", "serve"], ["python3", "-m", "sglang.launch_server"]]))
        tp = draw(st.sampled_from([None, "--tensor-parallel-size", "--num-shard"]))
        if tp is not None:
            container["args"] = ["--model", "meta-llama/Llama-3.1-8B-Instruct", tp, str(max(gpus, 1))]
        if draw(st.booleans()):
            container["env"] = [{"name": "NUM_SHARD", "value": "2"}]
        containers.append(container)
    metadata: dict[str, Any] = {}
    labels = draw(st.dictionaries(st.sampled_from(["app", "tier", "ray.io/is-ray-node"]), st.sampled_from(["a", "b"])))
    if labels:
        metadata["labels"] = labels
    annotations = draw(
        st.dictionaries(
            st.sampled_from(["gpudra.io/vram", "gpudra.io/topology", "gpudra.io/share"]),
            st.sampled_from(["20Gi", "pcie", "false"]),
            max_size=2,
        )
    )
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"containers": containers}
    if draw(st.booleans()):  # an init container, a GPU sidecar (restartPolicy Always) or a plain one
        init: dict[str, Any] = {"name": "init", "image": "busybox"}
        if draw(st.booleans()):
            init["resources"] = {"limits": {"nvidia.com/gpu": 1}}
            if draw(st.booleans()):
                init["restartPolicy"] = "Always"
        spec["initContainers"] = [init]
    return {"metadata": metadata, "spec": spec}


def _admission(namespace: dict[str, Any] | None = None) -> tuple[Admission, RecordingApiServer]:
    api = RecordingApiServer({NAMESPACE: namespace} if namespace is not None else None)
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api)), api


def _webhook_claim(
    admission: Admission, api: RecordingApiServer, pod: dict[str, Any], namespace: str = NAMESPACE
) -> tuple[str, Any]:
    """What the webhook does with the pod: ("denied", message), ("unchanged", None) or (policy, the claim spec)."""
    try:
        response = admission.mutate(parse_review(pod_review(pod, uid="u", namespace=namespace)))["response"]
    except AdmissionDenied as exc:
        return "denied", exc.message
    if "patch" not in response:
        return "unchanged", None
    mutated = jsonpatch.apply_patch(copy.deepcopy(pod), json.loads(base64.b64decode(response["patch"])))
    annotations = mutated["metadata"].get("annotations") or {}
    if "gpudra.io/translated" not in annotations:
        return "unchanged", None
    name = annotations["gpudra.io/translated"]
    return annotations["gpudra.io/policy"], api.templates[(namespace, name)]["spec"]["spec"]


_NAMESPACE_LABELS = st.dictionaries(
    st.sampled_from(["gpudra.io/topology", "gpudra.io/max-vram", "gpudra.io/max-gpus", "gpudra.io/mode"]),
    st.sampled_from(["pcie", "160Gi", "8", "audit"]),
    max_size=2,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(REWRITTEN_KINDS), template=_templates(), labels=_NAMESPACE_LABELS)
def test_translate_and_the_webhook_give_a_controllers_pod_one_claim(
    kind: str, template: dict[str, Any], labels: dict[str, str]
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}}
    workload = _workload(kind, template)
    objects, errors = translate_documents([Document(workload, "w.yaml", 1)], POLICIES, namespace)
    assert not errors
    admission, api = _admission(namespace)
    for t in objects[0].templates:
        # The pod the controller creates from the template as written (not from gpudra's rewrite).
        pod = controller_pod(workload, t.pod.template, t.pod.pod)
        webhook = _webhook_claim(admission, api, pod)
        if t.denied:
            assert webhook[0] == "denied", (t.pod.label, webhook)
        elif not t.translation.changed:
            assert webhook == ("unchanged", None), (t.pod.label, webhook)
        else:
            ours = (t.decision.policy, t.templates[0]["spec"]["spec"])
            assert ours == webhook, t.pod.label
    # Translating the result again changes nothing (Ray's num-gpus included), and the pods the controllers create
    # from the rewritten templates are left alone by the webhook.
    if any(t.denied for t in objects[0].templates):  # a denied template leaves the whole object as written
        assert objects[0].result is workload
        return
    again, errors = translate_documents([Document(objects[0].result, "w.yaml", 1)], POLICIES, namespace)
    assert not errors and again[0].result == objects[0].result and not again[0].changed
    for first, t in zip(objects[0].templates, again[0].templates, strict=True):
        if first.translation.changed:
            pod = controller_pod(objects[0].result, t.pod.template, t.pod.pod)
            assert _webhook_claim(admission, api, pod) == ("unchanged", None), t.pod.label


def _template(gpus: int, **container: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": gpus}}, **container}
            ]
        },  # fmt: skip
    }


def _pod_of(workload: dict[str, Any], index: int = -1) -> dict[str, Any]:
    objects, errors = translate_documents([Document(workload, "w.yaml", 1)], POLICIES)
    assert not errors
    return objects[0].templates[index].pod.decided


def test_a_ray_worker_is_labelled_as_kuberay_labels_it() -> None:
    # ray-operator/controllers/ray/common/pod.go labelPod: the template's own labels override all but
    # ray.io/node-type, ray.io/group and ray.io/cluster; a RayService's cluster is <name>-<5 random characters>.
    template = _template(4)
    template["metadata"]["labels"].update({"ray.io/node-type": "head", "app.kubernetes.io/name": "mine"})
    pod = _pod_of(_workload("RayService", template))
    labels = pod["metadata"]["labels"]
    assert labels["ray.io/node-type"] == "worker" and labels["ray.io/group"] == "gpu"
    assert labels["ray.io/cluster"] == "wl-xxxxx" and labels["ray.io/is-ray-node"] == "yes"
    assert labels["app.kubernetes.io/name"] == "mine" and labels["app"] == "x"
    assert labels["ray.io/serve"] == "true"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_the_multi_gpu_policy_decides_a_ray_worker_the_same_from_translate_and_the_webhook() -> None:
    workload = _workload("RayCluster", _template(4))
    objects, _ = translate_documents([Document(workload, "w.yaml", 1)], POLICIES)
    worker = objects[0].templates[1]
    assert worker.decision.policy == "multi-gpu"
    constraints = worker.templates[0]["spec"]["spec"]["devices"]["constraints"]
    assert constraints and all("matchAttribute" in c for c in constraints)


def test_leaderworkerset_pods_get_their_labels_and_env_first() -> None:
    # pkg/controllers/leaderworkerset_controller.go (leader), pod_controller.go (workers), pkg/webhooks/pod_webhook.go
    # and pkg/utils/pod/pod_utils.go AddLWSVariables: the three LWS_* variables first, unless already named.
    template = _template(2, env=[{"name": "HF_HOME", "value": "/cache"}, {"name": "LWS_GROUP_SIZE", "value": "9"}])
    workload = _workload("LeaderWorkerSet", template)
    leader, worker = _pod_of(workload, 0), _pod_of(workload, 1)
    assert leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert worker["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "1"
    assert worker["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/leader-name"] == "wl-0"
    assert leader["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] == "2"
    workload["metadata"]["annotations"] = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.k8s.io/zone"}
    annotated = _pod_of(workload, 1)["metadata"]["annotations"]
    assert annotated["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "topology.k8s.io/zone"
    env = [e["name"] for e in worker["spec"]["containers"][0]["env"]]
    assert env == ["LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "HF_HOME", "LWS_GROUP_SIZE"]


def test_jobset_pods_carry_the_jobset_keys_and_the_indexed_job_labels() -> None:
    # jobset pkg/controllers/jobset_controller.go labelAndAnnotateObject; kubernetes pkg/registry/batch/job/strategy.go
    pod = _pod_of(_workload("JobSet", _template(8)), 1)
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "wl"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "1" and labels["jobset.sigs.k8s.io/global-replicas"] == "3"
    assert annotations["jobset.sigs.k8s.io/replicatedjob-replicas"] == "2"
    assert labels["batch.kubernetes.io/job-name"] == "wl-workers-0"
    assert "jobset.sigs.k8s.io/coordinator" not in labels
    workload = _workload("JobSet", _template(8))
    workload["spec"]["coordinator"] = {"replicatedJob": "driver", "jobIndex": 0, "podIndex": 0}
    coordinated = _pod_of(workload, 1)["metadata"]
    assert coordinated["labels"]["jobset.sigs.k8s.io/coordinator"] == "wl-driver-0-0.wl"
    assert coordinated["annotations"]["jobset.sigs.k8s.io/coordinator"] == "wl-driver-0-0.wl"
    # exclusive placement: the JobSet's annotation reaches its pods as an annotation, never a label
    workload["metadata"]["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
    }
    placed = _pod_of(workload, 1)["metadata"]
    assert placed["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "cloud.google.com/gke-nodepool"
    assert "alpha.jobset.sigs.k8s.io/exclusive-topology" not in placed["labels"]
    assert annotations["batch.kubernetes.io/job-completion-index"] == "0"
    assert pod["spec"]["containers"][0]["env"][-1]["name"] == "JOB_COMPLETION_INDEX"


def test_pytorchjob_pods_carry_the_training_operator_labels_and_env() -> None:
    # training-operator v1 pkg/controller.v1/pytorch/envvar.go setPodEnv: PYTHONUNBUFFERED, MASTER_*, WORLD_SIZE, RANK
    pod = _pod_of(_workload("PyTorchJob", _template(2)), 1)
    labels = pod["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/operator-name"] == "pytorchjob-controller"
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["WORLD_SIZE"] == "3" and env["RANK"] == "1" and env["PYTHONUNBUFFERED"] == "0"


def test_a_pod_is_decided_as_written() -> None:
    pod = _workload("Pod", _template(1))
    templates = pod_templates(pod)
    assert controller_pod(pod, templates[0], pod) == pod


# -- Ray's view of GPUs ------------------------------------------------------------------------------------------------


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


def test_kuberay_wraps_the_ray_containers_command_around_ray_start() -> None:
    # common/pod.go BuildPod: a command without `ray start` runs first, then KubeRay's generated `ray start`, under
    # /bin/bash -c --; num-gpus in the generated command comes from the limit (addWellKnownAcceleratorResources).
    template = _template(2, command=["python", "serve.py"], args=["--tensor-parallel-size", "2"])
    pod = _pod_of(_workload("RayCluster", template))
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "-c", "--"]
    (args,) = container["args"]
    assert args.startswith(" python  serve.py  --tensor-parallel-size  2  && ulimit -n ") and "ray start " in args
    assert " --num-gpus=2 " in args and " --block " in args and " --address=wl-head-svc.team-ml.svc" in args
    assert {e["name"]: e.get("value") for e in container["env"]}["KUBERAY_GEN_RAY_START_CMD"].startswith("ray start")
    template["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    kept = _pod_of(_workload("RayCluster", template))["spec"]["containers"][0]
    assert kept["command"] == ["python", "serve.py"] and kept["args"] == ["--tensor-parallel-size", "2"]


def test_a_trainer_runtimes_node_container_gets_the_torch_env_and_others_do_not() -> None:
    # kubeflow/trainer pkg/runtime/framework/plugins/torch/torch.go: PET_* upserted into the `node` container of the
    # trainer's replicated Job; the Job's completion index reaches every container (JobSet's Indexed Jobs).
    template = _template(2, env=[{"name": "PET_NNODES", "value": "9"}])
    template["spec"]["containers"][0]["name"] = "node"
    template["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    pod = _pod_of(_workload("TrainingRuntime", template))
    node, sidecar = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert env["PET_NNODES"] == "2" and env["PET_MASTER_ADDR"] == "wl-node-0-0.wl" and env["PET_MASTER_PORT"] == "29500"
    assert [e["name"] for e in node["env"]].count("PET_NNODES") == 1
    assert [e["name"] for e in sidecar["env"]] == ["JOB_COMPLETION_INDEX"]
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"


_SCALARS = st.sampled_from(["", "x", "2", "1.5", "true", "nvidia.com/gpu"])
_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10) | _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "a", "cpu"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_READ_KEYS = [
    *("labels", "annotations", "rayStartParams", "resources", "env", "groupName", "size", "replicas"),
    *("replicatedJobs", "mlPolicy", "command", "args", "completionMode", "name", "metadata", "limits"),
]


def _dict_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if isinstance(value, dict) else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found += _dict_paths(item, (*path, key))
    return found


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(REWRITTEN_KINDS), data=st.data())
def test_odd_shapes_in_what_the_controller_model_reads_are_input_errors_never_crashes(kind: str, data: Any) -> None:
    workload = _workload(kind, _template(2, args=["--tensor-parallel-size", "2"]))
    for _ in range(data.draw(st.integers(1, 3))):
        target: Any = workload
        path = data.draw(st.sampled_from(_dict_paths(workload)))
        for part in path:
            target = target[part]
        target[data.draw(st.sampled_from(_READ_KEYS))] = data.draw(_JUNK)
    objects, errors = translate_documents([Document(workload, "w.yaml", 1)], POLICIES)  # raises only on a bug
    assert len(objects) == 1 and all(isinstance(e, InputError) for e in errors)


def test_an_mpi_operator_v2_job_gets_its_role_labels() -> None:
    # kubeflow/mpi-operator pkg/controller/mpi_job_controller.go defaultLabels
    workload = _workload("MPIJob", _template(1))
    workload["apiVersion"] = "kubeflow.org/v2beta1"
    labels = _pod_of(workload, 1)["metadata"]["labels"]
    assert labels["training.kubeflow.org/operator-name"] == "mpi-operator"
    assert labels["training.kubeflow.org/job-role"] == "worker" and labels["training.kubeflow.org/replica-index"] == "0"
    assert _pod_of(workload, 0)["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"


def test_init_containers_get_the_controllers_env_too() -> None:
    # LWS AddLWSVariables covers init containers; the Job controller's completion index env too; KubeRay appends
    # wait-gcs-ready to a worker (pod.go DefaultWorkerPodTemplate) and gives every init container FQ_RAY_IP/RAY_IP.
    template = _template(1)
    template["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    lws = _pod_of(_workload("LeaderWorkerSet", template), 1)["spec"]["initContainers"][0]
    assert [e["name"] for e in lws["env"]] == ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]
    job = _pod_of(_workload("Job", template))["spec"]["initContainers"][0]
    assert [e["name"] for e in job["env"]] == ["JOB_COMPLETION_INDEX"]
    ray = _pod_of(_workload("RayCluster", template))["spec"]["initContainers"]
    assert [c["name"] for c in ray] == ["fetch", "wait-gcs-ready"]
    assert ray[1]["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert all([e["name"] for e in c["env"]][-2:] == ["FQ_RAY_IP", "RAY_IP"] for c in ray)
    head = _pod_of(_workload("RayCluster", template), 0)["spec"]["initContainers"]
    assert [c["name"] for c in head] == ["fetch"] and head[0]["env"][0] == {"name": "FQ_RAY_IP", "value": ""}


def test_in_tree_autoscaling_adds_kuberays_autoscaler_to_the_head() -> None:
    # pod.go DefaultHeadPodTemplate: no-monitor in rayStartParams and BuildAutoscalerContainer's sidecar
    workload = _workload("RayCluster", _template(2))
    workload["spec"]["enableInTreeAutoscaling"] = True
    head = _pod_of(workload, 0)
    assert [c["name"] for c in head["spec"]["containers"]] == ["main", "autoscaler"]
    assert head["spec"]["containers"][1]["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    assert " --no-monitor " in head["spec"]["containers"][0]["args"][0]
    worker = _pod_of(workload, 1)
    assert [c["name"] for c in worker["spec"]["containers"]] == ["main"]


def test_kuberay_annotations_on_its_pods() -> None:
    # pod.go initTemplateAnnotations (the RayCluster's overwrite-container-cmd is copied to its pods) and
    # configureGCSFaultTolerance (the head says whether GCS fault tolerance is on)
    workload = _workload("RayCluster", _template(1, command=["python", "app.py"]))
    head = _pod_of(workload, 0)["metadata"]["annotations"]
    assert head["ray.io/ft-enabled"] == "false"
    workload["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    workload["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    assert _pod_of(workload, 0)["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    worker = _pod_of(workload, 1)
    assert worker["metadata"]["annotations"] == {"ray.io/overwrite-container-cmd": "true"}
    assert worker["spec"]["containers"][0]["command"] == ["python", "app.py"]  # not wrapped around ray start
