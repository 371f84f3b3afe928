"""The allocator's own read-only view of slices, classes, claims and nodes, parsed once from Kubernetes JSON.

Inputs are `dra.model` objects (anything with `to_k8s()`) or plain dicts in the resource.k8s.io/v1 JSON
shape. Parsing them into slotted records keeps the search loop free of pydantic attribute access and lets
an `Allocator` reuse the parse across thousands of calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from dra.errors import InputError, QuantityError
from dra.quantity import Quantity

__all__ = [
    "Amount",
    "Attr",
    "Capacity",
    "Claim",
    "DeviceClass",
    "Node",
    "Request",
    "SliceDevice",
    "Slice",
    "as_dict",
    "canonical_quantity",
    "format_quantity",
    "parse_quantity",
]

# An exact amount: an int when the quantity is whole (fast), else a Fraction.
Amount = int | Fraction


@lru_cache(maxsize=65536)
def parse_quantity(text: str) -> Amount:
    """The value of a Kubernetes quantity string (`80Gi`, `1500m`, `1e3`) as `dra.quantity` reads it, an int when
    whole (cached: the search loop asks for the same few strings again and again)."""
    try:
        value = Quantity.parse(text.strip()).value
    except QuantityError as exc:
        raise InputError(f"quantity: expected a Kubernetes quantity such as 80Gi (got {text!r}): {exc}") from None
    return int(value) if value.denominator == 1 else value


def canonical_quantity(text: str) -> str:
    """Kubernetes' canonical spelling of a quantity."""
    return str(Quantity.parse(text))


def format_quantity(value: Amount, like: str) -> str:
    """The canonical text of `value` in the format of the quantity `like` (BinarySI if it has a binary suffix)."""
    fmt = Quantity.parse(like.strip()).format
    if isinstance(value, int):
        return str(Quantity.from_scaled(value, 0, fmt))
    return str(Quantity.from_scaled(math.ceil(value * 10**9), -9, fmt))  # quantities hold nano precision


def as_dict(obj: Any) -> dict[str, Any]:
    """A Kubernetes object as its JSON dict (accepts `dra.model` objects and dicts)."""
    if isinstance(obj, dict):
        return obj
    to_k8s = getattr(obj, "to_k8s", None)
    if callable(to_k8s):
        data = to_k8s()
        if isinstance(data, dict):
            return data
    raise InputError(f"expected a Kubernetes object or dict (got {type(obj).__name__})")


class Attr:
    """One device attribute: kind is int/bool/string/version; list kinds hold a tuple."""

    __slots__ = ("kind", "value", "is_list", "values")

    def __init__(self, kind: str, value: Any, is_list: bool = False) -> None:
        self.kind = kind
        self.value = value
        self.is_list = is_list
        self.values: frozenset[Any] = frozenset(value) if is_list else frozenset((value,))

    def as_set(self) -> frozenset[Any]:
        return self.values

    def __repr__(self) -> str:
        return f"Attr({self.kind!r}, {self.value!r}{', list' if self.is_list else ''})"


_SCALAR_KINDS = frozenset(("int", "bool", "string", "version"))
_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


def _attr(raw: dict[str, Any]) -> Attr | None:
    # Exactly one field is set in valid input; upstream's attributeAsSet prefers the list forms.
    found: Attr | None = None
    for key, value in raw.items():
        if key in _LIST_KINDS and value:
            return Attr(_LIST_KINDS[key], tuple(value), True)
        if found is None and key in _SCALAR_KINDS and value is not None:
            found = Attr(key, value)
    return found


@dataclass(slots=True, eq=False)
class Capacity:
    """A device capacity with its optional requestPolicy, values exact."""

    value: Amount
    text: str
    default: tuple[Amount, str] | None = None
    valid_values: tuple[tuple[Amount, str], ...] | None = None
    range_min: tuple[Amount, str] | None = None
    range_max: tuple[Amount, str] | None = None
    range_step: tuple[Amount, str] | None = None
    has_policy: bool = False
    has_range: bool = False


def _q(raw: Any) -> tuple[Amount, str]:
    text = str(raw)
    return parse_quantity(text), text


