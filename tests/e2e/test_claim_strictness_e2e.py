"""gpudra's strict claim parsing and v1beta1 conversion held against a real kube-apiserver (v1.37.2).

- Every bad claim of `tests/dra/model/_claim_inputs.BAD_CLAIMS` is sent with `fieldValidation=Strict` (and one through
  `kubectl create --validate=strict`): the API server rejects the same field paths `dra.model.conversion.parse_strict`
  does.
- Every v1beta1 demo claim is created as v1beta1 and read back as v1: the spec equals `to_v1`'s.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from dra.model import UnknownFieldsError, UnsupportedVersionError, parse_strict, to_v1
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube
from tests.dra.model._claim_inputs import BAD_CLAIMS, V1ALPHA2_CLAIM, V1BETA1_DEMOS

pytestmark = [pytest.mark.e2e]

_PLURALS = {"ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates"}
_UNKNOWN = re.compile(r'unknown field "((?:[^"\\]|\\.)*)"')


def _path(obj: dict[str, Any], namespace: str, name: str | None = None, version: str | None = None) -> str:
    group_version = version or obj["apiVersion"]
    path = f"/apis/{group_version}/namespaces/{namespace}/{_PLURALS[obj['kind']]}"
    return path + (f"/{name}" if name else "")


def _server_unknown_fields(kube: Kube, obj: dict[str, Any], namespace: str) -> list[str]:
    """The unknown-field paths the API server names when `obj` is created with fieldValidation=Strict."""
    with pytest.raises(ApiException) as info:
        kube.request("POST", _path(obj, namespace) + "?fieldValidation=Strict", obj)
    status = json.loads(info.value.body or "{}")
    assert status["code"] == 400 and status["reason"] == "BadRequest", status
    assert "strict decoding error" in status["message"], status
    return [json.loads(f'"{m}"') for m in _UNKNOWN.findall(status["message"])]


@pytest.mark.parametrize(("name", "obj", "paths"), BAD_CLAIMS, ids=[b[0] for b in BAD_CLAIMS])
def test_the_api_server_rejects_the_same_unknown_fields(
    kube: Kube, k8s_namespace: str, name: str, obj: dict[str, Any], paths: list[str]
) -> None:
    server = _server_unknown_fields(kube, obj, k8s_namespace)
    with pytest.raises(UnknownFieldsError) as info:
        parse_strict(obj)
    assert sorted(info.value.fields) == sorted(server), (info.value.fields, server)
    assert sorted(server) == sorted(paths)


def test_kubectl_validate_strict_names_the_same_field(control_plane: ControlPlane, k8s_namespace: str) -> None:
    _, obj, paths = BAD_CLAIMS[1]
    result = control_plane.kubectl(
        "create", "--validate=strict", "-n", k8s_namespace, "-f", "-", input=json.dumps(obj), check=False
    )
    assert result.returncode != 0
    assert _UNKNOWN.findall(result.stderr) == paths, result.stderr


def test_the_api_server_does_not_serve_v1alpha2(kube: Kube, k8s_namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        kube.request("POST", _path(V1ALPHA2_CLAIM, k8s_namespace), V1ALPHA2_CLAIM)
    assert info.value.status == 404
    with pytest.raises(UnsupportedVersionError):
        parse_strict(V1ALPHA2_CLAIM)


def _omitempty(value: Any) -> Any:
    """`value` with empty lists and objects left out, as Go's JSON encoding writes `omitempty` fields (and an empty
    template `metadata` struct, which it always writes, too): what the API server's output and `to_v1` may differ in
    without meaning anything different. Opaque `parameters` are compared verbatim."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = item if key == "parameters" else _omitempty(item)
            if item in ([], {}):
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_omitempty(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(V1BETA1_DEMOS))
def test_v1beta1_claims_read_back_as_v1_equal_the_conversion(kube: Kube, k8s_namespace: str, name: str) -> None:
    demo = copy.deepcopy(V1BETA1_DEMOS[name])
    # adminAccess needs the namespace label (DRAAdminNamespaceLabelKey).
    kube.patch("Namespace", k8s_namespace, {"metadata": {"labels": {"resource.kubernetes.io/admin-access": "true"}}})
    kube.request("POST", _path(demo, k8s_namespace) + "?fieldValidation=Strict", demo)
    back = kube.request("GET", _path(demo, k8s_namespace, demo["metadata"]["name"], "resource.k8s.io/v1"))
    assert back["apiVersion"] == "resource.k8s.io/v1"
    converted = to_v1(V1BETA1_DEMOS[name])
    assert _omitempty(converted.data["spec"]) == _omitempty(back["spec"])
    # And the converted object passes gpudra's strict v1 parse, as does the server's.
    obj, _ = parse_strict(converted.data)
    assert _omitempty(obj.to_k8s()["spec"]) == _omitempty(back["spec"])
    parse_strict(back)
