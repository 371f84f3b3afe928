"""Validation of ResourceClaim specs (requests, subrequests, constraints, config) and claim status."""

from __future__ import annotations

from typing import Any

from dra.model._corevalidation import (
    validate_conditions,
    validate_node_selector,
)
from dra.model._fields import Errors, Path
from dra.model._rules import (
    _L,
    _binding_parameters,
    _dns_label,
    _dns_subdomain,
    _driver_name,
    _fully_qualified_name,
    _opaque,
    _pool_name,
    _raw_extension,
    _selectors,
    _set,
    _skip_node_operations,
    _slice,
    _toleration,
    _tolerations,
    _uid,
)
from dra.model.allocation import (
    AllocatedDeviceStatus,
    AllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaimStatus,
)
from dra.model.claim import (
    DeviceClaim,
    DeviceConstraint,
    DeviceRequest,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaimSpec,
)


class _RequestNames:
    """Request names of a claim and, for firstAvailable requests, their subrequest names."""

    def __init__(self, claim: DeviceClaim) -> None:
        self.names: dict[str, set[str] | None] = {}
        for request in claim.requests or []:
            subs = request.first_available
            self.names[request.name] = {s.name for s in subs} if subs else None

    def has(self, ref: str) -> bool:
        segments = ref.split("/")
        if len(segments) > 2 or segments[0] not in self.names:
            return False
        if len(segments) == 1:
            return True
        subs = self.names[segments[0]]
        return subs is not None and segments[1] in subs


_REQUEST_REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)


def _request_ref(errs: Errors, ref: str, path: Path, names: _RequestNames) -> None:
    segments = ref.split("/")
    if len(segments) > 2:
        errs.invalid(path, ref, _REQUEST_REF_MSG)
        return
    for segment in segments:
        _dns_label(errs, segment, path)
    if not names.has(ref):
        errs.invalid(path, ref, _REQUEST_REF_MSG)


def _config_entry(errs: Errors, item: Any, names: _RequestNames, p: Path) -> None:
    """One `config` entry (of a claim's spec or its allocation status): the requests it names and its opaque part."""
    _set(
        errs,
        item.requests,
        _L["DeviceRequestsMaxSize"],
        lambda r, q: _request_ref(errs, r, q, names),
        lambda r: r,
        p.child("requests"),
    )
    _opaque(errs, item.opaque, p)


def _defaulted(request: DeviceRequest | DeviceSubRequest) -> dict[str, Any]:
    """A request as the API server shows a duplicate: its JSON after defaulting (allocationMode, count)."""
    data = request.to_k8s()
    targets = [data["exactly"]] if isinstance(data.get("exactly"), dict) else []
    if isinstance(request, DeviceSubRequest):
        targets = [data]
    targets += [s for s in data.get("firstAvailable") or [] if isinstance(s, dict)]
    for target in targets:
        target.setdefault("allocationMode", "ExactCount")
        if target["allocationMode"] == "ExactCount" and not target.get("count"):
            target["count"] = 1
    return data


