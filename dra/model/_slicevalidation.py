"""Validation of ResourceSlice specs: node selection, pools, devices, attributes, capacities, counters."""

from __future__ import annotations

from typing import Any

from dra.model._base import K8sModel
from dra.model._corevalidation import (
    validate_label_name,
    validate_label_value,
    validate_node_name,
    validate_node_selector,
)
from dra.model._fields import Errors, Path
from dra.model._rules import (
    _KEY_TRUNCATE,
    _L,
    _TAINT_EFFECTS,
    _binding_parameters,
    _dns_label,
    _driver_name,
    _fully_qualified_name,
    _map,
    _nothing,
    _pool_name,
    _qualified_name,
    _set,
    _skip_node_operations,
    _slice,
)
from dra.model._semver import is_semver
from dra.model.slice import (
    CapacityRequestPolicy,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    DeviceTaint,
    ResourcePool,
    ResourceSliceSpec,
)
from dra.quantity import Quantity

_MAX_INT64 = (1 << 63) - 1
_ATTRIBUTE_KINDS_TEXT = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"


def _entry(item: K8sModel) -> dict[str, Any]:
    return item.to_k8s()


def _attribute(errs: Errors, attribute: DeviceAttribute, path: Path) -> None:
    kinds = 0
    if attribute.int_ is not None:
        kinds += 1
    if attribute.bool_ is not None:
        kinds += 1
    if attribute.string is not None:
        kinds += 1
        if len(attribute.string) > _L["DeviceAttributeMaxValueLength"]:
            errs.too_long(path.child("string"), _L["DeviceAttributeMaxValueLength"])
    if attribute.version is not None:
        kinds += 1
        _version(errs, attribute.version, path.child("version"))
    if (
        attribute.bools is not None
        or attribute.ints is not None
        or attribute.strings is not None
        or (attribute.versions is not None)
    ):
        for kind in ("bools", "ints", "strings", "versions"):
            values = getattr(attribute, kind)
            if values is None:
                continue
            kinds += 1
            if not values:
                errs.invalid(path.child(kind), values, "must not be empty if specified")
        for i, item in enumerate(attribute.strings or []):
            if len(item) > _L["DeviceAttributeMaxValueLength"]:
                errs.too_long(path.child("strings").index(i), _L["DeviceAttributeMaxValueLength"])
        for i, item in enumerate(attribute.versions or []):
            _version(errs, item, path.child("versions").index(i))
    if kinds != 1:
        # The 1.37 API server reports this through declarative union validation, with these words.
        if not kinds:
            errs.invalid(path, "", "must specify one of: " + _ATTRIBUTE_KINDS_TEXT)
        else:
            errs.invalid(
                path, "{" + ", ".join(attribute.kinds()) + "}", "must specify exactly one of: " + _ATTRIBUTE_KINDS_TEXT
            )


def _version(errs: Errors, value: str, path: Path) -> None:
    if not is_semver(value):
        errs.invalid(path, value, "must be a string compatible with semver.org spec 2.0.0")
    if len(value) > _L["DeviceAttributeMaxValueLength"]:
        errs.too_long(path, _L["DeviceAttributeMaxValueLength"])


def _request_policy(errs: Errors, capacity: Quantity, policy: CapacityRequestPolicy, path: Path) -> None:
    if policy.valid_values and policy.valid_range is not None:
        errs.forbidden(
            path, 'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
        )
        return
    if policy.valid_values:
        if policy.default is None:
            errs.required(path.child("default"), "required when validValues is defined")
            return
        values_path = path.child("validValues")
        values = policy.valid_values
        for i in range(len(values) - 1):
            if values[i] > values[i + 1]:
                errs.invalid(values_path.index(i + 1), str(values[i + 1]), "values must be sorted in ascending order")
        found_default = False

        def option(value: Quantity, p: Path) -> None:
            nonlocal found_default
            if value > capacity:
                errs.invalid(p, str(value), f"option is larger than capacity value: {capacity}")
            if value == policy.default:
                found_default = True

        _set(
            errs,
            values,
            _L["CapacityRequestPolicyDiscreteMaxOptions"],
            option,
            lambda q: str(q.scaled_value()),
            values_path,
        )
        if not found_default:
            errs.invalid(values_path, str(policy.default), "default value is not valid according to the requestPolicy")
    elif policy.valid_range is not None:
        if policy.default is None:
            errs.required(path.child("default"), "required when validRange is defined")
            return
        _request_range(errs, policy.default, capacity, policy, path.child("validRange"))


