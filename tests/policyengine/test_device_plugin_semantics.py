"""Issue 40 points 1-4 and 7: the device plugin's semantics kept, on manifests in the shapes the projects publish.

The manifests are in tests/policyengine/device_plugin/, each citing the upstream example it follows: an init
container + native MIG sidecar + TP=2 vLLM pod, a torchrun Job, an MPIJob v2beta1, a time-slicing Deployment, the GPU
Operator's device plugin ConfigMap, a KAI Scheduler pod, a Volcano Job and its pod, a KServe InferenceService and its
predictor pod, and requests > limits.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.allocator import Allocator, FeatureSet
from dra.documents import read_documents
from dra.gpus import device_classes, get, node_resource_slices, synthetic_node
from gpudra.commands.migrate import MigrateOptions, migrate
from gpudra.commands.policy import explain
from manifest_translation import translate_documents
from policyengine import PolicySet, load_policies, load_policy_text, shipped_policies_dir
from policyengine.denial import AdmissionDenied
from policyengine.device_plugin import migration, read_configs
from policyengine.pod_shape import check_pod_shape
from policyengine.translate import translate

HERE = Path(__file__).resolve().parent / "device_plugin"
POLICIES = load_policies(shipped_policies_dir())


def _docs(name: str) -> list[dict[str, Any]]:
    return [d.data for d in read_documents(HERE / name)]


def _pod(name: str, kind: str = "Pod") -> dict[str, Any]:
    return next(d for d in _docs(name) if d["kind"] == kind)


def _requests(claim: Any) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in claim["devices"]["requests"]}


def _allocate(claim: Any, slices: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    resource_claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "llm", "uid": "uid-c"},
        "spec": copy.deepcopy(dict(claim)),
    }
    allocator = Allocator(slices=slices, classes=device_classes(), allocated=[], features=FeatureSet.latest())
    (result,) = allocator.allocate(
        [resource_claim], node={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}
    )
    return list(result["devices"]["results"])


# -- point 1: init containers reuse the request of the container they precede; requests != limits refused --


def test_the_init_container_shares_the_main_containers_request_and_the_sidecar_has_its_own() -> None:
    decision = POLICIES.evaluate(_pod("vllm-init-sidecar-tp2.yaml"))
    assert decision.allowed, decision.message
    assert list(_requests(decision.claim)) == ["embed", "vllm"]  # no request of warm-cache's own
    refs = {c.container: c.request for c in decision.containers}
    assert refs == {"warm-cache": "vllm", "embed": "embed", "vllm": "vllm"}
    translation = translate(_pod("vllm-init-sidecar-tp2.yaml"), decision)
    init = translation.pod["spec"]["initContainers"]
    assert init[0]["resources"] == {"claims": [{"name": "gpudra", "request": "vllm"}]}
    assert init[1]["resources"] == {"claims": [{"name": "gpudra", "request": "embed"}]}


def test_the_init_sidecar_tp2_pod_allocates_two_gpus_and_a_slice_on_three_h100s_with_dynamic_mig() -> None:
    decision = POLICIES.evaluate(_pod("vllm-init-sidecar-tp2.yaml"))
    node = synthetic_node(get("H100-SXM5-80GB"), "h100", 3)
    results = _allocate(decision.claim, node_resource_slices(node, mig_mode="dynamic"), node.node_name)
    by_request: dict[str, list[str]] = {r["request"].split("/")[0]: [] for r in results}
    for r in results:
        by_request[r["request"].split("/")[0]].append(r["device"])
    assert len(by_request["vllm"]) == 2 and all("mig" not in d for d in by_request["vllm"])
    assert len(by_request["embed"]) == 1 and "mig-1g" in by_request["embed"][0]
    # The slice is carved from the third GPU: the two whole GPUs and the slice never share a GPU.
    assert by_request["embed"][0].split("-mig-")[0] not in by_request["vllm"]


def test_an_init_container_asking_more_than_what_follows_shares_its_request_and_adds_the_difference() -> None:
    """Init 4 + sidecar slice + main 2: the kubelet gives the pod 4 GPUs and the slice; the init container references
    vllm's request and an extra request of 2 built like it (the same alternatives, under the same constraints)."""
    pod = _pod("vllm-init-sidecar-tp2.yaml")
    pod["spec"]["initContainers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4
    decision = POLICIES.evaluate(pod)
    assert decision.allowed and decision.claim is not None, decision.message
    assert {c.container: c.requests for c in decision.containers}["warm-cache"] == ("vllm", "warm-cache")
    requests = _requests(decision.claim)
    extra, vllm = requests["warm-cache"]["firstAvailable"], requests["vllm"]["firstAvailable"]
    assert [s["name"] for s in extra] == [s["name"] for s in vllm]
    assert extra == [{**s, "count": 2} for s in vllm]
    for constraint in decision.claim["devices"]["constraints"]:
        (sub,) = {r.split("/")[1] for r in constraint["requests"]}
        assert constraint["requests"] == [f"vllm/{sub}", f"warm-cache/{sub}"]


def test_the_claim_limit_counts_what_the_claim_asks_not_the_reused_init_devices_twice() -> None:
    """Init 20 + main 20 GPUs is one request of 20 (the kubelet would give the pod 20), so neither the shape check nor
    the facts refuse it as 40 over a claim's 32; an init container asking 33 still is refused."""
    pod = _pod("vllm-init-sidecar-tp2.yaml")
    del pod["spec"]["initContainers"][1]
    pod["spec"]["initContainers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 20
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 20
    check_pod_shape(pod)
    decision = POLICIES.evaluate(pod)
    assert decision.allowed and decision.claim is not None, decision.message
    assert [r["firstAvailable"][0]["count"] for r in decision.claim["devices"]["requests"]] == [20]
    pod["spec"]["initContainers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 33
    with pytest.raises(AdmissionDenied):
        check_pod_shape(pod)


def test_requests_other_than_limits_are_refused_naming_the_container() -> None:
    decision = POLICIES.evaluate(_pod("requests-over-limits.yaml"))
    assert not decision.allowed and decision.reason == "Invalid" and decision.claim is None
    assert "container 'cuda'" in decision.message
    assert "must be equal to nvidia.com/gpu limit of 1" in decision.message


# -- point 2: decisions per container --


def test_a_mig_sidecar_does_not_change_the_tensor_parallel_containers_decision() -> None:
    pod = _pod("vllm-init-sidecar-tp2.yaml")
    alone = copy.deepcopy(pod)
    del alone["spec"]["initContainers"]
    with_sidecar, without = POLICIES.evaluate(pod), POLICIES.evaluate(alone)
    assert without.policy == "multi-gpu"
    assert _requests(with_sidecar.claim)["vllm"] == _requests(without.claim)["vllm"]
    assert {c.container: c.policy for c in with_sidecar.containers} == {
        "warm-cache": "multi-gpu",
        "embed": "whole-gpu",
        "vllm": "multi-gpu",
    }
    assert with_sidecar.claim is not None
    constraints = with_sidecar.claim["devices"]["constraints"]
    assert {c["requests"][0].split("/")[0] for c in constraints} == {"vllm"}


def test_explain_shows_each_containers_policy_and_the_size_that_reached_its_claim() -> None:
    out = explain(HERE / "vllm-init-sidecar-tp2.yaml")
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    vllm = lines.index(next(line for line in lines if line.startswith("container vllm ")))
    assert "by multi-gpu" in lines[vllm]
    assert lines[vllm + 1].startswith("  size in its claim: same-partition2: memory >= ")
    assert "sizing model: model estimate wins" in lines[vllm + 1]
    embed = next(i for i, line in enumerate(lines) if line.startswith("container embed "))
    assert "by whole-gpu" in lines[embed] and "MIG 1g.10gb" in lines[embed + 1]
    warm = next(i for i, line in enumerate(lines) if line.startswith("container warm-cache "))
    assert "shares request vllm" in lines[warm + 1]


# -- point 3: every multi-GPU container gets the topology preference --


def _translated(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(the objects written back, the claims of their ResourceClaimTemplates, the warnings) as translate gives them."""
    results, errors = translate_documents(read_documents(HERE / name), POLICIES)
    assert errors == []
    claims = [t["spec"]["spec"] for r in results for t in r.claim_templates]
    return [r.result for r in results], claims, [w for r in results for t in r.templates for w in t.warnings]


def _template_claims(name: str) -> list[dict[str, Any]]:
    return _translated(name)[1]


def _topology(claim: dict[str, Any]) -> list[str]:
    return [c["matchAttribute"] for c in claim["devices"].get("constraints", [])]


def test_a_torchrun_job_with_four_processes_per_node_gets_the_topology_preference() -> None:
    (claim,) = _template_claims("torchrun-job.yaml")
    (request,) = claim["devices"]["requests"]
    names = [sub["name"] for sub in request["firstAvailable"]]
    assert names == ["same-partition4", "same-nvlinkgroup", "same-pcieroot", "any"]
    assert _topology(claim) == [
        "gpu.nvidia.com/partition4",
        "gpu.gpudra.io/nvlinkGroup",
        "resource.kubernetes.io/pcieRoot",
    ]


def test_mpijob_workers_asking_four_gpus_get_the_topology_preference_and_the_launcher_none() -> None:
    (claim,) = _template_claims("mpijob-v2beta1.yaml")
    assert "resource.kubernetes.io/pcieRoot" in _topology(claim)
    node = synthetic_node(get("L40S"), "l40s", 8)  # PCIe only: four GPUs under one root
    slices = node_resource_slices(node, mig_mode="none")
    results = _allocate(claim, slices, node.node_name)
    assert {r["request"] for r in results} == {"tensorflow-benchmarks/same-pcieroot"} and len(results) == 4


def test_a_kserve_predictor_pod_with_tensor_parallelism_gets_the_topology_preference() -> None:
    decision = POLICIES.evaluate(_pod("kserve-isvc.yaml"))
    assert decision.policy == "multi-gpu" and _topology(dict(decision.claim or {}))


# -- point 4: the device plugin's vocabulary --


def test_a_time_slicing_deployment_becomes_a_share_or_a_whole_gpu_with_a_warning() -> None:
    objects, claims, warnings = _translated("time-slicing-deployment.yaml")
    (deployment,) = objects
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "limits" not in container["resources"]  # no nvidia.com/gpu.shared beside the claim
    (claim,) = claims
    (request,) = claim["devices"]["requests"]
    assert [s["name"] for s in request["firstAvailable"]] == ["shared", "whole"]
    assert request["firstAvailable"][0]["selectors"] == [{"cel": {"expression": "device.allowMultipleAllocations"}}]
    assert any("nvidia.com/gpu.shared: 1 is a device plugin TimeSlicing replica" in w for w in warnings)


def test_the_shared_alternative_allocates_where_the_driver_publishes_shares() -> None:
    from dra.gpus import DriverGates

    decision = POLICIES.evaluate(_pod("time-slicing-deployment.yaml", "Deployment")["spec"]["template"] | {
        "apiVersion": "v1", "kind": "Pod"
    })  # fmt: skip
    node = synthetic_node(get("L40S"), "l40s", 1)
    gates = DriverGates(frozenset({"ConsumableShares"}))
    shared = node_resource_slices(node, mig_mode="none", driver_release="0.5", driver_gates=gates)
    assert [r["request"] for r in _allocate(decision.claim, shared, node.node_name)] == [
        "cuda-sample-vector-add/shared"
    ]
    plain = node_resource_slices(node, mig_mode="none")
    assert [r["request"] for r in _allocate(decision.claim, plain, node.node_name)] == ["cuda-sample-vector-add/whole"]


def _with_params(**params: Any) -> PolicySet:
    text = (shipped_policies_dir() / "shared-gpu.yaml").read_text()
    policy, errors = load_policy_text(text, "shared-gpu.yaml")
    assert errors == []
    doc = yaml.safe_load(text)
    doc["spec"]["params"].update(params)
    patched, errors = load_policy_text(yaml.safe_dump(doc), "shared-gpu.yaml")
    assert errors == [] and policy
    return PolicySet.of([*patched, *(p for p in POLICIES.policies if p.name != "shared-gpu")])


def test_replicas_pinned_to_a_time_sliced_node_config_become_shares_not_whole_gpus() -> None:
    migrated = migration(read_configs(_docs("gpu-operator-device-plugin-config.yaml")))
    policies = _with_params(**migrated.params)
    pod = _pod("kai-pod.yaml")
    del pod["spec"]["schedulerName"]
    pod["spec"]["nodeSelector"] = {"nvidia.com/device-plugin.config": "a100-40gb"}
    decision = policies.evaluate(pod)
    assert decision.policy == "shared-gpu"
    assert [s["name"] for s in _requests(decision.claim)["main"]["firstAvailable"]] == ["shared", "whole"]
    unpinned = policies.evaluate(_pod("kai-pod.yaml") | {"spec": {"containers": pod["spec"]["containers"]}})
    assert unpinned.policy == "whole-gpu"


def test_migrate_reads_the_gpu_operator_configmap_into_classes_params_and_warnings() -> None:
    found = migration(read_configs(_docs("gpu-operator-device-plugin-config.yaml")))
    assert found.params == {
        "sharedResources": {"nvidia.com/gpu.shared": "MPS or TimeSlicing"},
        "sharedNodeConfigs": {"a100-40gb": "TimeSlicing"},
    }
    (device_class,) = found.device_classes
    assert device_class["metadata"]["name"] == "gpu-shared.gpudra.io"
    assert device_class["spec"]["extendedResourceName"] == "nvidia.com/gpu.shared"
    assert "device.allowMultipleAllocations" in device_class["spec"]["selectors"][0]["cel"]["expression"]
    text = "\n".join(found.warnings)
    assert "nvidia.com/mig-1g.5gb is replicated 2x without renaming" in text
    assert "nvidia.com/gpu.shared is an MPS replica (10 per device)" in text


def test_migrate_command_prints_one_yaml_stream_and_refuses_what_is_no_config(tmp_path: Path) -> None:
    out = migrate(MigrateOptions(HERE / "gpu-operator-device-plugin-config.yaml"))
    assert out.code == 0
    assert [d["kind"] for d in yaml.safe_load_all(out.stdout)] == ["DeviceClass", "GPUClaimPolicy"]
    assert out.stderr.count("warning: ") == 4 and "on by default from Kubernetes 1.36" in out.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: v2\nsharing: {}\n")
    refused = migrate(MigrateOptions(bad))
    assert refused.code == 2 and "config version v1" in refused.stderr


# -- point 7: schedulers that do not place these claims --


@pytest.mark.parametrize(("name", "scheduler"), [("kai-pod.yaml", "kai-scheduler"), ("volcano-job.yaml", "volcano")])
def test_pods_for_other_schedulers_are_left_untouched_with_a_warning(name: str, scheduler: str) -> None:
    pod = _pod(name)
    decision = POLICIES.evaluate(pod)
    assert decision.allowed and decision.claim is None and not translate(pod, decision).changed
    assert any(f"spec.schedulerName '{scheduler}' is not one of the schedulers" in w for w in decision.warnings)


def test_the_same_pod_for_the_default_scheduler_is_translated() -> None:
    pod = _pod("kai-pod.yaml")
    pod["spec"]["schedulerName"] = "default-scheduler"
    decision = POLICIES.evaluate(pod)
    assert decision.policy == "whole-gpu" and not any("schedulerName" in w for w in decision.warnings)
