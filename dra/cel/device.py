"""The DRA selector's `device` variable built from a ResourceSlice device.

Follows k8s.io/dynamic-resource-allocation/cel/compile.go: attributes and capacities are maps by domain,
a name without a domain belongs to the driver's domain, `version` attributes become `Semver` and capacities
`Quantity`. Looking up a domain the device does not have gives an empty map; a missing name inside a
domain is a runtime "no such key" error, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra.errors import CelRuntimeError

__all__ = ["DomainMap", "device_value"]


class DomainMap(dict[str, dict[str, Any]]):
    """Domain → name → value; an unknown domain reads as an empty map (upstream's lazy domain lookup)."""

    def __missing__(self, key: str) -> dict[str, Any]:
        return {}


_LIST_FIELDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}
_ATTRIBUTE_FIELDS = ("int", "bool", "string", "version", *_LIST_FIELDS)


def _split(driver: str, qualified: str) -> tuple[str, str]:
    domain, sep, name = qualified.rpartition("/")
    return (domain, name) if sep else (driver, qualified)


def _attribute_value(qualified: str, attr: Mapping[str, Any]) -> Any:
    from dra.cel.semver import Semver

    set_fields = [k for k in _ATTRIBUTE_FIELDS if attr.get(k) is not None]
    if len(set_fields) != 1:
        raise CelRuntimeError(f"attribute {qualified!r}: exactly one of {', '.join(_ATTRIBUTE_FIELDS)} must be set")
    kind = set_fields[0]
    value = attr[kind]
    if kind in _LIST_FIELDS:  # DRAListTypeAttributes (1.36+): lists of the scalar kinds
        if not isinstance(value, list):
            raise CelRuntimeError(f"attribute {qualified!r}: {kind} must be a list, got {value!r}")
        return [_attribute_value(qualified, {_LIST_FIELDS[kind]: v}) for v in value]
    if kind == "version":
        try:
            return Semver.parse(str(value))
        except Exception as exc:
            raise CelRuntimeError(f"attribute {qualified!r}: invalid version {value!r}: {exc}") from None
    if kind == "int":
        if type(value) is not int:
            raise CelRuntimeError(f"attribute {qualified!r}: int expected, got {value!r}")
        return value
    if kind == "bool":
        if type(value) is not bool:
            raise CelRuntimeError(f"attribute {qualified!r}: bool expected, got {value!r}")
        return value
    return str(value)


def _as_dict(device: Any) -> Mapping[str, Any]:
    if isinstance(device, Mapping):
        return device
    to_k8s = getattr(device, "to_k8s", None)
    if callable(to_k8s):
        data = to_k8s()
        if isinstance(data, Mapping):
            return data
    raise TypeError(f"device_value: expected a dra.model.Device or its Kubernetes dict, got {type(device).__name__}")


def device_value(driver: str, device: Any) -> dict[str, Any]:
    """The CEL `device` map: driver, attributes, capacity, allowMultipleAllocations."""
    from dra.quantity import Quantity

    data = _as_dict(device)
    attributes = DomainMap()
    for qualified, attr in (data.get("attributes") or {}).items():
        domain, name = _split(driver, qualified)
        attributes.setdefault(domain, {})[name] = _attribute_value(qualified, attr)
    capacity = DomainMap()
    for qualified, cap in (data.get("capacity") or {}).items():
        domain, name = _split(driver, qualified)
        raw = cap.get("value") if isinstance(cap, Mapping) else cap
        if isinstance(raw, Quantity):
            q = raw
        else:
            try:
                q = Quantity.parse(str(raw))
            except Exception as exc:
                raise CelRuntimeError(f"capacity {qualified!r}: invalid quantity {raw!r}: {exc}") from None
        capacity.setdefault(domain, {})[name] = q
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": bool(data.get("allowMultipleAllocations") or False),
    }