def _request_range(
    errs: Errors, default: Quantity, capacity: Quantity, policy: CapacityRequestPolicy, path: Path
) -> None:
    valid_range = policy.valid_range
    assert valid_range is not None
    low, high, step = valid_range.min, valid_range.max, valid_range.step
    if low is None:
        errs.required(path.child("min"), "required when validRange is defined")
        return
    if low > capacity:
        errs.invalid(path.child("min"), str(low), f"min is larger than capacity value: {capacity}")
    if default < low:
        errs.invalid(path.child("default"), str(default), f"default is less than min: {low}")
    if high is not None:
        if low > high:
            errs.invalid(path.child("max"), str(low), f"min is larger than max: {high}")
        if high > capacity:
            errs.invalid(path.child("max"), str(high), f"max is larger than capacity value: {capacity}")
        if default > high:
            errs.invalid(path.child("default"), str(default), f"default is more than max: {high}")
    if step is None:
        return
    if step.sign() <= 0:
        errs.invalid(path.child("step"), str(step), "must be greater than zero")
        return
    added = low + step
    if added > capacity:
        errs.invalid(path.child("step"), str(step), f"one step {added} is larger than capacity value: {capacity}")
    unsafe = False
    for name, q in (("default", default), ("min", low), ("max", high), ("step", step)):
        if q is None:
            continue
        if q.sign() < 0:
            errs.invalid(path.child(name), str(q), "must be greater than or equal to 0")
            unsafe = True
        elif q > _MAX_INT64:
            errs.invalid(path.child(name), str(q), f"must not be larger than {_MAX_INT64}")
            unsafe = True
    if unsafe:
        return
    for value in (default, high):
        if value is not None and (value.scaled_value() - low.scaled_value()) % step.scaled_value() != 0:
            errs.invalid(
                path.child("step"), str(value), f"value is not a multiple of a given step ({step}) from ({low})"
            )


def _capacity(errs: Errors, capacity: DeviceCapacity, path: Path, multiple: bool) -> None:
    if capacity.request_policy is None:
        return
    if not multiple:
        errs.forbidden(path.child("requestPolicy"), "allowMultipleAllocations must be true")
    else:
        _request_policy(errs, capacity.value, capacity.request_policy, path.child("requestPolicy"))


def _taint(errs: Errors, taint: DeviceTaint, path: Path) -> None:
    validate_label_name(errs, taint.key, path.child("key"))
    if taint.value:
        validate_label_value(errs, taint.value, path.child("value"))
    if not taint.effect:
        errs.required(path.child("effect"))
    elif taint.effect not in _TAINT_EFFECTS:
        errs.not_supported(path.child("effect"), taint.effect, _TAINT_EFFECTS)


def _counters(errs: Errors, counters: dict[str, Any] | None, maximum: int, path: Path) -> None:
    if not counters:
        errs.required(path)
        return
    _map(errs, counters, maximum, 63, lambda k, p: _dns_label(errs, k, p), _nothing, path)


def _counter_consumption(errs: Errors, consumption: DeviceCounterConsumption, path: Path) -> None:
    if not consumption.counter_set:
        errs.required(path.child("counterSet"))
    else:
        _dns_label(errs, consumption.counter_set, path.child("counterSet"))
    _counters(
        errs, consumption.counters, _L["ResourceSliceMaxCountersPerDeviceCounterConsumption"], path.child("counters")
    )