def _capacity(raw: dict[str, Any]) -> Capacity:
    value, text = _q(raw.get("value", "0"))
    policy = raw.get("requestPolicy")
    if not policy:
        return Capacity(value, text)
    rng = policy.get("validRange")
    vv = policy.get("validValues")
    return Capacity(
        value,
        text,
        default=_q(policy["default"]) if policy.get("default") is not None else None,
        valid_values=tuple(_q(v) for v in vv) if vv is not None else None,
        range_min=_q(rng["min"]) if rng and rng.get("min") is not None else None,
        range_max=_q(rng["max"]) if rng and rng.get("max") is not None else None,
        range_step=_q(rng["step"]) if rng and rng.get("step") is not None else None,
        has_policy=True,
        has_range=rng is not None,
    )


@dataclass(slots=True, eq=False)
class SliceDevice:
    """One device of a slice; identity (not value) is the cache key for selector results."""

    name: str
    raw: dict[str, Any]
    attributes: dict[str, Attr]
    capacity: dict[str, Capacity]
    consumes: tuple[tuple[str, tuple[tuple[str, Amount], ...]], ...]
    taints: tuple[tuple[str, str, str], ...]  # key, value, effect
    node_name: str | None
    all_nodes: bool
    node_selector: dict[str, Any] | None
    allow_multiple: bool | None
    binds_to_node: bool
    binding_conditions: tuple[str, ...] | None
    binding_failure_conditions: tuple[str, ...] | None
    cel_value: Any = None  # the CEL `device` variable, built on first selector evaluation
    plain_capacity: bool = True  # no capacity has a requestPolicy (the capacity check has a fast path)


@dataclass(slots=True, eq=False)
class Slice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str | None
    node_selector: dict[str, Any] | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: list[SliceDevice]
    shared_counters: list[tuple[str, dict[str, Amount]]]
    uses_compatibility_groups: bool = False
    skips_node_operations: bool = False


def _device(raw: dict[str, Any]) -> SliceDevice:
    attributes = {}
    for name, value in (raw.get("attributes") or {}).items():
        attr = _attr(value or {})
        if attr is not None:
            attributes[name] = attr
    consumes = tuple(
        (
            c.get("counterSet", ""),
            tuple((n, parse_quantity(str((v or {}).get("value", "0")))) for n, v in (c.get("counters") or {}).items()),
        )
        for c in raw.get("consumesCounters") or []
    )
    taints = tuple((t.get("key", ""), t.get("value", ""), t.get("effect", "")) for t in raw.get("taints") or [])
    bc = raw.get("bindingConditions")
    bfc = raw.get("bindingFailureConditions")
    capacity = {n: _capacity(c or {}) for n, c in (raw.get("capacity") or {}).items()}
    return SliceDevice(
        name=raw.get("name", ""),
        raw=raw,
        attributes=attributes,
        capacity=capacity,
        plain_capacity=not any(c.has_policy for c in capacity.values()),
        consumes=consumes,
        taints=taints,
        node_name=raw.get("nodeName") or None,
        all_nodes=bool(raw.get("allNodes")),
        node_selector=raw.get("nodeSelector"),
        allow_multiple=raw.get("allowMultipleAllocations"),
        binds_to_node=bool(raw.get("bindsToNode")),
        binding_conditions=tuple(bc) if bc is not None else None,
        binding_failure_conditions=tuple(bfc) if bfc is not None else None,
    )


def parse_slice(obj: Any) -> Slice:
    data = as_dict(obj)
    spec = data.get("spec") or {}
    pool = spec.get("pool") or {}
    return Slice(
        name=(data.get("metadata") or {}).get("name", ""),
        driver=spec.get("driver", ""),
        pool=pool.get("name", ""),
        generation=int(pool.get("generation", 0) or 0),
        slice_count=int(pool.get("resourceSliceCount", 0) or 0),
        node_name=spec.get("nodeName") or None,
        node_selector=spec.get("nodeSelector"),
        all_nodes=bool(spec.get("allNodes")),
        per_device_node_selection=bool(spec.get("perDeviceNodeSelection")),
        devices=[_device(d) for d in spec.get("devices") or []],
        skips_node_operations=bool(spec.get("skipNodeOperations")),
        uses_compatibility_groups=any(
            c.get("compatibilityGroups") for d in spec.get("devices") or [] for c in d.get("consumesCounters") or []
        ),
        shared_counters=[
            (
                cs.get("name", ""),
                {n: parse_quantity(str((v or {}).get("value", "0"))) for n, v in (cs.get("counters") or {}).items()},
            )
            for cs in spec.get("sharedCounters") or []
        ],
    )


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...]  # None: a selector that is not CEL
    config: tuple[dict[str, Any], ...]
    raw: dict[str, Any]


