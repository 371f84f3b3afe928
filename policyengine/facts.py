"""What a pod asks of GPUs, read once: legacy extended resources and DRA claims per container.

The engine hands these facts to CEL as the `gpu` variable and translation uses them to know what to remove,
so both agree on what counts as a legacy GPU resource (`nvidia.com/gpu`, `nvidia.com/mig-<profile>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from dra.durations import format_go_duration
from dra.errors import InputError, QuantityError
from dra.quantity import Quantity
from dra.sizing import (
    MAX_MEMORY_BYTES,
    ServerConfig,
    SizingDecision,
    SizingLookup,
    estimate_memory,
    read_container,
    resolve_sizing,
)
from workloads import pod_owner

# resource.k8s.io/v1 AllocationResultsMaxSize: one claim allocates at most this many devices, and a pod's legacy
# GPUs all go into one claim (defined once, with the admission server's shape check)
from .pod_shape import MAX_DEVICES_PER_CLAIM, quantity_value

__all__ = [
    "CONTAINER_KINDS",
    "DERIVED_FIELDS",
    "HAMI_RESOURCES",
    "LEGACY_GPU",
    "MAX_DEVICES_PER_CLAIM",
    "MIG_PREFIX",
    "VRAM_ANNOTATION",
    "ContainerFacts",
    "FrozenCounts",
    "PodFacts",
    "extended_resource_pairs",
    "is_legacy_resource",
    "pod_facts",
    "sizing_cel",
]

LEGACY_GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
# Ephemeral containers cannot declare resources, so these are the only places GPUs can be asked for.
CONTAINER_KINDS = ("initContainers", "containers")
# HAMi (Project-HAMi/HAMi) resources beside `nvidia.com/gpu`, with their `gpu.containers[].hami` key and the largest
# value they take: device memory per GPU in MiB, a percentage of the device's memory, a percentage of its SMs.
HAMI_RESOURCES: dict[str, tuple[str, int | None]] = {
    "nvidia.com/gpumem": ("gpumem", MAX_MEMORY_BYTES // 2**20),
    "nvidia.com/gpumem-percentage": ("gpumemPercentage", 100),
    "nvidia.com/gpucores": ("gpucores", 100),
}


VRAM_ANNOTATION = "gpudra.io/vram"
_MiB = 2**20
# A container with no legacy GPU (claims only) is not sized.
NO_SIZING = SizingDecision(None, "default", reason="no legacy GPU request: not sized")


def _mib(value: int) -> int:
    return -(-value // _MiB)


def sizing_cel(sizing: SizingDecision) -> dict[str, Any]:
    """The `sizing` CEL map of one container (documented in docs/policy-authoring.md): sizes are rounded up to whole
    MiB, so `vram` and `vramBytes` agree."""
    vram = _mib(sizing.vram_bytes) if sizing.vram_bytes else 0
    min_device = _mib(sizing.min_device_bytes) if sizing.min_device_bytes else 0
    model = _mib(sizing.model_bytes) if sizing.model_bytes else 0
    return {
        "vram": f"{vram}Mi" if vram else "",
        "vramBytes": vram * _MiB,
        "source": sizing.source,
        "samples": sizing.samples,
        "window": format_go_duration(sizing.window_seconds) if sizing.window_seconds > 0 else "",
        "reason": sizing.reason,
        "minDeviceMemory": f"{min_device}Mi" if min_device else "",
        "minDeviceMemoryBytes": min_device * _MiB,
        "estimate": f"{model}Mi" if model else "",
        "estimateBytes": model * _MiB,
        "memoryUtilization": float(sizing.memory_utilization),
        "server": sizing.server,
        "model": sizing.model,
        "pressure": sizing.pressure,
    }


def is_legacy_resource(name: str) -> bool:
    """True for the device plugin's resources that DRA claims replace."""
    return name == LEGACY_GPU or (name.startswith(MIG_PREFIX) and len(name) > len(MIG_PREFIX))


