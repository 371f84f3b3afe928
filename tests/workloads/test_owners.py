"""`workloads.pod_owner` and `owner_of_pod_name`: a pod's workload from its own metadata or its name, no API server."""

from __future__ import annotations

from workloads import KINDS, owner_of_pod_name, pod_owner


def _pod(refs: list[dict[str, object]], labels: dict[str, str] | None = None) -> dict[str, object]:
    return {"metadata": {"ownerReferences": refs, "labels": labels or {}}}


def test_owner_heuristics() -> None:
    rs = {"kind": "ReplicaSet", "name": "embed-7d9f8c6b5", "controller": True}
    assert pod_owner(_pod([rs], {"pod-template-hash": "7d9f8c6b5"})) == ("Deployment", "embed")
    assert pod_owner(_pod([rs], {"pod-template-hash": "other"})) == ("ReplicaSet", "embed-7d9f8c6b5")
    assert pod_owner(_pod([{"kind": "StatefulSet", "name": "db", "controller": True}])) == ("StatefulSet", "db")
    assert pod_owner(_pod([{"kind": "DaemonSet", "name": "ds"}])) == ("DaemonSet", "ds")
    assert pod_owner(_pod([{"kind": "Job", "name": "nightly-28934400", "controller": True}])) == ("CronJob", "nightly")
    assert pod_owner(_pod([{"kind": "Job", "name": "train", "controller": True}])) == ("Job", "train")
    labels = {"batch.kubernetes.io/job-name": "train", "batch.kubernetes.io/controller-uid": "u"}
    assert pod_owner(_pod([], labels)) == ("Job", "train")
    lws = {"leaderworkerset.sigs.k8s.io/name": "llm"}
    assert pod_owner(_pod([{"kind": "StatefulSet", "name": "llm-0"}], lws)) == ("LeaderWorkerSet", "llm")
    assert pod_owner(_pod([{"kind": "RayCluster", "name": "rc"}], {"ray.io/cluster": "rc"})) == ("RayCluster", "rc")
    assert pod_owner({"metadata": {"name": "bare"}}) is None


def test_the_controlling_reference_wins_and_odd_references_are_skipped() -> None:
    refs: list[dict[str, object]] = [
        {"kind": "ConfigMap", "name": "first"},
        {"kind": 3, "name": "bad"},
        {"kind": "StatefulSet", "name": "db", "controller": True},
    ]
    assert pod_owner(_pod(refs)) == ("StatefulSet", "db")
    assert pod_owner(_pod(refs[:2])) == ("ConfigMap", "first")  # none says controller: the first well-formed one
    assert pod_owner({"metadata": {"ownerReferences": "x", "labels": []}}) is None
    assert pod_owner({"metadata": None}) is None
    # the Job controller's labels name a Job only with its uid beside the name (legacy unprefixed forms too)
    assert pod_owner(_pod([], {"job-name": "j"})) is None
    assert pod_owner(_pod([], {"job-name": "nightly-29000000", "controller-uid": "u"})) == ("CronJob", "nightly")


def test_a_pod_name_stands_for_its_controllers_workload() -> None:
    assert owner_of_pod_name("embed-7c9d8f6b5-x2k9q") == ("Deployment", "embed")
    assert owner_of_pod_name("db-12") == ("StatefulSet", "db")
    assert owner_of_pod_name("train-x2k9q") == ("Job", "train")
    assert owner_of_pod_name("notebook") == ("Pod", "notebook")
    named = [k.kind for k in KINDS if k.pod_name is not None]
    assert named == ["Deployment", "StatefulSet", "Job"]  # tried in this order: the most specific pattern first
