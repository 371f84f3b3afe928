"""The strict parse mode (unknown fields, apiVersions) and v1beta1/v1beta2 → v1 conversion of `dra.model`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra.errors import ModelValidationError
from dra.model import (
    SUPPORTED_VERSIONS,
    ResourceClaim,
    ResourceSlice,
    UnknownFieldsError,
    UnsupportedVersionError,
    parse_strict,
    to_v1,
)
from tests.dra.model._claim_inputs import BAD_CLAIMS, V1_SPECS, V1ALPHA2_CLAIM, V1BETA1_DEMOS, V1BETA2


@pytest.mark.parametrize(("name", "obj", "paths"), BAD_CLAIMS, ids=[b[0] for b in BAD_CLAIMS])
def test_unknown_fields_are_rejected_with_their_full_path(name: str, obj: dict[str, Any], paths: list[str]) -> None:
    with pytest.raises(UnknownFieldsError) as info:
        parse_strict(obj)
    assert info.value.fields == paths
    assert str(info.value) == "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
    assert info.value.errors[0] == (paths[0], f'unknown field "{paths[0]}"')


def test_the_default_parse_mode_stays_lenient() -> None:
    obj = dict(BAD_CLAIMS[1][1])
    claim = ResourceClaim.from_k8s(obj)
    assert claim.unknown_fields() == ["spec.devices.requests[0].exactly.cuont"]
    assert claim.to_k8s()["spec"]["devices"]["requests"][0]["exactly"]["cuont"] == 4  # kept for round trips


def test_map_keys_in_strict_paths_are_dotted_as_the_api_server_writes_them() -> None:
    sl = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "n",
            "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": "H100", "strng": "x"}}}],
        },
    }
    with pytest.raises(UnknownFieldsError) as info:
        ResourceSlice.from_k8s(sl, extra="reject")
    assert info.value.fields == ["spec.devices[0].attributes.productName.strng"]


@pytest.mark.parametrize(
    "version", ["resource.k8s.io/v1alpha2", "resource.k8s.io/v1alpha3", "resource.k8s.io/v2", "v1"]
)
def test_unsupported_versions_name_the_version_and_what_is_supported(version: str) -> None:
    obj = dict(V1ALPHA2_CLAIM, apiVersion=version)
    with pytest.raises(UnsupportedVersionError) as info:
        parse_strict(obj)
    message = str(info.value)
    assert message.startswith(f'unsupported apiVersion "{version}" for ResourceClaim')
    assert all(v in message for v in SUPPORTED_VERSIONS)
    assert info.value.errors[0][0] == "apiVersion"


def test_v1alpha2_says_what_it_was() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"classic DRA \(resourceClassName"):
        parse_strict(V1ALPHA2_CLAIM)


def test_a_missing_api_version_is_an_error() -> None:
    obj = {k: v for k, v in V1ALPHA2_CLAIM.items() if k != "apiVersion"}
    with pytest.raises(UnsupportedVersionError, match="apiVersion is required for ResourceClaim"):
        parse_strict(obj)


def test_a_wrong_type_names_the_path_as_written() -> None:
    obj = copy.deepcopy(V1BETA1_DEMOS["two-gpus-count"])
    obj["spec"]["devices"]["requests"][0]["count"] = "2"
    with pytest.raises(ModelValidationError) as info:
        parse_strict(obj)
    assert info.value.errors[0][0] == "spec.devices.requests[0].count"


@pytest.mark.parametrize("name", sorted(V1_SPECS))
def test_v1beta1_demos_convert_as_the_api_server_does(name: str) -> None:
    obj, converted = parse_strict(V1BETA1_DEMOS[name])
    assert converted.converted and converted.source_version == "resource.k8s.io/v1beta1"
    assert converted.data["apiVersion"] == "resource.k8s.io/v1"
    assert converted.data["spec"] == V1_SPECS[name]
    assert obj.to_k8s()["spec"] == V1_SPECS[name]


def test_every_v1beta1_demo_converts_to_a_claim_with_exactly_or_first_available() -> None:
    for name, demo in V1BETA1_DEMOS.items():
        _, converted = parse_strict(demo)
        spec = converted.data["spec"]
        devices = (spec.get("spec") or spec)["devices"]
        for request in devices["requests"]:
            assert ("exactly" in request) != ("firstAvailable" in request), name
            assert set(request) <= {"name", "exactly", "firstAvailable"}, name


def test_conversion_does_not_change_its_input() -> None:
    demo = V1BETA1_DEMOS["mig-devices"]
    before = copy.deepcopy(demo)
    to_v1(demo)
    assert demo == before


def test_empty_lists_and_zero_values_as_go_writes_them() -> None:
    _, converted = parse_strict(V1BETA1_DEMOS["two-gpus-count"])
    exactly = converted.data["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}


def test_v1beta2_only_changes_the_api_version() -> None:
    demo = copy.deepcopy(V1BETA1_DEMOS["single-gpu"])
    demo["apiVersion"] = V1BETA2
    demo["spec"]["spec"]["devices"]["requests"][0] = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
    _, converted = parse_strict(demo)
    assert converted.converted and converted.data["apiVersion"] == "resource.k8s.io/v1"
    assert converted.data["spec"] == V1_SPECS["single-gpu"]


def test_v1_objects_are_not_defaulted() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
    }
    _, converted = parse_strict(obj)
    assert not converted.converted and converted.data == obj


def test_v1beta1_slices_unwrap_basic() -> None:
    sl: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "n",
            "allNodes": False,
            "devices": [
                {
                    "name": "gpu-0",
                    "basic": {
                        "attributes": {"productName": {"string": "H100"}},
                        "capacity": {"memory": {"value": "80Gi"}},
                        "taints": [],
                    },
                }
            ],
        },
    }
    _, converted = parse_strict(sl)
    assert converted.data["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"productName": {"string": "H100"}}, "capacity": {"memory": {"value": "80Gi"}}}
    ]
    assert "allNodes" not in converted.data["spec"]
    bad = copy.deepcopy(sl)
    bad["spec"]["devices"][0]["attributes"] = {}
    bad["spec"]["devices"][0]["basic"]["capacity"]["memory"]["vaule"] = "1"
    with pytest.raises(UnknownFieldsError) as info:
        parse_strict(bad)
    assert info.value.fields == ["spec.devices[0].attributes", "spec.devices[0].basic.capacity.memory.vaule"]


def test_kinds_outside_the_set_are_refused() -> None:
    with pytest.raises(ModelValidationError, match="expected one of DeviceClass"):
        parse_strict({"apiVersion": "v1", "kind": "Pod"}, ["DeviceClass"])
