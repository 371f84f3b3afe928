"""resource.k8s.io/v1beta1 and v1beta2 objects converted to resource.k8s.io/v1 as the API server converts them.

The API server decodes a v1beta1 object, applies the v1beta1 defaults, converts it to its internal form and, when a
client reads it as v1, writes it out with the v1 defaults applied. `to_v1` does the same on the JSON form, from the
Go source of Kubernetes v1.37.2:

- `pkg/apis/resource/v1beta1/conversion.go` (`Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest`,
  `hasAnyMainRequestFieldsSet`, `Convert_v1beta1_Device_To_resource_Device`,
  `Convert_v1beta1_ResourceSliceSpec_To_resource_ResourceSliceSpec`) and its `zz_generated.conversion.go`
  (every other type is converted field by field, unchanged);
- `pkg/apis/resource/v1beta1/defaults.go` and `pkg/apis/resource/v1/defaults.go` (`allocationMode` ExactCount and
  `count` 1 for a request with a class, toleration `operator` Equal);
- `k8s.io/api/resource/v1beta2/types.go` has the JSON shape of v1: only `apiVersion` changes.

v1beta1 differs from v1 in two places: a `DeviceRequest` holds the `exactly` fields at its top level (any of them
set makes an `exactly`), and a slice's `Device` wraps everything but its name in `basic`. `parse_strict` combines
the conversion with the strict parse mode: unknown fields are reported with their path in the object as written.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra.errors import ModelValidationError
from dra.model._base import K8sModel, UnknownFieldsError, strict_path
from dra.model.claim import ResourceClaim, ResourceClaimTemplate
from dra.model.deviceclass import DeviceClass
from dra.model.slice import Device, ResourceSlice

__all__ = [
    "GROUP",
    "SUPPORTED_VERSIONS",
    "Converted",
    "UnsupportedVersionError",
    "parse_strict",
    "to_v1",
]

GROUP = "resource.k8s.io"
V1 = f"{GROUP}/v1"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA1 = f"{GROUP}/v1beta1"
SUPPORTED_VERSIONS = (V1, V1BETA2, V1BETA1)

_MODELS: dict[str, type[K8sModel]] = {
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "DeviceClass": DeviceClass,
    "ResourceSlice": ResourceSlice,
}

# v1beta1 DeviceRequest: the fields that become `exactly` (hasAnyMainRequestFieldsSet), then the request's own.
_MAIN_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
    "derivedAttributes",
)
_V1BETA1_REQUEST_FIELDS = frozenset(("name", "firstAvailable", *_MAIN_REQUEST_FIELDS))
_V1BETA1_DEVICE_FIELDS = frozenset(("name", "basic"))
# v1beta1 BasicDevice: the v1 Device's fields but its name.
_BASIC_DEVICE_FIELDS = frozenset((f.alias or n) for n, f in Device.model_fields.items()) - {"name"}

_REMOVED = {
    "v1alpha1": "the first DRA API, removed in Kubernetes 1.27",
    "v1alpha2": "classic DRA (resourceClassName, ResourceClass, parametersRef), removed in Kubernetes 1.31",
    "v1alpha3": "the structured-parameters alpha of 1.31, replaced by v1beta1 in 1.32",
}


class UnsupportedVersionError(ModelValidationError):
    """An apiVersion gpudra does not read (not resource.k8s.io/v1, v1beta2 or v1beta1)."""

    def __init__(self, kind: str, api_version: object) -> None:
        self.kind = kind
        self.api_version = api_version
        super().__init__([("apiVersion", self.message)])
        self.args = (self.message,)

    @property
    def message(self) -> str:
        supported = ", ".join(SUPPORTED_VERSIONS)
        if self.api_version is None or self.api_version == "":
            return f"apiVersion is required for {self.kind} (supported: {supported})"
        text = f"unsupported apiVersion {_go_quote(str(self.api_version))} for {self.kind}"
        group, _, version = str(self.api_version).rpartition("/")
        if group == GROUP and version in _REMOVED:
            text += f" ({version} is {_REMOVED[version]})"
        return f"{text}; supported: {supported} (v1beta1 and v1beta2 are converted to v1 as the API server does)"

    def __str__(self) -> str:
        return self.message


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(slots=True)
class Converted:
    """An object in its resource.k8s.io/v1 form; `source_version` is the apiVersion it was written in."""

    data: dict[str, Any]
    source_version: str
    # (v1 path prefix, path as written): unknown fields found in the v1 form are reported at the written path.
    moved: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # fields unknown in the written version's own shape

    @property
    def converted(self) -> bool:
        return self.source_version != V1

    def written_path(self, path: str) -> str:
        """A path in `data` as the path of the object as written (the longest moved prefix wins)."""
        best: tuple[str, str] | None = None
        for v1_prefix, written in self.moved:
            if _has_prefix(path, v1_prefix) and (best is None or len(v1_prefix) > len(best[0])):
                best = (v1_prefix, written)
        return path if best is None else best[1] + path[len(best[0]) :]


def _has_prefix(path: str, prefix: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


def to_v1(data: Mapping[str, Any]) -> Converted:
    """The v1 form of a DRA object written as v1, v1beta2 or v1beta1; raises `UnsupportedVersionError`.

    `data` is not changed. Objects already in v1 are returned as they are (no defaults applied).
    """
    kind = str(data.get("kind") or "")
    version = data.get("apiVersion")
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(kind or "the object", version)
    assert isinstance(version, str)
    if version == V1:
        return Converted(dict(data), V1)
    out = copy.deepcopy(dict(data))
    out["apiVersion"] = V1
    result = Converted(out, version)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return result
    if kind == "ResourceClaim":
        _claim_spec(spec, "spec", version, result)
    elif kind == "ResourceClaimTemplate":
        inner = spec.get("spec")
        if isinstance(inner, dict):
            _claim_spec(inner, "spec.spec", version, result)
    elif kind == "ResourceSlice":
        _slice_spec(spec, "spec", version, result)
    return result


def _claim_spec(spec: dict[str, Any], path: str, version: str, result: Converted) -> None:
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return
    requests = devices.get("requests")
    if not isinstance(requests, list):
        return
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        where = strict_path(strict_path(strict_path(path, "devices"), "requests"), i)
        if version == V1BETA1:
            requests[i] = request = _v1beta1_request(request, where, result)
        _v1_request_defaults(request)


def _v1beta1_request(request: dict[str, Any], where: str, result: Converted) -> dict[str, Any]:
    """`Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest`, after `SetDefaults_DeviceRequest` (v1beta1)."""
    result.unknown.extend(strict_path(where, k) for k in request if k not in _V1BETA1_REQUEST_FIELDS)
    # v1beta1 defaults (on decode): a request with a class gets allocationMode ExactCount and count 1.
    if request.get("deviceClassName"):
        if not request.get("allocationMode"):
            request["allocationMode"] = "ExactCount"
        if request["allocationMode"] == "ExactCount" and not request.get("count"):
            request["count"] = 1
    out: dict[str, Any] = {k: v for k, v in request.items() if k not in _MAIN_REQUEST_FIELDS}
    # hasAnyMainRequestFieldsSet: a non-empty class, mode or count; a present (non-nil) list, pointer or struct.
    main_set = (
        bool(request.get("deviceClassName"))
        or bool(request.get("allocationMode"))
        or bool(request.get("count"))
        or any(request.get(k) is not None for k in ("selectors", "adminAccess", "tolerations", "capacity"))
        or request.get("derivedAttributes") is not None
    )
    if main_set:
        exactly: dict[str, Any] = {"deviceClassName": request.get("deviceClassName") or ""}
        for key in _MAIN_REQUEST_FIELDS[1:]:
            value = request.get(key)
            # Go's zero values are left out of the JSON (omitempty); a false adminAccess and an empty capacity
            # are pointers to a value and stay. Tolerations are converted item by item: [] becomes nil.
            if value is None or (key not in ("adminAccess", "capacity") and value in ("", 0, [])):
                continue
            exactly[key] = value
        out["exactly"] = exactly
        result.moved.append((strict_path(where, "exactly"), where))
    return out


def _v1_request_defaults(request: dict[str, Any]) -> None:
    """`SetObjectDefaults_ResourceClaim` (v1): mode, count and toleration operators of exactly and subrequests."""
    targets = []
    if isinstance(request.get("exactly"), dict):
        targets.append(request["exactly"])
    targets.extend(s for s in request.get("firstAvailable") or () if isinstance(s, dict))
    for target in targets:
        if not target.get("allocationMode"):
            target["allocationMode"] = "ExactCount"
        if target["allocationMode"] == "ExactCount" and not target.get("count"):
            target["count"] = 1
        for toleration in target.get("tolerations") or ():
            if isinstance(toleration, dict) and not toleration.get("operator"):
                toleration["operator"] = "Equal"


def _slice_spec(spec: dict[str, Any], path: str, version: str, result: Converted) -> None:
    if version != V1BETA1:
        return
    # Convert_v1beta1_ResourceSliceSpec_To_resource_ResourceSliceSpec: "" and false become unset.
    if spec.get("nodeName") == "":
        del spec["nodeName"]
    if spec.get("allNodes") is False:
        del spec["allNodes"]
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return
    for i, device in enumerate(devices):
        if isinstance(device, dict):
            devices[i] = _v1beta1_device(device, strict_path(strict_path(path, "devices"), i), result)


def _v1beta1_device(device: dict[str, Any], where: str, result: Converted) -> dict[str, Any]:
    """`Convert_v1beta1_Device_To_resource_Device`: `basic`'s fields move up; empty maps and lists become unset."""
    result.unknown.extend(strict_path(where, k) for k in device if k not in _V1BETA1_DEVICE_FIELDS)
    out: dict[str, Any] = {k: v for k, v in device.items() if k != "basic" and k not in _BASIC_DEVICE_FIELDS}
    basic = device.get("basic")
    if not isinstance(basic, dict):
        if basic is not None:
            out["basic"] = basic  # not an object: the strict parse reports it
        return out
    basic_path = strict_path(where, "basic")
    result.unknown.extend(strict_path(basic_path, k) for k in basic if k not in _BASIC_DEVICE_FIELDS)
    for key, value in basic.items():
        if key not in _BASIC_DEVICE_FIELDS:
            continue
        if key in ("attributes", "capacity", "consumesCounters", "taints") and not value:
            continue
        out[key] = value
    for key in _BASIC_DEVICE_FIELDS:
        if key in out:
            result.moved.append((strict_path(where, key), strict_path(basic_path, key)))
    return out