class FrozenCounts(dict[str, int]):
    """A read-only resource name -> count mapping that is hashable, so the facts holding it are their own memo keys.

    A dict underneath, so reading it (several times per evaluation) costs what reading a dict does; the methods that
    would change it raise. Two are equal when they hold the same items in the same order, the order CEL sees.
    """

    __slots__ = ("_hash",)

    def __init__(self, items: Mapping[str, int] | None = None) -> None:
        super().__init__(items or ())
        self._hash = hash(tuple(super().items()))

    def __hash__(self) -> int:  # type: ignore[override]
        return self._hash

    def __eq__(self, other: object) -> bool:
        if type(other) is FrozenCounts:
            return self._hash == other._hash and tuple(self.items()) == tuple(other.items())
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __reduce__(self) -> tuple[type[FrozenCounts], tuple[dict[str, int]]]:
        return FrozenCounts, (dict(self),)

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("FrozenCounts cannot be changed")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __repr__(self) -> str:
        return f"FrozenCounts({dict.__repr__(self)})"


_NO_COUNTS = FrozenCounts()


@dataclass(frozen=True, slots=True)
class ContainerFacts:
    """One container's GPU-related resources; `legacy` maps a resource name to its device count.

    Its own memo key: the generated `__eq__` and `__hash__` cover every field (its mappings are `FrozenCounts`), so
    two containers' facts are equal exactly when everything read from them is.
    """

    name: str
    kind: str
    index: int
    sidecar: bool
    legacy: FrozenCounts
    in_requests: tuple[str, ...]
    in_limits: tuple[str, ...]
    claims: tuple[str, ...]
    # HAMi resources (`HAMI_RESOURCES`) of a container that asks for `nvidia.com/gpu`: resource name -> value.
    hami: FrozenCounts = _NO_COUNTS
    # Which sizing source won for this container and why (`dra.sizing.resolve_sizing`).
    sizing: SizingDecision = NO_SIZING

    @property
    def pointer(self) -> str:
        return f"/spec/{self.kind}/{self.index}"

    @property
    def count(self) -> int:
        return sum(self.legacy.values())

    @property
    def requests_only(self) -> list[str]:
        return sorted(set(self.in_requests) - set(self.in_limits))

    def to_cel(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "index": self.index,
            "sidecar": self.sidecar,
            "legacy": dict(self.legacy),
            "count": self.count,
            "requestsOnly": self.requests_only,
            "limitsOnly": sorted(set(self.in_limits) - set(self.in_requests)),
            "claims": list(self.claims),
            "hami": {HAMI_RESOURCES[name][0]: value for name, value in self.hami.items()},
            "sizing": sizing_cel(self.sizing),
        }


# PodFacts fields computed from the others in `__post_init__`: the only fields its equality leaves out.
DERIVED_FIELDS = frozenset({"legacy_containers"})


@dataclass(frozen=True, slots=True)
class PodFacts:
    """GPU facts of one pod: the containers that hold legacy resources or DRA claims, in pod order.

    Its own memo key (`_memo.PolicyMemo.gpu`): the generated `__eq__` and `__hash__` cover every field but those
    derived from the others (`DERIVED_FIELDS`), so two pods' facts are equal exactly when their `gpu` values are.
    """

    containers: tuple[ContainerFacts, ...]
    pod_claims: tuple[str, ...]
    # GPU devices the ResourceClaims and templates the pod names ask for (read by the webhook; 0 elsewhere).
    dra_devices: int = 0
    # (legacy resource, DeviceClass) pairs of the cluster's KEP-5004 mapping (DeviceClass.spec.extendedResourceName),
    # sorted; read by the webhook from the DeviceClasses, given to explain by an option, empty elsewhere.
    extended_resources: tuple[tuple[str, str], ...] = ()
    # The containers with legacy GPU resources, in pod order (read several times per evaluation: computed once).
    # Derived from `containers`, so left out of the comparison (`DERIVED_FIELDS`).
    legacy_containers: tuple[ContainerFacts, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "legacy_containers", tuple(c for c in self.containers if c.legacy))

    @property
    def sizing(self) -> SizingDecision:
        """The pod-level sizing (`gpu.sizing`): the GPU container with the largest sized memory, else the first."""
        sized = [c for c in self.containers if c.legacy]
        if not sized:
            return NO_SIZING
        return max(sized, key=lambda c: c.sizing.vram_bytes or 0).sizing

    @property
    def uses_dra(self) -> bool:
        return bool(self.pod_claims) or any(c.claims for c in self.containers)

    @property
    def total(self) -> int:
        return sum(c.count for c in self.containers)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What sizing could not read, per GPU container (`SizingDecision.warnings`), for the decision's warnings."""
        return tuple(f"container {c.name!r}: {w}" for c in self.containers for w in c.sizing.warnings)

    def to_cel(self) -> dict[str, Any]:
        """The `gpu` CEL variable (documented in docs/policy-authoring.md)."""
        resources: dict[str, int] = {}
        for container in self.containers:
            for name, count in container.legacy.items():
                resources[name] = resources.get(name, 0) + count
        return {
            "legacy": bool(resources),
            "dra": self.uses_dra,
            "total": sum(resources.values()),
            "max": max((c.count for c in self.containers), default=0),
            "resources": resources,
            "claims": list(self.pod_claims),
            "draDevices": self.dra_devices,
            "extendedResourceMapping": dict(self.extended_resources),
            "requestsOnly": [c.name for c in self.containers if c.requests_only],
            "mixed": [c.name for c in self.containers if c.legacy and c.claims],
            "hami": any(c.hami for c in self.containers),
            "containers": [c.to_cel() for c in self.containers],
            "sizing": sizing_cel(self.sizing),
        }


