"""Self-tests of the Go oracles: known answers of the upstream allocator and CEL environments."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.controlplane import nvidia

pytestmark = [pytest.mark.oracle]

Allocate = Callable[[dict[str, Any]], dict[str, Any]]
Cel = Callable[[Any], list[dict[str, Any]]]

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"}},
}


def _claim(name: str, device_class: str, expression: str | None = None, count: int | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if expression is not None:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    if count is not None:
        exactly["count"] = count
    return {
        "apiVersion": nvidia.RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def _problem(slices: list[dict[str, Any]], claims: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "deviceClasses": nvidia.device_classes(),
        "resourceSlices": slices,
        "allocatedClaims": [],
        "claims": claims,
        "node": NODE,
        **extra,
    }


def _allocated(claim: dict[str, Any], allocation: dict[str, Any]) -> dict[str, Any]:
    done = copy.deepcopy(claim)
    done["status"] = {"allocation": allocation}
    return done


def _devices(allocation: dict[str, Any]) -> list[str]:
    return [r["device"] for r in allocation["devices"]["results"]]


def test_first_fit_whole_gpu_with_selector(dra_allocate_oracle: Allocate) -> None:
    gpus = nvidia.full_gpu_slice("node-a", nvidia.H100, 4)
    expr = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    out = dra_allocate_oracle(_problem([gpus], [_claim("c1", "gpu.nvidia.com", expr)]))
    assert "error" not in out and "unsatisfiable" not in out, out
    (alloc,) = out["allocations"]
    assert alloc["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0"}
    ]
    assert alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-a"]
    assert out["ns"] >= out["allocateNs"] > 0
    assert out["features"]["PartitionableDevices"] is True and out["features"]["ConsumableCapacity"] is True


def test_allocated_claims_and_count_are_respected(dra_allocate_oracle: Allocate) -> None:
    gpus = nvidia.full_gpu_slice("node-a", nvidia.H100, 2)
    first = dra_allocate_oracle(_problem([gpus], [_claim("c1", "gpu.nvidia.com")]))
    taken = _allocated(_claim("c1", "gpu.nvidia.com"), first["allocations"][0])
    second = dra_allocate_oracle(_problem([gpus], [_claim("c2", "gpu.nvidia.com")], allocatedClaims=[taken]))
    assert _devices(second["allocations"][0]) == ["gpu-1"]
    too_many = dra_allocate_oracle(_problem([gpus], [_claim("c3", "gpu.nvidia.com", count=2)], allocatedClaims=[taken]))
    assert "allocations" not in too_many
    assert too_many["unsatisfiable"]


def test_dynamic_mig_counters_block_overlapping_partitions(dra_allocate_oracle: Allocate) -> None:
    slices = nvidia.dynamic_mig_slices("node-a", gpus=1)
    by_name = {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}

    def mig(name: str, profile: str) -> dict[str, Any]:
        return _claim(name, "mig.nvidia.com", f"device.attributes['gpu.nvidia.com'].profile == '{profile}'")

    out = dra_allocate_oracle(_problem(slices, [mig("a", "3g.40gb"), mig("b", "3g.40gb")]))
    halves = [nvidia.memory_slices_of(by_name[_devices(a)[0]]) for a in out["allocations"]]
    assert sorted(map(sorted, halves)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    allocated = [_allocated(mig(n, "3g.40gb"), a) for n, a in zip("ab", out["allocations"], strict=True)]
    blocked = dra_allocate_oracle(_problem(slices, [mig("c", "1g.10gb")], allocatedClaims=allocated))
    assert blocked.get("unsatisfiable"), blocked
    # Without the partitionable-devices feature the counter-consuming devices are not considered at all.
    off = dra_allocate_oracle(_problem(slices, [mig("d", "1g.10gb")], features={"DRAPartitionableDevices": False}))
    assert off["features"]["PartitionableDevices"] is False
    assert "allocations" not in off


def test_fatal_errors_and_bad_gates_are_errors_not_unsatisfiable(dra_allocate_oracle: Allocate) -> None:
    gpus = nvidia.full_gpu_slice("node-a", nvidia.H100, 1)
    broken = dra_allocate_oracle(_problem([gpus], [_claim("c", "gpu.nvidia.com", "device.attributes[")]))
    assert "compilation failed" in broken["error"] and "unsatisfiable" not in broken
    missing_class = dra_allocate_oracle(_problem([gpus], [_claim("c", "no-such-class")]))
    assert "no-such-class" in missing_class["error"]
    locked = dra_allocate_oracle(
        _problem([gpus], [_claim("c", "gpu.nvidia.com")], features={"DRAPrioritizedList": False})
    )
    assert "DRAPrioritizedList" in locked["error"]
    typo = dra_allocate_oracle({**_problem([gpus], []), "resourceSlice": []})
    assert "resourceSlice" in typo["error"]


def test_batch_answers_every_case_in_order(dra_allocate_oracle: Allocate) -> None:
    gpus = nvidia.full_gpu_slice("node-a", nvidia.H100, 2)
    cases = [_problem([gpus], [_claim("c", "gpu.nvidia.com", count=n)]) for n in (1, 2, 3, 2, 1)]
    out = dra_allocate_oracle({"cases": cases})
    results = out["results"]
    assert [len(r["allocations"][0]["devices"]["results"]) if "allocations" in r else 0 for r in results] == [
        1,
        2,
        0,
        2,
        1,
    ]
    assert all(r["ns"] > 0 for r in results)


DEVICE = {
    "driver": "gpu.nvidia.com",
    "attributes": {
        "type": {"string": "gpu"},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:15"},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", True),
        ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('9.0.0'))", False),
        ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:15'", True),
        ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H')", True),
        ("'missing' in device.attributes['gpu.nvidia.com']", False),
        ("device.allowMultipleAllocations", False),
    ],
)
def test_dra_selector_environment(k8s_cel_oracle: Cel, expression: str, expected: bool) -> None:
    (out,) = k8s_cel_oracle([{"expression": expression, "env": "dra-selector", "device": DEVICE}])
    assert out.get("error") is None, out
    assert (out["result"], out["type"]) == (expected, "bool")


def test_dra_selector_errors(k8s_cel_oracle: Cel) -> None:
    not_bool, unknown_attr, syntax = k8s_cel_oracle(
        [
            {"expression": "device.driver", "env": "dra-selector", "device": DEVICE},
            {"expression": "device.attributes['gpu.nvidia.com'].nope == 1", "env": "dra-selector", "device": DEVICE},
            {"expression": "device.driver ==", "env": "dra-selector", "device": DEVICE},
        ]
    )
    assert not_bool["stage"] == "compile" and "must evaluate to bool" in not_bool["error"]
    assert unknown_attr["stage"] == "eval" and "nope" in unknown_attr["error"]
    assert syntax["stage"] == "compile" and "Syntax error" in syntax["error"]


@pytest.mark.parametrize(
    ("expression", "result", "type_name"),
    [
        ("object.spec.replicas * 2", 6, "int"),
        ("object.spec.ratio / 2.0", 0.75, "double"),
        ("quantity('1Gi').add(quantity('512Mi'))", "1536Mi", "kubernetes.Quantity"),
        ("quantity('1.5')", "1500m", "kubernetes.Quantity"),
        ("semver('1.2.3')", "1.2.3", "kubernetes.Semver"),
        ("ip('10.0.0.1')", "10.0.0.1", "net.IP"),
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", True, "bool"),
        ("variables.names.map(n, n.upperAscii())", ["A", "B"], "list"),
        ("{'a': 1u}", {"a": 1}, "map"),
        ("oldObject == null && request.operation == 'CREATE'", True, "bool"),
        ("duration('90s')", "90s", "google.protobuf.Duration"),
        ("object.?missing.orValue('d')", "d", "string"),
        ("optional.none()", None, "optional"),
        ("[1, 2, 3].max()", 3, "int"),
        ("'a,b'.split(',')", ["a", "b"], "list"),
    ],
)
def test_admission_environment(k8s_cel_oracle: Cel, expression: str, result: Any, type_name: str) -> None:
    variables = {
        "object": {"spec": {"replicas": 3, "ratio": 1.5}},
        "request": {"operation": "CREATE"},
        "variables": {"names": ["a", "b"]},
    }
    (out,) = k8s_cel_oracle([{"expression": expression, "env": "admission", "variables": variables}])
    assert out.get("error") is None, out
    assert (out["result"], out["type"]) == (result, type_name)


def test_admission_errors_cost_and_repeat(k8s_cel_oracle: Cel) -> None:
    cases = [
        {"expression": "1 / object.zero", "env": "admission", "variables": {"object": {"zero": 0}}},
        {"expression": "undeclared > 1", "env": "admission"},
        {"expression": "[1,2,3].all(x, x > 0)", "env": "admission", "costLimit": 1},
        {"expression": "1 + 1", "env": "nope"},
        {"expression": "1 + 1", "env": "admission", "repeat": 50},
    ]
    div, undeclared, cost, bad_env, repeated = k8s_cel_oracle(cases)
    assert div["stage"] == "eval" and "division by zero" in div["error"]
    assert undeclared["stage"] == "compile" and "undeclared" in undeclared["error"]
    assert cost["stage"] == "eval" and "cost" in cost["error"]
    assert bad_env["stage"] == "input" and "cases[3]" in bad_env["error"]
    assert repeated["result"] == 2 and repeated["repeat"] == 50 and repeated["ns"] >= repeated["minNs"] > 0
    batch = k8s_cel_oracle({"cases": [{"expression": "true", "env": "admission"}], "repeat": 7})
    assert batch[0]["repeat"] == 7 and batch[0]["cost"] is not None


def test_static_mig_devices_are_plain_devices(dra_allocate_oracle: Allocate) -> None:
    layout = [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]
    mig = nvidia.static_mig_slice("node-a", layout)
    names = [d["name"] for d in mig["spec"]["devices"]]
    assert names == ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-2g20gb-14-4", "gpu-0-mig-3g40gb-9-0"]
    want = "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"
    out = dra_allocate_oracle(_problem([mig], [_claim("m", "mig.nvidia.com", want), _claim("g", "mig.nvidia.com")]))
    assert [_devices(a) for a in out["allocations"]] == [["gpu-0-mig-2g20gb-14-4"], ["gpu-0-mig-1g10gb-19-6"]]
    none_left = dra_allocate_oracle(_problem([mig], [_claim("all", "mig.nvidia.com", count=4)]))
    assert none_left.get("unsatisfiable"), none_left