def parse_class(obj: Any) -> DeviceClass:
    data = as_dict(obj)
    spec = data.get("spec") or {}
    return DeviceClass(
        name=(data.get("metadata") or {}).get("name", ""),
        selectors=tuple(_selector(s) for s in spec.get("selectors") or []),
        config=tuple(spec.get("config") or []),
        raw=data,
    )


def _selector(raw: dict[str, Any]) -> str | None:
    cel = (raw or {}).get("cel")
    if not cel:
        return None
    expr = cel.get("expression")
    return expr if isinstance(expr, str) else None


@dataclass(frozen=True, slots=True)
class Request:
    """A request (`exactly`) or one subrequest of `firstAvailable`; `parent` is the main request's name."""

    name: str
    parent: str | None
    class_name: str
    selectors: tuple[str | None, ...]
    mode: str
    count: int
    admin_access: bool | None
    tolerations: tuple[dict[str, Any], ...]
    capacity: dict[str, tuple[Amount, str]] | None
    has_capacity: bool
    derived: bool = False  # derivedAttributes (DRADerivedAttributes, not implemented)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


def _request(raw: dict[str, Any], parent: str | None, allow_admin: bool) -> Request:
    mode = raw.get("allocationMode") or "ExactCount"
    count = raw.get("count")
    if count is None:
        count = 1 if mode == "ExactCount" else 0
    cap = raw.get("capacity")
    requests = (cap or {}).get("requests")
    return Request(
        name=raw.get("name", ""),
        parent=parent,
        class_name=raw.get("deviceClassName", ""),
        selectors=tuple(_selector(s) for s in raw.get("selectors") or []),
        mode=mode,
        count=int(count),
        admin_access=raw.get("adminAccess") if allow_admin else None,
        # apiserver defaulting: an empty toleration operator means Equal (it shows in the results).
        tolerations=tuple(t if t.get("operator") else {**t, "operator": "Equal"} for t in raw.get("tolerations") or []),
        capacity={n: _q(v) for n, v in requests.items()} if requests is not None else None,
        has_capacity=cap is not None,
        derived=bool(raw.get("derivedAttributes")),
    )


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    name: str
    exact: Request | None
    subrequests: tuple[Request, ...]


@dataclass(frozen=True, slots=True)
class Claim:
    name: str
    namespace: str
    requests: tuple[ClaimRequest, ...]
    constraints: tuple[dict[str, Any], ...]
    config: tuple[dict[str, Any], ...]
    raw: dict[str, Any]
    allocation: dict[str, Any] | None = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def parse_claim(obj: Any) -> Claim:
    data = as_dict(obj)
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    if "devices" not in spec and "spec" in spec:  # a ResourceClaimTemplate
        spec = spec["spec"] or {}
    devices = spec.get("devices") or {}
    requests = []
    for raw in devices.get("requests") or []:
        name = raw.get("name", "")
        exact = raw.get("exactly")
        subs = raw.get("firstAvailable") or []
        requests.append(
            ClaimRequest(
                name=name,
                exact=_request({**exact, "name": name}, None, True) if exact is not None else None,
                subrequests=tuple(_request(s, name, False) for s in subs),
            )
        )
    return Claim(
        name=meta.get("name", ""),
        namespace=meta.get("namespace", ""),
        requests=tuple(requests),
        constraints=tuple(devices.get("constraints") or []),
        config=tuple(devices.get("config") or []),
        raw=data,
        allocation=(data.get("status") or {}).get("allocation"),
    )


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: tuple[tuple[str, str], ...] = field(default=())

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


def parse_node(obj: Any) -> Node | None:
    if obj is None:
        return None
    if isinstance(obj, Node):
        return obj
    if isinstance(obj, str):
        return Node(obj)
    data = as_dict(obj)
    meta = data.get("metadata") or {}
    return Node(meta.get("name", ""), tuple(sorted((meta.get("labels") or {}).items())))