def _count(
    value: Any, where: str, limit: int | None = MAX_DEVICES_PER_CLAIM, what: str = "devices", container: str = ""
) -> int:
    """A whole number from 0 to `limit`; the error names the field, and `container` where it is over the limit."""
    if type(value) is int and 0 <= value <= (limit if limit is not None else value):
        return value
    if type(value) is str and 0 < len(value) <= 18 and value.isascii() and value.isdigit() and value[0] != "0":
        number = int(value)  # ASCII digits, as the API server writes a count: the quantity's value, without a parse
        if limit is None or number <= limit:
            return number
    number = _whole(value, where, what)
    if limit is not None and number > limit:
        if what == "devices":
            raise InputError(
                f"{where}: container {container!r} asks for {value!r}, {number} GPU devices; one DRA claim "
                f"allocates at most {limit} (resource.k8s.io/v1 AllocationResultsMaxSize)"
            )
        raise InputError(
            f"{where}: container {container!r}: expected a whole number of {what} from 0 to {limit} (got {value!r})"
        )
    return number


def _whole(value: Any, where: str, what: str) -> int:
    """`value` read once as a quantity (`pod_shape.quantity_value`, as the webhook's shape check reads it): a whole
    number >= 0, else `InputError` naming `where`, caused by the `QuantityError` when it is no quantity at all."""
    if type(value) is int and value >= 0:
        return value
    shown = _shown(value) if isinstance(value, str) else repr(value)
    try:
        number = quantity_value(value)
    except QuantityError as exc:
        raise InputError(f"{where}: expected a whole number of {what} (got {shown}, not a quantity)") from exc
    if number.denominator != 1 or number < 0:
        raise InputError(f"{where}: expected a whole number of {what} (got {shown})")
    return int(number)


_EMPTY: dict[str, Any] = {}  # shared, never mutated


def _bad(where: str, what: str, value: Any) -> InputError:
    return InputError(f"{where}: expected {what} (got {type(value).__name__})")