def _counter_set(errs: Errors, counter_set: CounterSet, path: Path) -> None:
    if not counter_set.name:
        errs.required(path.child("name"))
    else:
        _dns_label(errs, counter_set.name, path.child("name"))
    _counters(errs, counter_set.counters, _L["ResourceSliceMaxCountersPerCounterSet"], path.child("counters"))


_NODE_SELECTION_MSG = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to "
    "true in the ResourceSlice spec"
)


def _device(errs: Errors, device: Device, path: Path, per_device: bool) -> None:
    multiple = device.allow_multiple_allocations is True
    _dns_label(errs, device.name, path.child("name"))
    attributes, capacity = device.attributes or {}, device.capacity or {}
    total = len(attributes) + len(capacity)
    if total > _L["ResourceSliceMaxAttributesAndCapacitiesPerDevice"]:
        errs.invalid(
            path,
            total,
            "the total number of attributes and capacities must not exceed "
            f"{_L['ResourceSliceMaxAttributesAndCapacitiesPerDevice']}",
        )
    values = sum(
        1
        if not (a.bools or a.ints or a.strings or a.versions)
        else len(a.bools or []) + len(a.ints or []) + len(a.strings or []) + len(a.versions or [])
        for a in attributes.values()
    )
    if values > _L["ResourceSliceMaxAttributeValuesPerDevice"]:
        errs.invalid(
            path,
            values,
            f"the total number of attribute values must not exceed {_L['ResourceSliceMaxAttributeValuesPerDevice']}",
        )
    _map(
        errs,
        attributes,
        -1,
        _KEY_TRUNCATE,
        lambda k, p: _qualified_name(errs, k, p),
        lambda a, p: _attribute(errs, a, p),
        path.child("attributes"),
    )
    _map(
        errs,
        capacity,
        -1,
        _KEY_TRUNCATE,
        lambda k, p: _qualified_name(errs, k, p),
        lambda c, p: _capacity(errs, c, p, multiple),
        path.child("capacity"),
    )
    _slice(errs, device.taints, _L["DeviceTaintsMaxLength"], lambda t, p: _taint(errs, t, p), path.child("taints"))
    _set(
        errs,
        device.consumes_counters,
        _L["ResourceSliceMaxDeviceCounterConsumptionsPerDevice"],
        lambda c, p: _counter_consumption(errs, c, p),
        lambda c: c.counter_set,
        path.child("consumesCounters"),
        _entry,  # declarative uniqueness (1.37) shows the whole entry
    )
    if per_device:
        chosen = []
        if device.node_name is not None:
            if device.node_name:
                chosen.append("`nodeName`")
                validate_node_name(errs, device.node_name, path.child("nodeName"))
            else:
                errs.invalid(path.child("nodeName"), "", "must not be empty")
        if device.node_selector is not None:
            chosen.append("`nodeSelector`")
            validate_node_selector(errs, device.node_selector, path.child("nodeSelector"))
        if device.all_nodes is not None:
            if device.all_nodes:
                chosen.append("`allNodes`")
            else:
                errs.invalid(path.child("allNodes"), False, "must be either unset or set to true")
        if not chosen:
            errs.required(path, _NODE_SELECTION_MSG)
        elif len(chosen) > 1:
            errs.invalid(path, "{" + ", ".join(chosen) + "}", _NODE_SELECTION_MSG)
    elif device.node_name is not None or device.node_selector is not None or device.all_nodes is not None:
        errs.invalid(
            path,
            None,
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        )
    _binding_parameters(errs, device.binding_conditions, device.binding_failure_conditions, path)


def _pool(errs: Errors, pool: ResourcePool, path: Path) -> None:
    _pool_name(errs, pool.name, path.child("name"))
    if pool.resource_slice_count <= 0:
        errs.invalid(path.child("resourceSliceCount"), pool.resource_slice_count, "must be greater than zero")
    if pool.generation < 0:
        errs.invalid(path.child("generation"), pool.generation, "must be greater than or equal to zero")