def parse_strict(data: Mapping[str, Any], kinds: Iterable[str] | None = None) -> tuple[K8sModel, Converted]:
    """A DRA object from user input, strictly: its apiVersion supported (v1beta1/v1beta2 converted to v1), no
    unknown field anywhere (`UnknownFieldsError` with every path as written), every value of the right type.

    `kinds` limits the kinds accepted (default: ResourceClaim, ResourceClaimTemplate, DeviceClass, ResourceSlice).
    """
    kind = data.get("kind")
    allowed = tuple(kinds) if kinds is not None else tuple(_MODELS)
    if not isinstance(kind, str) or kind not in allowed or kind not in _MODELS:
        raise ModelValidationError([("kind", f"expected one of {', '.join(allowed)} (got {kind!r})")])
    converted = to_v1(data)
    unknown = list(converted.unknown)
    try:
        obj = _MODELS[kind].from_k8s(converted.data, extra="reject")
    except UnknownFieldsError as err:
        unknown.extend(converted.written_path(p) for p in err.fields)
        raise UnknownFieldsError(_dedupe(unknown)) from None
    except ModelValidationError as err:
        if unknown:
            raise UnknownFieldsError(_dedupe(unknown)) from None
        raise ModelValidationError([(converted.written_path(p), m) for p, m in err.errors]) from None
    if unknown:
        raise UnknownFieldsError(_dedupe(unknown))
    return obj, converted


def _dedupe(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))
