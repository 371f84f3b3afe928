"""Owner resolution keys a pod by what the webhook can look up at admission (`workloads.pod_owner`)."""

from __future__ import annotations

from typing import Any

from recommender import OwnerResolver
from workloads import pod_owner


def _ref(kind: str, name: str, api: str) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}


class _Objects:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.by_key = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.by_key.get((kind, namespace, name))

    def list_pods(self, namespace: str) -> list[dict[str, Any]]:
        return [o for (k, ns, _), o in self.by_key.items() if k == "Pod" and ns == namespace]


def _obj(kind: str, name: str, *, owner: dict[str, Any] | None = None, labels: dict[str, str] | None = None,
         api: str = "v1") -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def test_a_ray_pod_is_keyed_by_its_raycluster_as_the_webhook_looks_it_up() -> None:
    service = _obj("RayService", "llm", api="ray.io/v1")
    cluster = _obj("RayCluster", "llm-raycluster-x7k2p", owner=_ref("RayService", "llm", "ray.io/v1"), api="ray.io/v1")
    pod = _obj(
        "Pod",
        "llm-raycluster-x7k2p-gpu-worker-abcde",
        owner=_ref("RayCluster", "llm-raycluster-x7k2p", "ray.io/v1"),
        labels={"ray.io/cluster": "llm-raycluster-x7k2p", "ray.io/node-type": "worker"},
    )
    owner = OwnerResolver(_Objects(service, cluster, pod)).owner_of("ml", pod["metadata"]["name"])
    assert not isinstance(owner, str)
    assert (owner.kind, owner.name) == ("RayCluster", "llm-raycluster-x7k2p")
    assert pod_owner(pod) == (owner.kind, owner.name)


def test_a_deployment_pod_is_keyed_by_the_deployment_on_both_sides() -> None:
    deploy = _obj("Deployment", "embed", api="apps/v1")
    rs = _obj("ReplicaSet", "embed-6d9f7", owner=_ref("Deployment", "embed", "apps/v1"), api="apps/v1")
    pod = _obj(
        "Pod", "embed-6d9f7-abcde", owner=_ref("ReplicaSet", "embed-6d9f7", "apps/v1"),
        labels={"pod-template-hash": "6d9f7"},
    )  # fmt: skip
    owner = OwnerResolver(_Objects(deploy, rs, pod)).owner_of("ml", "embed-6d9f7-abcde")
    assert not isinstance(owner, str)
    assert (owner.kind, owner.name) == ("Deployment", "embed") == pod_owner(pod)
