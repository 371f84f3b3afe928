"""Issue 40 point 1: an init container's devices are reused by the containers after it, so the claim asks for what the
device plugin allocates (the kubelet's device manager, pkg/kubelet/cm/devicemanager `reusableDevices`): the most any
phase of the pod holds, not the sum. An init container that asks for more than the requests it shares references them
and an extra request of the difference, built like the first shared one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.allocator import Allocator, FeatureSet
from dra.gpus import MigMode, device_classes, get, node_resource_slices, synthetic_node
from gpudra.commands.policy import explain
from policyengine import Decision, load_policies, shipped_policies_dir
from policyengine.facts import pod_facts
from policyengine.init_reuse import with_extra_requests
from policyengine.translate import translate

POLICIES = load_policies(shipped_policies_dir())
GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"


def _container(name: str, resource: str, count: int, sidecar: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "img", "resources": {"limits": {resource: count}}}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def _pod(inits: list[dict[str, Any]], containers: list[dict[str, Any]], **annotations: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"containers": containers}
    if inits:
        spec["initContainers"] = inits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _decide(pod: dict[str, Any]) -> Decision:
    decision = POLICIES.evaluate(pod, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    assert decision.allowed and decision.claim is not None, decision.message
    return decision


def _allocate(
    claim: Any, model: str = "H100-SXM5-80GB", gpus: int = 8, mig: MigMode = "dynamic"
) -> dict[str, list[str]]:
    """Request name -> the devices the claim gets on a synthetic node (every allocation result, by request)."""
    node = synthetic_node(get(model), "n", gpus)
    allocator = Allocator(
        slices=node_resource_slices(node, mig_mode=mig), classes=device_classes(), features=FeatureSet.latest()
    )
    resource_claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default", "uid": "uid-c"},
        "spec": copy.deepcopy(dict(claim)),
    }
    (result,) = allocator.allocate([resource_claim], node={"metadata": {"name": node.node_name}}, mode="upstream")
    out: dict[str, list[str]] = {}
    for entry in result["devices"]["results"]:
        out.setdefault(entry["request"].split("/")[0], []).append(entry["device"])
    return out


def _refs(pod: dict[str, Any], decision: Decision) -> dict[str, list[str]]:
    """Container -> the claim requests its translated `resources.claims` names."""
    translated = translate(pod, decision).pod["spec"]
    return {
        c["name"]: [r["request"] for r in (c.get("resources") or {}).get("claims") or []]
        for kind in ("initContainers", "containers")
        for c in translated.get(kind) or []
    }


def _devices(allocated: dict[str, list[str]], refs: list[str]) -> set[str]:
    return {d for r in refs for d in allocated[r]}


def test_init_two_gpus_and_main_one_ask_for_two_devices_as_the_device_plugin_allocates() -> None:
    pod = _pod([_container("init", GPU, 2)], [_container("main", GPU, 1)])
    decision = _decide(pod)
    assert pod_facts(pod).total == 2
    refs = _refs(pod, decision)
    assert refs == {"init": ["main", "init"], "main": ["main"]}
    allocated = _allocate(decision.claim, gpus=2, mig="none")  # 2 GPUs suffice, as under the device plugin
    assert sum(len(v) for v in allocated.values()) == 2
    assert len(_devices(allocated, refs["init"])) == 2 and len(_devices(allocated, refs["main"])) == 1


def test_init_one_mig_sidecar_and_main_two_keep_three_devices_with_the_slice() -> None:
    pod = _pod(
        [_container("init", GPU, 1), _container("embed", MIG, 1, sidecar=True)],
        [_container("main", GPU, 2)],
    )
    decision = _decide(pod)
    refs = _refs(pod, decision)
    assert refs == {"init": ["main"], "embed": ["embed"], "main": ["main"]}
    allocated = _allocate(decision.claim, gpus=3)
    assert sorted(len(v) for v in allocated.values()) == [1, 2]
    assert "mig-1g" in allocated["embed"][0] and not any("mig" in d for d in allocated["main"])


def test_init_three_and_two_mains_of_one_share_both_and_add_one() -> None:
    pod = _pod([_container("init", GPU, 3)], [_container("main", GPU, 1), _container("main2", GPU, 1)])
    decision = _decide(pod)
    assert pod_facts(pod).total == 3
    refs = _refs(pod, decision)
    assert refs == {"init": ["main", "main2", "init"], "main": ["main"], "main2": ["main2"]}
    allocated = _allocate(decision.claim, gpus=4, mig="none")
    assert sum(len(v) for v in allocated.values()) == 3
    assert len(_devices(allocated, refs["init"])) == 3


def test_an_init_with_a_mig_resource_does_not_reuse_a_whole_gpu() -> None:
    """The device plugin counts each resource apart: a MIG slice for the init container and a whole GPU for main."""
    pod = _pod([_container("init", MIG, 1)], [_container("main", GPU, 1)])
    decision = _decide(pod)
    refs = _refs(pod, decision)
    assert refs == {"init": ["init"], "main": ["main"]}
    allocated = _allocate(decision.claim, gpus=2)
    assert "mig-1g" in allocated["init"][0] and "mig" not in allocated["main"][0]


def test_an_extra_request_copies_the_mig_sized_alternatives_of_the_request_it_extends() -> None:
    """Main sized to a MIG slice (gpudra.io/vram): the init container's extra device is sized the same way (the
    same firstAvailable alternatives, MIG profile first), never another kind."""
    pod = _pod([_container("init", GPU, 2)], [_container("main", GPU, 1)], **{"gpudra.io/vram": "8Gi"})
    decision = _decide(pod)
    assert decision.claim is not None
    requests = {r["name"]: r for r in decision.claim["devices"]["requests"]}
    assert requests["main"]["firstAvailable"][0]["deviceClassName"] == "mig.nvidia.com"
    assert requests["init"] == {"name": "init", "firstAvailable": requests["main"]["firstAvailable"]}
    allocated = _allocate(decision.claim, gpus=1)
    assert all("mig-" in d for d in allocated["main"] + allocated["init"])


def test_later_init_containers_share_an_earlier_ones_extra_request() -> None:
    """Init 3, init 3, main 1: the init containers run one after another, so the pod needs 3 devices, not 5."""
    pod = _pod([_container("a", GPU, 3), _container("b", GPU, 3)], [_container("main", GPU, 1)])
    decision = _decide(pod)
    assert pod_facts(pod).total == 3
    assert _refs(pod, decision) == {"a": ["main", "a"], "b": ["main", "a"], "main": ["main"]}


def test_a_sidecar_started_before_an_init_container_keeps_its_devices() -> None:
    """Sidecar 1, init 2, main 1: the init container runs beside the sidecar, so the pod needs 1 + 2 devices."""
    pod = _pod([_container("side", GPU, 1, sidecar=True), _container("init", GPU, 2)], [_container("main", GPU, 1)])
    decision = _decide(pod)
    refs = _refs(pod, decision)
    assert refs == {"side": ["side"], "init": ["main", "init"], "main": ["main"]}
    allocated = _allocate(decision.claim, gpus=3, mig="none")
    assert sum(len(v) for v in allocated.values()) == 3
    assert not _devices(allocated, refs["side"]) & _devices(allocated, refs["init"])


@pytest.mark.parametrize("inits", [[("init", 2)], [("init", 3)], [("a", 3), ("b", 2)]])
def test_translating_again_changes_nothing(inits: list[tuple[str, int]]) -> None:
    pod = _pod([_container(n, GPU, c) for n, c in inits], [_container("main", GPU, 1), _container("m2", GPU, 1)])
    once = translate(pod, _decide(pod))
    assert once.changed
    again = POLICIES.evaluate(once.pod)
    assert not translate(once.pod, again).changed


def test_the_extra_request_joins_the_constraints_and_config_of_the_request_it_copies() -> None:
    requests: list[dict[str, Any]] = [
        {"name": "main", "firstAvailable": [{"name": "nvl", "deviceClassName": "gpu", "count": 2}]},
        {"name": "other", "exactly": {"deviceClassName": "gpu", "count": 1}},
    ]
    constraints: list[dict[str, Any]] = [
        {"requests": ["main/nvl"], "matchAttribute": "x/nvlink"},
        {"requests": ["other"], "matchAttribute": "x/pcie"},
    ]
    config = [{"requests": ["main/nvl"], "opaque": {"driver": "d", "parameters": {}}}]
    out_requests, out_constraints, out_config = with_extra_requests(
        requests, constraints, config, [("main", "init", 3), ("other", "init2", 1)]
    )
    assert out_requests[2:] == [
        {"name": "init", "firstAvailable": [{"name": "nvl", "deviceClassName": "gpu", "count": 3}]},
        {"name": "init2", "exactly": {"deviceClassName": "gpu", "count": 1}},
    ]
    assert [c["requests"] for c in out_constraints] == [["main/nvl", "init/nvl"], ["other", "init2"]]
    assert out_config[0]["requests"] == ["main/nvl", "init/nvl"]
    # the given objects are left as they were (they may be the claim memo's)
    assert requests[0]["firstAvailable"][0]["count"] == 2 and constraints[0]["requests"] == ["main/nvl"]


def test_a_request_of_all_matching_devices_gets_no_extra() -> None:
    requests = [{"name": "main", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]
    assert with_extra_requests(requests, [], [], [("main", "init", 1)]) == (requests, [], [])


def test_explain_says_what_an_init_container_shares_and_adds(tmp_path: Path) -> None:
    pod = _pod([_container("init", GPU, 3)], [_container("main", GPU, 1), _container("main2", GPU, 1)])
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    out = explain(path)
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    init = next(i for i, line in enumerate(lines) if line.startswith("container init "))
    assert "shares request main, main2 and an extra request of its own" in lines[init + 1]