def _allocation_mode(errs: Errors, mode: str | None, count: int | None, path: Path) -> None:
    # The API server defaults before it validates: an empty mode to ExactCount, and then a zero (= unset) count to
    # 1 (SetDefaults_ExactDeviceRequest), so only a negative count reaches the "greater than zero" rule.
    mode = mode or "ExactCount"
    count = count or 0
    if mode == "All":
        if count != 0:
            errs.invalid(path.child("count"), count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count < 0:
            errs.invalid(path.child("count"), count, "must be greater than zero")
    else:
        errs.not_supported(path.child("allocationMode"), mode, ["All", "ExactCount"])


def _device_class_ref(errs: Errors, name: str, path: Path) -> None:
    if not name:
        errs.required(path)
    else:
        _dns_subdomain(errs, name, path)


def _exact_request(errs: Errors, request: ExactDeviceRequest | DeviceSubRequest, path: Path) -> None:
    _device_class_ref(errs, request.device_class_name, path.child("deviceClassName"))
    _selectors(errs, request.selectors, path.child("selectors"))
    _allocation_mode(errs, request.allocation_mode, request.count, path)
    _tolerations(errs, request.tolerations, path.child("tolerations"))
    # `capacity.requests` has no create-time rules upstream (the 1.37 API server accepts bad names and negatives).


def _sub_request(errs: Errors, sub: DeviceSubRequest, path: Path) -> None:
    _dns_label(errs, sub.name, path.child("name"))
    _exact_request(errs, sub, path)


def _request(errs: Errors, request: DeviceRequest, path: Path) -> None:
    _dns_label(errs, request.name, path.child("name"))
    has_first = bool(request.first_available)
    has_exactly = request.exactly is not None
    if not has_first and not has_exactly:
        errs.required(path, "exactly one of `exactly` or `firstAvailable` is required")
    elif has_first and has_exactly:
        errs.invalid(
            path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        )
    elif has_first:
        _set(
            errs,
            request.first_available,
            _L["FirstAvailableDeviceRequestMaxSize"],
            lambda s, p: _sub_request(errs, s, p),
            lambda s: s.name,
            path.child("firstAvailable"),
            _defaulted,
        )
    elif request.exactly is not None:
        _exact_request(errs, request.exactly, path.child("exactly"))


def _constraint(errs: Errors, constraint: DeviceConstraint, path: Path, names: _RequestNames) -> None:
    _set(
        errs,
        constraint.requests,
        _L["DeviceRequestsMaxSize"],
        lambda r, p: _request_ref(errs, r, p, names),
        lambda r: r,
        path.child("requests"),
    )
    if constraint.match_attribute is not None and constraint.distinct_attribute is not None:
        errs.invalid(
            path,
            None,
            'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set',
        )
    elif constraint.match_attribute is not None:
        _fully_qualified_name(errs, constraint.match_attribute, path.child("matchAttribute"))
    elif constraint.distinct_attribute is not None:
        _fully_qualified_name(errs, constraint.distinct_attribute, path.child("distinctAttribute"))
    else:
        # Upstream's text, "but multiple fields are set" included, even though none is.
        errs.required(
            path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'
        )


def _device_claim(errs: Errors, claim: DeviceClaim, path: Path) -> None:
    names = _RequestNames(claim)
    _set(
        errs,
        claim.requests,
        _L["DeviceRequestsMaxSize"],
        lambda r, p: _request(errs, r, p),
        lambda r: r.name,
        path.child("requests"),
        _defaulted,
    )
    _slice(
        errs,
        claim.constraints,
        _L["DeviceConstraintsMaxSize"],
        lambda c, p: _constraint(errs, c, p, names),
        path.child("constraints"),
    )

    def config(item: Any, p: Path) -> None:
        _config_entry(errs, item, names, p)

    _slice(errs, claim.config, _L["DeviceConfigMaxSize"], config, path.child("config"))


def _claim_spec(errs: Errors, spec: ResourceClaimSpec, path: Path) -> None:
    _device_claim(errs, spec.devices, path.child("devices"))


def _allocation_result_entry(
    errs: Errors, result: DeviceRequestAllocationResult, path: Path, names: _RequestNames
) -> None:
    _request_ref(errs, result.request, path.child("request"), names)
    _driver_name(errs, result.driver, path.child("driver"))
    _pool_name(errs, result.pool, path.child("pool"))
    _dns_label(errs, result.device, path.child("device"))
    _binding_parameters(errs, result.binding_conditions, result.binding_failure_conditions, path)
    for i, toleration in enumerate(result.tolerations or []):
        _toleration(errs, toleration, path.child("tolerations").index(i))
    if result.share_id is not None:
        _uid(errs, result.share_id, path.child("shareID"))
    _skip_node_operations(errs, result.skip_node_operations, path.child("skipNodeOperations"))


def _allocation(errs: Errors, allocation: AllocationResult, path: Path, names: _RequestNames) -> None:
    devices = allocation.devices
    if devices is not None:
        _slice(
            errs,
            devices.results,
            _L["AllocationResultsMaxSize"],
            lambda r, p: _allocation_result_entry(errs, r, p, names),
            path.child("devices", "results"),
        )

        def config(item: Any, p: Path) -> None:
            if not item.source:
                errs.required(p.child("source"))
            elif item.source not in ("FromClaim", "FromClass"):
                errs.not_supported(p.child("source"), item.source, ["FromClaim", "FromClass"])
            _config_entry(errs, item, names, p)

        _slice(errs, devices.config, 2 * _L["DeviceConfigMaxSize"], config, path.child("devices", "config"))
    if allocation.node_selector is not None:
        validate_node_selector(errs, allocation.node_selector, path.child("nodeSelector"))


def _device_id(driver: str, pool: str, device: str, share_id: str | None) -> str:
    base = f"{driver}/{pool}/{device}"
    return f"{base}/{share_id}" if share_id else base


def _device_status(errs: Errors, status: AllocatedDeviceStatus, path: Path, allocated: set[str]) -> None:
    _driver_name(errs, status.driver, path.child("driver"))
    _pool_name(errs, status.pool, path.child("pool"))
    _dns_label(errs, status.device, path.child("device"))
    if status.share_id is not None:
        _uid(errs, status.share_id, path.child("shareID"))
    device_id = _device_id(status.driver, status.pool, status.device, status.share_id)
    if device_id not in allocated:
        errs.invalid(path, device_id, "must be an allocated device in the claim")
    conditions = status.conditions or []
    if len(conditions) > _L["AllocatedDeviceStatusMaxConditions"]:
        errs.too_many(path.child("conditions"), len(conditions), _L["AllocatedDeviceStatusMaxConditions"])
    validate_conditions(errs, conditions, path.child("conditions"))
    if status.data is not None:
        _raw_extension(errs, status.data, path.child("data"), _L["AllocatedDeviceStatusDataMaxLength"])
    network = status.network_data
    if network is not None:
        if len(network.interface_name or "") > _L["NetworkDeviceDataInterfaceNameMaxLength"]:
            errs.too_long(path.child("networkData", "interfaceName"), _L["NetworkDeviceDataInterfaceNameMaxLength"])
        if len(network.hardware_address or "") > _L["NetworkDeviceDataHardwareAddressMaxLength"]:
            errs.too_long(path.child("networkData", "hardwareAddress"), _L["NetworkDeviceDataHardwareAddressMaxLength"])
        _set(
            errs,
            network.ips,
            _L["NetworkDeviceDataMaxIPs"],
            lambda a, p: _interface_address(errs, a, p),
            lambda a: a,
            path.child("networkData", "ips"),
        )


def _interface_address(errs: Errors, address: str, path: Path) -> None:
    import ipaddress

    try:
        parsed = ipaddress.ip_interface(address)
    except ValueError:
        errs.invalid(path, address, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)")
        return
    if str(parsed) != address:
        errs.invalid(path, address, f"must be in canonical form ({str(parsed)!r})")


def _claim_status(errs: Errors, status: ResourceClaimStatus, path: Path, names: _RequestNames) -> None:
    reserved = status.reserved_for or []

    def consumer(ref: Any, p: Path) -> None:
        for field_name in ("resource", "name", "uid"):
            if not getattr(ref, field_name):
                errs.required(p.child(field_name))

    _set(errs, reserved, _L["ResourceClaimReservedForMaxSize"], consumer, lambda r: r.uid, path.child("reservedFor"))
    allocated: set[str] = set()
    if status.allocation is not None and status.allocation.devices is not None:
        for result in status.allocation.devices.results or []:
            allocated.add(_device_id(result.driver, result.pool, result.device, result.share_id))
    _set(
        errs,
        status.devices,
        -1,
        lambda d, p: _device_status(errs, d, p, allocated),
        lambda d: _device_id(d.driver, d.pool, d.device, d.share_id),
        path.child("devices"),
    )
    if reserved and status.allocation is None:
        errs.forbidden(path.child("reservedFor"), "may not be specified when `allocated` is not set")
    if status.allocation is not None:
        _allocation(errs, status.allocation, path.child("allocation"), names)
