"""Upstream-shaped example objects survive from_k8s → to_k8s unchanged; quantities print canonically."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.errors import ModelValidationError
from dra.model import (
    KINDS,
    CapacityRequirements,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceClassSpec,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    K8sModel,
    ObjectMeta,
    Pod,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceSlice,
)
from dra.quantity import Quantity

FIXTURES = Path(__file__).parent / "fixtures"
MODELS: dict[str, type[K8sModel]] = {**KINDS, "Pod": Pod}


def _documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            for item_index, item in enumerate(doc.get("items", [doc])):
                found.append((f"{path.name}#{index}.{item_index}:{item['kind']}", item))
    return found


DOCUMENTS = _documents()


def test_fixtures_cover_every_kind() -> None:
    kinds = {doc["kind"] for _, doc in DOCUMENTS}
    assert kinds == set(MODELS)
    assert len(DOCUMENTS) >= 18


@pytest.mark.parametrize(("name", "doc"), DOCUMENTS, ids=[name for name, _ in DOCUMENTS])
def test_round_trip_is_exact(name: str, doc: dict[str, Any]) -> None:
    model = MODELS[doc["kind"]].from_k8s(copy.deepcopy(doc))
    out = model.to_k8s()
    assert out == doc
    # JSON-able, and stable when read back.
    assert MODELS[doc["kind"]].from_k8s(json.loads(json.dumps(out))).to_k8s() == out


def test_typed_access_to_an_nvidia_slice() -> None:
    doc = next(d for n, d in DOCUMENTS if n.startswith("slices.yaml#0"))
    sl = ResourceSlice.from_k8s(doc)
    device = sl.spec.devices[0] if sl.spec.devices else Device()
    assert sl.spec.driver == "gpu.nvidia.com"
    assert sl.spec.pool.resource_slice_count == 1
    assert device.capacity is not None and device.capacity["memory"].value == Quantity("80Gi")
    assert device.attributes is not None
    assert device.attributes["cudaComputeCapability"].version == "8.0.0"
    assert device.attributes["type"].value == "gpu"
    assert device.attributes["type"].kinds() == ["string"]


def test_partitionable_and_consumable_fields() -> None:
    counters = ResourceSlice.from_k8s(next(d for n, d in DOCUMENTS if n.startswith("partitionable.yaml#0")))
    assert counters.spec.shared_counters is not None
    counter_set = counters.spec.shared_counters[0]
    assert counter_set.counters is not None and counter_set.counters["memory-slice-7"].value == 1
    shared = ResourceSlice.from_k8s(next(d for n, d in DOCUMENTS if n.startswith("consumable.yaml#0")))
    gpu = (shared.spec.devices or [])[0]
    assert gpu.allow_multiple_allocations is True
    policy = (gpu.capacity or {})["memory"].request_policy
    assert policy is not None and policy.valid_range is not None
    assert policy.valid_range.step == Quantity("4Gi")


def test_claim_status_fields() -> None:
    claim = ResourceClaim.from_k8s(next(d for n, d in DOCUMENTS if "two-gpus" in json.dumps(d)))
    assert claim.status is not None and claim.status.allocation is not None
    results = claim.status.allocation.devices.results if claim.status.allocation.devices else None
    assert results is not None and [r.device for r in results] == ["gpu-0", "gpu-1"]
    assert claim.status.reserved_for is not None and claim.status.reserved_for[0].resource == "pods"
    shared = ResourceClaim.from_k8s(next(d for n, d in DOCUMENTS if "shared-gpu-memory" in json.dumps(d)))
    assert shared.status is not None and shared.status.allocation is not None
    result = ((shared.status.allocation.devices and shared.status.allocation.devices.results) or [])[0]
    assert result.share_id == "2f1b8a90-7d0e-4a4c-8b1c-0d6a51e0f7a2"
    assert result.consumed_capacity == {"gpu.nvidia.com/memory": Quantity("12Gi")}


def test_pod_keeps_every_other_field() -> None:
    doc = next(d for n, d in DOCUMENTS if n.startswith("pods.yaml"))
    pod = Pod.from_k8s(doc)
    assert [c.name for c in pod.all_containers()] == ["warmup", "ctr0", "sidecar"]
    ctr = pod.spec.containers[0]
    assert ctr.resources is not None and ctr.resources.claims is not None
    assert (ctr.resources.claims[0].name, ctr.resources.claims[0].request) == ("gpu", "gpus")
    assert pod.spec.resource_claims is not None
    assert pod.spec.resource_claims[1].resource_claim_name == "shared-gpu-memory"
    assert pod.to_k8s()["spec"]["tolerations"] == doc["spec"]["tolerations"]
    assert "spec.restartPolicy" in pod.unknown_fields()
    assert "spec.containers[0].image" in pod.unknown_fields()


def test_quantities_are_printed_canonically() -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d.example.com",
            "allNodes": True,
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "x", "capacity": {"memory": {"value": "1024Mi"}, "cores": {"value": 8}}}],
        },
    }
    out = ResourceSlice.from_k8s(doc).to_k8s()
    assert out["spec"]["devices"][0]["capacity"] == {"memory": {"value": "1Gi"}, "cores": {"value": "8"}}


def test_unknown_fields_are_kept_explicitly() -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "future"},
        "spec": {
            "selectors": [{"cel": {"expression": "true"}, "futureSelector": {"x": 1}}],
            "futureField": ["a"],
        },
        "status": {"observed": True},
    }
    dc = DeviceClass.from_k8s(doc)
    assert dc.to_k8s() == doc
    assert sorted(dc.unknown_fields()) == ["spec.futureField", "spec.selectors[0].futureSelector", "status"]


def test_built_in_python_and_emitted_without_unset_fields() -> None:
    claim = ResourceClaim(
        metadata=ObjectMeta(name="c", namespace="ns"),
        spec=ResourceClaimSpec.model_validate(
            {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
        ),
    )
    assert claim.to_k8s() == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }
    request = DeviceRequest(
        name="r",
        exactly=ExactDeviceRequest(
            device_class_name="c",
            selectors=[DeviceSelector.of("device.driver == 'x'")],
            capacity=CapacityRequirements(requests={"memory": Quantity("1.5Gi")}),
        ),
    )
    assert request.to_k8s() == {
        "name": "r",
        "exactly": {
            "deviceClassName": "c",
            "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
            "capacity": {"requests": {"memory": "1536Mi"}},
        },
    }
    assert DeviceClass(spec=DeviceClassSpec()).to_k8s() == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {},
        "spec": {},
    }


def test_attribute_constructors() -> None:
    assert DeviceAttribute.of(3).to_k8s() == {"int": 3}
    assert DeviceAttribute.of(False).to_k8s() == {"bool": False}
    assert DeviceAttribute.of("x").to_k8s() == {"string": "x"}
    assert DeviceAttribute.of("1.2.3", version=True).to_k8s() == {"version": "1.2.3"}
    assert DeviceAttribute.from_k8s({"ints": [1, 2]}).value == [1, 2]
    assert DeviceAttribute.from_k8s({}).value is None


@pytest.mark.parametrize(
    ("model", "doc", "path", "fragment"),
    [
        (DeviceAttribute, {"int": "5"}, "int", "valid integer"),
        (DeviceAttribute, {"bool": "true"}, "bool", "valid boolean"),
        (
            ResourceSlice,
            {"spec": {"devices": [{"name": "a"}, {"name": "b", "capacity": {"gpu/mem": {"value": "12Mo"}}}]}},
            "spec.devices[1].capacity[gpu/mem].value",
            "quantities must match",
        ),
        (ResourceClaim, {"apiVersion": "resource.k8s.io/v1beta1"}, "apiVersion", "resource.k8s.io/v1"),
        (ResourceClaimTemplate, {"spec": {"spec": {"devices": {"requests": "x"}}}}, "spec.spec.devices.requests", ""),
        (Pod, {"spec": {"containers": [{"name": 5}]}}, "spec.containers[0].name", "valid string"),
    ],
)
def test_malformed_input_names_the_field(model: type[K8sModel], doc: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ModelValidationError) as info:
        model.from_k8s(doc)
    assert info.value.errors[0][0] == path
    assert fragment in info.value.errors[0][1]


def test_from_k8s_rejects_non_objects() -> None:
    with pytest.raises(ModelValidationError, match="expected an object"):
        ResourceSlice.from_k8s(["not", "a", "dict"])  # type: ignore[arg-type]


def test_opaque_parameters_are_kept_verbatim() -> None:
    params = {"apiVersion": "x/v1", "kind": "Cfg", "limit": None, "list": [None, 1, "10Gi"]}
    doc = {"spec": {"config": [{"opaque": {"driver": "d.example.com", "parameters": params}}]}}
    out = DeviceClass.from_k8s(doc).to_k8s()
    assert out["spec"]["config"][0]["opaque"]["parameters"] == params


def test_timestamps_from_plain_pyyaml_become_text() -> None:
    # yaml.safe_load turns unquoted times into datetimes; the model writes them back as the API's RFC 3339 text.
    doc = yaml.safe_load(
        "metadata: {name: s, creationTimestamp: 2026-05-04T10:11:12Z}\n"
        "spec:\n  devices:\n  - name: d\n    taints:\n"
        "    - {key: k, effect: NoSchedule, timeAdded: 2026-05-04T12:00:00+02:00}\n"
    )
    out = ResourceSlice.from_k8s(doc).to_k8s()
    assert out["metadata"]["creationTimestamp"] == "2026-05-04T10:11:12Z"
    assert out["spec"]["devices"][0]["taints"][0]["timeAdded"] == "2026-05-04T10:00:00Z"


def test_public_names_are_sorted_and_exist() -> None:
    import dra.documents
    import dra.model
    import dra.quantity

    for module in (dra.model, dra.documents, dra.quantity):
        assert module.__all__ == sorted(module.__all__)
        assert all(hasattr(module, name) for name in module.__all__)
