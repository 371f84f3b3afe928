"""What a pod asks of GPUs, read once: legacy extended resources and DRA claims per container.

The engine hands these facts to CEL as the `gpu` variable and translation uses them to know what to remove,
so both agree on what counts as a legacy GPU resource (`nvidia.com/gpu`, `nvidia.com/mig-<profile>`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    "DEFAULT_SCHEDULER",
    "DERIVED_FIELDS",
    "HAMI_RESOURCES",
    "LEGACY_GPU",
    "MAX_DEVICES_PER_CLAIM",
    "MIG_PREFIX",
    "SHARED_GPU",
    "SHARED_SUFFIX",
    "VRAM_ANNOTATION",
    "ContainerFacts",
    "FrozenCounts",
    "PodFacts",
    "extended_resource_pairs",
    "is_legacy_resource",
    "pod_facts",
    "reusing_targets",
    "sizing_cel",
]

LEGACY_GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
# The device plugin's time-slicing and MPS replicas under `renameByDefault: true` (NVIDIA/k8s-device-plugin
# api/config/v1 `ReplicatedResources.RenameByDefault`: "<resource>.shared"): a share of a GPU, not a whole one.
SHARED_SUFFIX = ".shared"
SHARED_GPU = LEGACY_GPU + SHARED_SUFFIX
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
# What the API server sets spec.schedulerName to when a pod leaves it out (k8s.io/api core/v1 DefaultSchedulerName).
DEFAULT_SCHEDULER = "default-scheduler"
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
    """True for the device plugin's resources that DRA claims replace: whole GPUs, MIG devices and their shared
    replicas (`<resource>.shared`, time-slicing or MPS with `renameByDefault`)."""
    base = name.removesuffix(SHARED_SUFFIX)
    return base == LEGACY_GPU or (base.startswith(MIG_PREFIX) and len(base) > len(MIG_PREFIX))


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
    # An init container's: the container whose claim request it shares (`reusing_targets`), "" for its own request;
    # `also`: the further requests it references (later containers', other init containers' extra requests, its own
    # extra request); `extra`: the devices of its own extra request, a copy of `reuses`'s request for the difference
    # when the requests it shares hold fewer devices than it asks for (0: none).
    reuses: str = ""
    also: tuple[str, ...] = ()
    extra: int = 0

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
            "reuses": self.reuses,
            "extra": self.extra,
        }


# PodFacts fields computed from the others in `__post_init__`: the only fields its equality leaves out.
DERIVED_FIELDS = frozenset({"legacy_containers", "claim_containers"})


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
    # In one container's view (`view`): the GPU devices of the whole pod's claim, which `gpu.total` shows there.
    pod_total: int | None = None
    # The pod's spec.schedulerName, as the API server defaults it (`pod.schedulerName`).
    scheduler_name: str = DEFAULT_SCHEDULER
    # The containers with legacy GPU resources, in pod order (read several times per evaluation: computed once),
    # and those of them with a request of their own (init containers that reuse another's request left out).
    # Derived from `containers`, so left out of the comparison (`DERIVED_FIELDS`).
    legacy_containers: tuple[ContainerFacts, ...] = field(init=False, repr=False, compare=False)
    claim_containers: tuple[ContainerFacts, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        legacy = tuple(c for c in self.containers if c.legacy)
        object.__setattr__(self, "legacy_containers", legacy)
        object.__setattr__(self, "claim_containers", tuple(c for c in legacy if not c.reuses))

    @property
    def joined_inits(self) -> tuple[ContainerFacts, ...]:
        """The init containers that share several requests or add an extra request (`reusing_targets`): in no
        container's view, joined to the pod's claim after every container's decision (`merge_decisions`)."""
        return tuple(c for c in self.legacy_containers if c.also)

    def view(self, container: ContainerFacts) -> PodFacts:
        """What one container's claim policy sees (decisions are per container): this container, the init
        containers that reuse its request alone and the containers without legacy GPUs; `gpu.total` stays the
        pod's. An init container asking for more than this container's request holds is left out: its devices
        never change this container's decision."""
        kept = tuple(
            c for c in self.containers if not c.legacy or c is container or (c.reuses == container.name and not c.also)
        )
        return PodFacts(
            kept, self.pod_claims, self.dra_devices, self.extended_resources, self.total, self.scheduler_name
        )

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
        """The GPU devices the pod's claim asks for: init containers that reuse requests count only their extra."""
        if self.pod_total is not None:
            return self.pod_total
        return sum(c.count for c in self.claim_containers) + sum(c.extra for c in self.legacy_containers)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What sizing could not read, per GPU container (`SizingDecision.warnings`), for the decision's warnings."""
        return tuple(f"container {c.name!r}: {w}" for c in self.containers for w in c.sizing.warnings)

    def to_cel(self) -> dict[str, Any]:
        """The `gpu` CEL variable (documented in docs/policy-authoring.md)."""
        resources: dict[str, int] = {}
        for container in self.claim_containers:
            for name, count in container.legacy.items():
                resources[name] = resources.get(name, 0) + count
        for container in self.legacy_containers:
            if container.extra:  # an init container with an extra request asks for one resource
                name = min(container.legacy)
                resources[name] = resources.get(name, 0) + container.extra
        return {
            "legacy": bool(resources),
            "dra": self.uses_dra,
            "total": self.total,
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
_PLAIN_LEGACY = frozenset({LEGACY_GPU, SHARED_GPU})


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
    in_requests = [n for n in requests if n in _PLAIN_LEGACY or n.startswith(MIG_PREFIX)]
    in_limits = [n for n in limits if n in _PLAIN_LEGACY or n.startswith(MIG_PREFIX)]
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
        if is_legacy_resource(name):
            count = _count(limits[name], f"{where}.limits[{name}]", container=cname)
            if name in legacy and legacy[name] != count:
                # The API server's own rule for extended resources (pkg/apis/core/validation
                # validateResourceRequirements): it refuses such a pod, so gpudra never guesses which one was meant.
                raise InputError(
                    f"{where}.requests[{name}]: container {cname!r}: Invalid value: {requests[name]!r}: must be "
                    f"equal to {name} limit of {limits[name]!r} (the API server refuses requests != limits for an "
                    "extended resource)"
                )
            legacy[name] = count
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
    found = reusing_targets(found)
    total = sum(c.extra if c.reuses else c.count for c in found)
    if total > MAX_DEVICES_PER_CLAIM:
        counts = ", ".join(
            f"{c.name!r} {c.extra if c.reuses else c.count}" for c in found if (c.extra if c.reuses else c.count)
        )
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
    scheduler = spec.get("schedulerName")
    scheduler_name = scheduler if isinstance(scheduler, str) and scheduler else DEFAULT_SCHEDULER
    return PodFacts(tuple(found), names, dra_devices, extended_resource_pairs(extended_resources), None, scheduler_name)


def _covers(target: ContainerFacts, init: ContainerFacts) -> bool:
    """Whether `target`'s request holds every device `init` asks for: the same resources, at least as many."""
    return all(target.legacy.get(name, 0) >= count for name, count in init.legacy.items())


def _plain_init(container: ContainerFacts) -> bool:
    return container.kind == "initContainers" and not container.sidecar


def reusing_targets(found: Sequence[ContainerFacts]) -> list[ContainerFacts]:
    """`found` (in pod order, init containers first) with each plain init container's reuse set, so that the claim
    asks for what the kubelet's device manager allocates: it hands an init container's devices to the containers
    started after it (pkg/kubelet/cm/devicemanager, `reusableDevices`), and restartable sidecars keep theirs.

    A plain init container shares (`reuses`) the request of the first container started after it (a later native
    sidecar, then an app container) whose request covers its devices. Failing that, when it asks for one resource,
    it shares the requests of the later containers asking for that resource alone, in pod order, until they hold
    as many devices as it asks for; what they lack comes from the extra requests of earlier init containers built
    on the same request, then from an extra request of its own (`extra`, named after it): init 2 GPUs + main 1 GPU
    asks for 2, as the device plugin allocates, not 3. Otherwise it keeps a request of its own."""
    out = list(found)
    extras: dict[str, list[tuple[str, int]]] = {}  # the request an extra copies -> [(its name, its devices)]
    for i, init in enumerate(out):
        if not _plain_init(init) or not init.legacy:
            continue
        later = [c for c in out[i + 1 :] if c.legacy and not _plain_init(c)]
        covering = next((c for c in later if _covers(c, init)), None)
        if covering is not None:
            out[i] = replace(init, reuses=covering.name)
            continue
        if len(init.legacy) != 1:
            continue
        ((resource, need),) = init.legacy.items()
        refs: list[str] = []
        held = 0
        for candidate in (c for c in later if set(c.legacy) == {resource}):
            if held >= need:
                break
            refs.append(candidate.name)
            held += candidate.legacy[resource]
        if not refs:
            continue
        for name, count in extras.get(refs[0], []):
            if held >= need:
                break
            refs.append(name)
            held += count
        extra = max(need - held, 0)
        if extra:
            extras.setdefault(refs[0], []).append((init.name, extra))
            refs.append(init.name)
        out[i] = replace(init, reuses=refs[0], also=tuple(refs[1:]), extra=extra)
    return out
