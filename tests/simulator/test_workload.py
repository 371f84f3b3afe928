"""The simulator's pod: the Pod a trace row stands for (`SimPod.as_pod`)."""

from __future__ import annotations

from simulator.workload import SimPod, legacy_pod


def test_as_pod_is_the_traces_own_pod_when_it_has_one() -> None:
    spec = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "real"}, "spec": {"containers": []}}
    pod = SimPod("real", 1000, 1024, 1, 1000, 4096, pod=spec)
    assert pod.as_pod() is spec


def test_as_pod_of_a_trace_row_is_the_legacy_request() -> None:
    pod = SimPod("emb-1", 2000, 8192, 1, 250, 3072, workload_class="embedding")
    made = pod.as_pod()
    assert made == legacy_pod("emb-1", 2000, 8192, 1, "embedding", vram_mib=3072)
    (container,) = made["spec"]["containers"]
    assert container["resources"] == {
        "requests": {"cpu": "2000m", "memory": "8192Mi"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    assert made["metadata"]["annotations"] == {"gpudra.io/vram": "3072Mi"}


def test_as_pod_of_whole_gpus_says_no_vram() -> None:
    pod = SimPod("train-1", 12000, 98304, 8, 1000, 40000, workload_class="training")
    made = pod.as_pod()
    assert "annotations" not in made["metadata"]
    assert made["metadata"]["labels"] == {"gpudra.io/workload-class": "training", "ray.io/node-type": "worker"}
    assert made["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