def _container(container: Any, kind: str, index: int) -> ContainerFacts | None:
    # The hot path allocates nothing for containers without GPU resources; field paths are built on error only.
    if type(container) is not dict:
        raise _bad(f"spec.{kind}[{index}]", "a mapping", container)
    resources = container.get("resources")
    if not resources:
        return None
    if type(resources) is not dict:
        raise _bad(f"spec.{kind}[{index}].resources", "a mapping", resources)
    requests = resources.get("requests") or _EMPTY
    limits = resources.get("limits") or _EMPTY
    claims = resources.get("claims") or ()
    for part, values in (("requests", requests), ("limits", limits)):
        if type(values) is not dict:
            raise _bad(f"spec.{kind}[{index}].resources.{part}", "a mapping", values)
    in_requests = [n for n in requests if n == LEGACY_GPU or n.startswith(MIG_PREFIX)]
    in_limits = [n for n in limits if n == LEGACY_GPU or n.startswith(MIG_PREFIX)]
    if not (in_requests or in_limits or claims):
        return None
    if type(claims) is not list and claims != ():
        raise _bad(f"spec.{kind}[{index}].resources.claims", "a list", claims)
    where = f"spec.{kind}[{index}].resources"
    cname = str(container.get("name", ""))
    legacy: dict[str, int] = {}
    for name in in_requests:
        if is_legacy_resource(name):
            legacy[name] = _count(requests[name], f"{where}.requests[{name}]", container=cname)
    for name in in_limits:
        # Limits win: for extended resources Kubernetes requires requests == limits when both are set.
        if is_legacy_resource(name):
            legacy[name] = _count(limits[name], f"{where}.limits[{name}]", container=cname)
    # A count of 0 asks for nothing: it is left in place and no DRA request is made for it.
    legacy = {name: legacy[name] for name in sorted(legacy) if legacy[name]}
    if not (legacy or claims):
        return None
    hami: dict[str, int] = {}
    if legacy:
        for part, values in (("requests", requests), ("limits", limits)):  # limits win, as above
            for name in HAMI_RESOURCES.keys() & values.keys():
                unit = "MiB" if name == "nvidia.com/gpumem" else "percent"
                limit = HAMI_RESOURCES[name][1]
                hami[name] = _count(values[name], f"{where}.{part}[{name}]", limit, unit, cname)
        # 0 is HAMi's "not set" (gpumem, gpucores) or asks for nothing (gpumem-percentage).
        hami = {name: hami[name] for name in HAMI_RESOURCES if hami.get(name)}
    return ContainerFacts(
        name=cname,
        kind=kind,
        index=index,
        sidecar=kind == "initContainers" and container.get("restartPolicy") == "Always",
        legacy=FrozenCounts(legacy) if legacy else _NO_COUNTS,
        in_requests=tuple(sorted(n for n in in_requests if n in legacy)),
        in_limits=tuple(sorted(n for n in in_limits if n in legacy)),
        claims=tuple(str(c.get("name", "")) for c in claims if isinstance(c, dict)),
        hami=FrozenCounts(hami) if hami else _NO_COUNTS,
    )


