"""The JSON types of the Pod fields gpudra reads, checked before any policy runs.

The API server decodes a pod into its Go types before admission, so a real review always has them right; a review
sent by anything else may not, and a wrong type deep in a policy or the translation would surface as an internal
error. Here it becomes a 400-style denial naming the field.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Final

from dra.errors import QuantityError
from dra.model import LIMITS
from dra.quantity import Quantity
from policyengine.denial import AdmissionDenied

__all__ = ["MAX_DEVICES_PER_CLAIM", "check_pod_shape", "quantity_value"]

# resource.k8s.io/v1 AllocationResultsMaxSize: one claim allocates at most this many devices, and a pod's legacy
# GPUs all go into one claim (the API server accepts a larger `count`; the scheduler never allocates it). The policy
# engine's facts (policyengine.facts) read this one for the CLI and the simulator.
MAX_DEVICES_PER_CLAIM: Final = LIMITS["AllocationResultsMaxSize"]

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _bad(path: str, expected: str, value: Any) -> AdmissionDenied:
    return AdmissionDenied(
        f"gpudra: pod field {path} must be {expected} (got {type(value).__name__})", code=400, reason="BadRequest"
    )


_ABSENT: Any = object()


def _object(value: Any, path: str, *, optional: bool = True) -> dict[str, Any]:
    """An explicit null is wrong too: the API server omits empty fields rather than sending null."""
    if value is _ABSENT and optional:
        return {}
    if not isinstance(value, dict):
        raise _bad(path, "an object", value)
    return value


def _string_map(value: Any, path: str) -> None:
    for key, item in _object(value, path).items():
        if not isinstance(item, str):
            raise _bad(f"{path}[{key!r}]", "a string", item)


def _is_legacy_gpu(resource: str) -> bool:
    return resource == "nvidia.com/gpu" or resource.startswith("nvidia.com/mig-")


def _plain_count(item: object) -> int | None:
    """The value of an int, or of a string of ASCII digits without a leading zero (`"2"`, as the API server writes a
    count): what parsing it as a quantity gives, without the parse. None for every other spelling."""
    if type(item) is int:
        return item if item >= 0 else None
    if type(item) is str and 0 < len(item) <= 18 and item.isascii() and item.isdigit():
        return int(item) if item == "0" or item[0] != "0" else None
    return None


def quantity_value(item: object) -> Fraction:
    """The exact value of a resource value as the API server decodes one: a JSON number, or a quantity string (trimmed,
    as `Quantity.UnmarshalJSON` trims it). The one reading of a count that this check and the facts
    (`policyengine.facts`) share; `QuantityError` is its only error."""
    if type(item) is int:
        return Fraction(item)
    return Quantity.coerce(item).value


def _device_count(item: str | int | float, path: str, container: str) -> int:
    """A legacy GPU resource's value as a device count: a whole number no claim's limit rules out, judged by the
    quantity's exact value, however it is spelled (`1`, `1000m`, `1.0`, `0.001k` are all one device; `1500m` is
    none). The API server's own rule for extended resources, `MilliValue() % 1000 == 0`
    (pkg/apis/core/validation ValidateResourceQuantityValue), accepts the same spellings, and then sends the canonical
    `1`; it also rounds `0.9999` up to `1000m`, which gpudra refuses as not a whole number."""
    plain = _plain_count(item)
    if plain is not None and plain <= MAX_DEVICES_PER_CLAIM:
        return plain
    try:
        value = quantity_value(item)
    except QuantityError as exc:
        raise AdmissionDenied(f"gpudra: {path} is not a quantity: {exc}", code=400, reason="BadRequest") from exc
    if value.denominator != 1 or not 0 <= value <= MAX_DEVICES_PER_CLAIM:
        raise AdmissionDenied(
            f"gpudra: {path} of container {container!r} is {item!r}: a device count must be a whole number from 0 to "
            f"{MAX_DEVICES_PER_CLAIM}, the most devices one DRA claim can allocate (AllocationResultsMaxSize)",
            code=400,
            reason="BadRequest",
        )
    return int(value)


def _quantities(value: Any, path: str, container: str) -> int:
    """Check a requests/limits map; returns the legacy GPU devices it asks for."""
    devices = 0
    for key, item in _object(value, path).items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise _bad(f"{path}[{key!r}]", "a quantity (string or number)", item)
        if _is_legacy_gpu(key):
            devices += _device_count(item, f"{path}[{key!r}]", container)
    return devices


def _container(value: Any, path: str) -> int:
    """Check one container; returns the legacy GPU devices it asks for."""
    container = _object(value, path, optional=False)
    name = container.get("name")
    if not isinstance(name, str):
        raise _bad(f"{path}.name", "a string", name)
    if not _DNS_LABEL.fullmatch(name):  # the API server's own rule for container names (IsDNS1123Label)
        raise AdmissionDenied(
            f"gpudra: pod field {path}.name is {name[:80]!r}: a container name must be a lowercase RFC 1123 label "
            "(at most 63 of a-z, 0-9 and '-', starting and ending with a letter or digit)",
            code=400,
            reason="BadRequest",
        )
    resources = _object(container.get("resources", _ABSENT), f"{path}.resources")
    requested = _quantities(resources.get("requests", _ABSENT), f"{path}.resources.requests", name)
    limited = _quantities(resources.get("limits", _ABSENT), f"{path}.resources.limits", name)
    claims = resources.get("claims", _ABSENT)
    if claims is not _ABSENT:
        if not isinstance(claims, list):
            raise _bad(f"{path}.resources.claims", "a list", claims)
        for i, claim in enumerate(claims):
            _object(claim, f"{path}.resources.claims[{i}]", optional=False)
    return max(requested, limited)


def check_pod_shape(pod: dict[str, Any]) -> None:
    """Raise `AdmissionDenied` (code 400) naming the first field gpudra reads whose JSON type is wrong."""
    metadata = _object(pod.get("metadata", _ABSENT), "metadata", optional=False)
    for key in ("name", "generateName", "namespace"):
        if metadata.get(key) is not None and not isinstance(metadata[key], str):
            raise _bad(f"metadata.{key}", "a string", metadata[key])
    _string_map(metadata.get("labels", _ABSENT), "metadata.labels")
    _string_map(metadata.get("annotations", _ABSENT), "metadata.annotations")
    spec = _object(pod.get("spec", _ABSENT), "spec", optional=False)
    devices = 0
    for field in _CONTAINER_LISTS:
        containers = spec.get(field, _ABSENT)
        if containers is _ABSENT:
            continue
        if not isinstance(containers, list):
            raise _bad(f"spec.{field}", "a list", containers)
        for i, container in enumerate(containers):
            devices += _container(container, f"spec.{field}[{i}]")
    if devices > MAX_DEVICES_PER_CLAIM:
        raise AdmissionDenied(
            f"gpudra: the pod's containers ask for {devices} GPU devices in all; its claim can allocate at most "
            f"{MAX_DEVICES_PER_CLAIM} (AllocationResultsMaxSize)",
            code=400,
            reason="BadRequest",
        )
    claims = spec.get("resourceClaims", _ABSENT)
    if claims is not _ABSENT:
        if not isinstance(claims, list):
            raise _bad("spec.resourceClaims", "a list", claims)
        for i, claim in enumerate(claims):
            _object(claim, f"spec.resourceClaims[{i}]", optional=False)
