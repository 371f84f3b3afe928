"""`workloads.kinds.lws`: the leader and worker templates, the LWS controller's stamp and the owner label.

Expectations from kubernetes-sigs/lws pkg/controllers, pkg/webhooks/pod_webhook.go and pkg/utils/pod/pod_utils.go.
"""

from __future__ import annotations

from recommender import SUPPORTED_KINDS
from tests.workloads.builders import gpu_template, make_workload, pod_of
from workloads import pod_owner
from workloads.kinds import lws

EXAMPLES = {
    "LeaderWorkerSet": (
        "leaderworkerset.x-k8s.io/v1",
        lambda t: {
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "leaderTemplate": t(), "workerTemplate": t()}}
        },
    ),
}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in lws.KINDS if k.paths} == set(EXAMPLES)


def test_leaderworkerset_pods_get_their_labels_and_env_first() -> None:
    # pkg/controllers/leaderworkerset_controller.go (leader), pod_controller.go (workers), pkg/webhooks/pod_webhook.go
    # and pkg/utils/pod/pod_utils.go AddLWSVariables: the three LWS_* variables first, unless already named.
    template = gpu_template(2, env=[{"name": "HF_HOME", "value": "/cache"}, {"name": "LWS_GROUP_SIZE", "value": "9"}])
    workload = make_workload("LeaderWorkerSet", template)
    leader, worker = pod_of(workload, 0), pod_of(workload, 1)
    assert leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert worker["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "1"
    assert worker["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/leader-name"] == "wl-0"
    assert leader["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] == "2"
    workload["metadata"]["annotations"] = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.k8s.io/zone"}
    annotated = pod_of(workload, 1)["metadata"]["annotations"]
    assert annotated["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "topology.k8s.io/zone"
    env = [e["name"] for e in worker["spec"]["containers"][0]["env"]]
    assert env == ["LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "HF_HOME", "LWS_GROUP_SIZE"]


def test_init_containers_get_the_lws_env_too() -> None:
    # AddLWSVariables covers init containers
    template = gpu_template(1)
    template["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    init = pod_of(make_workload("LeaderWorkerSet", template), 1)["spec"]["initContainers"][0]
    assert [e["name"] for e in init["env"]] == ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]


def test_a_worker_pod_names_its_leader_worker_set_not_the_stateful_set_it_belongs_to() -> None:
    worker = pod_of(make_workload("LeaderWorkerSet", gpu_template(1)), 1)
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert pod_owner(worker) == ("LeaderWorkerSet", "wl")
    assert SUPPORTED_KINDS["LeaderWorkerSet"] == ("leaderworkerset.x-k8s.io/v1", "leaderworkersets")