_SLICE_NODE_MSG = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"


def _slice_spec(errs: Errors, spec: ResourceSliceSpec, path: Path) -> None:
    _driver_name(errs, spec.driver, path.child("driver"))
    _pool(errs, spec.pool, path.child("pool"))
    chosen = []
    if spec.node_name is not None:
        if spec.node_name:
            chosen.append("`nodeName`")
            validate_node_name(errs, spec.node_name, path.child("nodeName"))
        else:
            errs.invalid(path.child("nodeName"), "", "must be either unset or set to a non-empty string")
    if spec.node_selector is not None:
        chosen.append("`nodeSelector`")
        validate_node_selector(errs, spec.node_selector, path.child("nodeSelector"))
        if len(spec.node_selector.node_selector_terms) != 1:
            errs.invalid(
                path.child("nodeSelector", "nodeSelectorTerms"),
                spec.node_selector.node_selector_terms,
                "must have exactly one node selector term",
            )
    for field_name, value in (("allNodes", spec.all_nodes), ("perDeviceNodeSelection", spec.per_device_node_selection)):
        if value is None:
            continue
        if value:
            chosen.append(f"`{field_name}`")
        else:
            errs.invalid(path.child(field_name), False, "must be either unset or set to true")
    if not chosen:
        errs.required(path, _SLICE_NODE_MSG)
    elif len(chosen) > 1:
        errs.invalid(path, "{" + ", ".join(chosen) + "}", _SLICE_NODE_MSG + ", but multiple fields are set")
    if spec.shared_counters is not None and spec.devices is not None:
        errs.invalid(path, "", "only one of `sharedCounters` or `devices` is allowed")
    devices = spec.devices or []
    advanced = (
        any(d.taints for d in devices)
        or any(d.consumes_counters for d in devices)
        or any(
            a.bools is not None or a.ints is not None or a.strings is not None or a.versions is not None
            for d in devices
            for a in (d.attributes or {}).values()
        )
    )
    maximum = _L["ResourceSliceMaxDevicesWithAdvancedFeatures"] if advanced else _L["ResourceSliceMaxDevices"]
    per_device = spec.per_device_node_selection is True
    _set(
        errs,
        spec.devices,
        maximum,
        lambda d, p: _device(errs, d, p, per_device),
        lambda d: d.name,
        path.child("devices"),
    )
    _set(
        errs,
        spec.shared_counters,
        _L["ResourceSliceMaxCounterSets"],
        lambda c, p: _counter_set(errs, c, p),
        lambda c: c.name,
        path.child("sharedCounters"),
        _entry,
    )
    if spec.partition_type_attribute is not None:
        _partition_type_attribute(errs, spec, path)
    _skip_node_operations(errs, spec.skip_node_operations, path.child("skipNodeOperations"))


def _partition_type_attribute(errs: Errors, spec: ResourceSliceSpec, path: Path) -> None:
    name = spec.partition_type_attribute or ""
    devices = spec.devices or []
    if not any(d.consumes_counters for d in devices):
        errs.invalid(
            path.child("partitionTypeAttribute"),
            name,
            "may only be set on a slice which declares devices that consume counters",
        )
        return
    probe = Errors()
    _fully_qualified_name(probe, name, path.child("partitionTypeAttribute"))
    if probe.items:
        errs.extend(probe)
        return
    bare = name[len(spec.driver) + 1 :] if name.startswith(spec.driver + "/") else ""
    for i, device in enumerate(devices):
        if not device.consumes_counters:
            continue
        attrs = device.attributes or {}
        attr = attrs.get(name) or (attrs.get(bare) if bare else None)
        attr_path = path.child("devices").index(i).child("attributes").key(name)
        if attr is None:
            errs.required(
                attr_path,
                "device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set",
            )
        elif attr.string is None:
            errs.invalid(
                attr_path, attr, "must be a string value because `partitionTypeAttribute` names this attribute"
            )