def _annotation_vram(pod: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """The `gpudra.io/vram` annotation's text and bytes (None bytes: absent, or not a positive quantity)."""
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or VRAM_ANNOTATION not in annotations:
        return None, None
    text = str(annotations[VRAM_ANNOTATION])
    try:
        value = Quantity.parse(text).value
    except QuantityError:  # the policy's validation denies it
        return text, None
    size = int(-(-value.numerator // value.denominator))
    if size > MAX_MEMORY_BYTES:
        raise InputError(
            f"metadata.annotations[{VRAM_ANNOTATION}]: {_shown(text)} is more memory than a quantity of bytes holds "
            f"(at most {MAX_MEMORY_BYTES} bytes, just under 8Ei)"
        )
    return text, (size if value > 0 else None)


def _shown(text: str, limit: int = 64) -> str:
    """`text` quoted for a message, cut to `limit` characters: an annotation may hold 256 KiB."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _observed(
    lookup: SizingLookup | None, namespace: str, owner: tuple[str, str] | None, container: str
) -> tuple[Any, str]:
    if lookup is None or owner is None or not namespace:
        return None, ""
    try:
        return lookup.observed(namespace, owner[0], owner[1], container), ""
    except Exception as exc:  # a broken lookup must never fail admission: the pod is sized without it
        return None, f"observed lookup failed ({type(exc).__name__}: {exc}); "


def _size(
    spec: Mapping[str, Any],
    facts: ContainerFacts,
    annotation: tuple[str | None, int | None],
    lookup: SizingLookup | None,
    namespace: str,
    owner: tuple[str, str] | None,
) -> SizingDecision:
    reading = read_container(spec[facts.kind][facts.index])
    decision = _decide_size(reading.server, facts, annotation, lookup, namespace, owner)
    if not reading.warnings:
        return decision
    # Said first in the reason (what `gpudra policy explain` and audit warnings show) and kept for the decision.
    notes = "; ".join(reading.warnings)
    return replace(decision, warnings=reading.warnings, reason=f"{notes}; {decision.reason}")


def _decide_size(
    server: ServerConfig | None,
    facts: ContainerFacts,
    annotation: tuple[str | None, int | None],
    lookup: SizingLookup | None,
    namespace: str,
    owner: tuple[str, str] | None,
) -> SizingDecision:
    model = estimate_memory(server) if server is not None else None
    observed, failure = _observed(lookup, namespace, owner, facts.name)
    text, vram = annotation
    label = f"annotation {VRAM_ANNOTATION}"
    if text is not None and vram is None:
        decision = resolve_sizing(None, observed, model, None)
        return SizingDecision(
            None, "annotation", reason=f"{label} {_shown(text)} is not a positive quantity (the policy rejects it)",
            model_bytes=decision.model_bytes, min_device_bytes=decision.min_device_bytes,
            memory_utilization=decision.memory_utilization, server=decision.server, model=decision.model,
        )  # fmt: skip
    if vram is None and "nvidia.com/gpumem" in facts.hami:
        vram, label = facts.hami["nvidia.com/gpumem"] * _MiB, "HAMi nvidia.com/gpumem"
    decision = resolve_sizing(vram, observed, model, None, annotation_label=label)
    if failure:
        return replace(decision, reason=failure + decision.reason)
    return decision


def extended_resource_pairs(mapping: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The legacy GPU resources of a KEP-5004 mapping (extended resource -> DeviceClass), sorted: what
    `gpu.extendedResourceMapping` shows (other extended resources are no GPU policy's business)."""
    if not mapping:
        return ()
    return tuple(sorted((r, c) for r, c in mapping.items() if is_legacy_resource(r) and isinstance(c, str)))


def pod_facts(
    pod: Mapping[str, Any],
    *,
    dra_devices: int = 0,
    sizing: SizingLookup | None = None,
    namespace: str = "",
    extended_resources: Mapping[str, str] | None = None,
) -> PodFacts:
    """Read the GPU facts of `pod` (Kubernetes JSON form); raises `InputError` naming the bad field.
    `dra_devices`: the GPU devices its named claims and templates ask for (`webhook.dra_demand`);
    `extended_resources`: the cluster's KEP-5004 mapping, extended resource -> DeviceClass. Each legacy GPU
    container is sized (`ContainerFacts.sizing`): annotation > observed (`sizing`, looked up by `namespace` and the
    pod's workload owner) > model estimate > default."""
    spec = pod.get("spec") or _EMPTY
    if type(spec) is not dict:
        raise _bad("spec", "a mapping", spec)
    found: list[ContainerFacts] = []
    for kind in CONTAINER_KINDS:
        entries = spec.get(kind) or []
        if not isinstance(entries, list):
            raise InputError(f"spec.{kind}: expected a list (got {type(entries).__name__})")
        for index, container in enumerate(entries):
            facts = _container(container, kind, index)
            if facts is not None:
                found.append(facts)
    pod_claims = spec.get("resourceClaims") or []
    if not isinstance(pod_claims, list):
        raise InputError(f"spec.resourceClaims: expected a list (got {type(pod_claims).__name__})")
    names = tuple(str(c.get("name", "")) for c in pod_claims if isinstance(c, dict))
    total = sum(c.count for c in found)
    if total > MAX_DEVICES_PER_CLAIM:
        counts = ", ".join(f"{c.name!r} {c.count}" for c in found if c.count)
        raise InputError(
            f"the pod's containers ask for {total} GPU devices in all ({counts}); they go into one DRA claim, which "
            f"allocates at most {MAX_DEVICES_PER_CLAIM} (resource.k8s.io/v1 AllocationResultsMaxSize)"
        )
    if any(c.legacy for c in found):
        annotation = _annotation_vram(pod)
        owner = pod_owner(pod) if sizing is not None else None
        if not namespace:
            meta = pod.get("metadata")
            namespace = str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
        found = [
            replace(c, sizing=_size(spec, c, annotation, sizing, namespace, owner)) if c.legacy else c for c in found
        ]
    return PodFacts(tuple(found), names, dra_devices, extended_resource_pairs(extended_resources))
