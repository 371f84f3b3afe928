"""Shared DRA validation rules: list/set/map limits, names, selectors, tolerations, opaque config.

Ports of the helpers in k8s.io/kubernetes pkg/apis/resource/validation/validation.go (validateSlice, validateSet,
validateMap, validateQualifiedName, ...), reporting through `dra.model._fields.Errors`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from dra._names import is_c_identifier, is_dns1123_label, is_dns1123_subdomain, is_uuid
from dra.model._corevalidation import (
    validate_label_name,
    validate_label_value,
)
from dra.model._fields import Errors, Path
from dra.model.limits import LIMITS
from dra.model.selector import DeviceSelector, DeviceToleration, OpaqueDeviceConfiguration

_L = LIMITS
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
_TOLERATION_OPERATORS = ["Equal", "Exists"]

T = TypeVar("T")


def _slice(errs: Errors, items: Sequence[T] | None, maximum: int, check: Callable[[T, Path], None], path: Path) -> bool:
    """validateSlice: a list beyond its maximum reports only that (DOS protection); else each item."""
    items = items or []
    if maximum >= 0 and len(items) > maximum:
        errs.too_many(path, len(items), maximum)
        return False
    for i, item in enumerate(items):
        check(item, path.index(i))
    return True


def _set(
    errs: Errors,
    items: Sequence[T] | None,
    maximum: int,
    check: Callable[[T, Path], None],
    key: Callable[[T], Hashable],
    path: Path,
    shown: Callable[[T], Any] | None = None,
) -> None:
    """validateSet: validateSlice plus a Duplicate error for every repeated key (showing `shown(item)` if given)."""
    if not _slice(errs, items, maximum, check, path):
        return
    seen: set[Hashable] = set()
    for i, item in enumerate(items or []):
        k = key(item)
        if k in seen:
            errs.duplicate(path.index(i), shown(item) if shown is not None else k)
        seen.add(k)


def _truncate(key: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


def _map(
    errs: Errors,
    mapping: dict[str, T] | None,
    maximum: int,
    truncate: int,
    check_key: Callable[[str, Path], None],
    check_item: Callable[[T, Path], None],
    path: Path,
) -> None:
    mapping = mapping or {}
    if maximum >= 0 and len(mapping) > maximum:
        errs.too_many(path, len(mapping), maximum)
        return
    for k, item in mapping.items():
        check_key(k, path)
        check_item(item, path.key(_truncate(k, truncate)))


def _nothing(item: Any, path: Path) -> None:
    return None


# Names that passed a check, per check: slices repeat the same attribute names and domains on every device.
_VALID: dict[str, set[str]] = {"driver": set(), "label": set(), "qualified": set()}
_VALID_MAX = 8192


def _remember(kind: str, name: str, errs: Errors, before: int) -> None:
    if len(errs.items) == before:
        known = _VALID[kind]
        if len(known) >= _VALID_MAX:
            known.clear()
        known.add(name)


def _driver_name(errs: Errors, name: str, path: Path) -> None:
    """ValidateCSIDriverName (driver names and attribute domains): a DNS subdomain of at most 63 bytes."""
    if name in _VALID["driver"]:
        return
    before = len(errs.items)
    _check_driver_name(errs, name, path)
    _remember("driver", name, errs, before)


def _check_driver_name(errs: Errors, name: str, path: Path) -> None:
    if not name:
        errs.required(path)  # the 1.37 API server reports only this for an empty name
        return
    if len(name) > _L["DriverNameMaxLength"]:
        errs.too_long(path, _L["DriverNameMaxLength"])
    for msg in is_dns1123_subdomain(name.lower()):
        errs.invalid(path, name, msg)


def _dns_label(errs: Errors, name: str, path: Path) -> None:
    if name in _VALID["label"]:
        return
    before = len(errs.items)
    for msg in is_dns1123_label(name):
        errs.invalid(path, name, msg)
    _remember("label", name, errs, before)


def _dns_subdomain(errs: Errors, name: str, path: Path) -> None:
    for msg in is_dns1123_subdomain(name):
        errs.invalid(path, name, msg)


def _pool_name(errs: Errors, name: str, path: Path) -> None:
    if not name:
        errs.required(path)
        return
    if len(name) > _L["PoolNameMaxLength"]:
        errs.too_long(path, _L["PoolNameMaxLength"])
    for part in name.split("/"):
        _dns_subdomain(errs, part, path)


def _c_identifier(errs: Errors, name: str, path: Path) -> None:
    if len(name) > _L["DeviceMaxIDLength"]:
        errs.too_long(path, _L["DeviceMaxIDLength"])
    for msg in is_c_identifier(name):
        errs.invalid(path, name, msg)


def _qualified_name(errs: Errors, name: str, path: Path) -> None:
    """validateQualifiedName: `<C identifier>` or `<domain>/<C identifier>`."""
    if name in _VALID["qualified"]:
        return
    before = len(errs.items)
    _check_qualified_name(errs, name, path)
    _remember("qualified", name, errs, before)


def _check_qualified_name(errs: Errors, name: str, path: Path) -> None:
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(errs, parts[0], path)
    elif len(parts) == 2:
        if not parts[0]:
            errs.invalid(path, "", "the domain must not be empty")
        else:
            _driver_name(errs, parts[0], path)
        if not parts[1]:
            errs.invalid(path, "", "the name must not be empty")
        else:
            _c_identifier(errs, parts[1], path)
    # More than one slash: validation.go's TODO says such names are implicitly accepted, and the 1.37 API server
    # indeed accepts them, so no error here either.


def _fully_qualified_name(errs: Errors, name: str, path: Path) -> None:
    _qualified_name(errs, name, path)
    if "/" not in name:
        errs.invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")


def _uid(errs: Errors, uid: str, path: Path) -> None:
    for msg in is_uuid(uid):
        errs.invalid(path, uid, msg)


_KEY_TRUNCATE = _L["DeviceMaxDomainLength"] + 1 + _L["DeviceMaxIDLength"]


def _cel_expression(errs: Errors, expression: str, path: Path) -> None:
    if len(expression) > _L["CELSelectorExpressionMaxLength"]:
        errs.too_long(path, _L["CELSelectorExpressionMaxLength"])
        return
    from dra.cel import Environment
    from dra.errors import CelCompileError

    try:
        Environment.dra_selector().compile(expression)
    except CelCompileError as err:
        errs.invalid(path, expression, f"compilation failed: {err.message}")


def _selector(errs: Errors, selector: DeviceSelector, path: Path) -> None:
    if selector.cel is None:
        errs.required(path.child("cel"))
    else:
        _cel_expression(errs, selector.cel.expression, path.child("cel", "expression"))


def _selectors(errs: Errors, selectors: list[DeviceSelector] | None, path: Path) -> None:
    _slice(errs, selectors, _L["DeviceSelectorsMaxSize"], lambda s, p: _selector(errs, s, p), path)


def _toleration(errs: Errors, toleration: DeviceToleration, path: Path) -> None:
    if toleration.key:
        validate_label_name(errs, toleration.key, path.child("key"))
    operator = toleration.operator or "Equal"  # defaulted by the API server
    value = toleration.value or ""
    if operator == "Exists":
        if value:
            errs.invalid(path.child("value"), value, "must be empty for operator `Exists`")
    elif operator == "Equal":
        validate_label_value(errs, value, path.child("value"))
    else:
        errs.not_supported(path.child("operator"), operator, _TOLERATION_OPERATORS)
    if toleration.effect and toleration.effect not in _TAINT_EFFECTS:
        errs.not_supported(path.child("effect"), toleration.effect, _TAINT_EFFECTS)


def _tolerations(errs: Errors, tolerations: list[DeviceToleration] | None, path: Path) -> None:
    # No size check: validation.go has none for request tolerations, and the 1.37 API server accepts 17.
    _slice(errs, tolerations, -1, lambda t, p: _toleration(errs, t, p), path)


def _raw_extension(errs: Errors, value: Any, path: Path, max_length: int) -> None:
    if value is None:
        errs.required(path)
        return
    raw = json.dumps(value, separators=(",", ":"))
    if len(raw.encode()) > max_length:
        errs.too_long(path, max_length)
    elif not isinstance(value, dict):
        errs.invalid(path, "<value omitted>", "must be a valid JSON object")


def _opaque(errs: Errors, opaque: OpaqueDeviceConfiguration | None, path: Path) -> None:
    if opaque is None:
        errs.required(path.child("opaque"))
        return
    _driver_name(errs, opaque.driver, path.child("opaque", "driver"))
    _raw_extension(errs, opaque.parameters, path.child("opaque", "parameters"), _L["OpaqueParametersMaxLength"])


def _binding_parameters(errs: Errors, given: list[str] | None, given_failures: list[str] | None, path: Path) -> None:
    conditions, failures = given or [], given_failures or []
    _slice(
        errs,
        conditions,
        _L["BindingConditionsMaxSize"],
        lambda c, p: validate_label_name(errs, c, p),
        path.child("bindingConditions"),
    )
    _slice(
        errs,
        failures,
        _L["BindingFailureConditionsMaxSize"],
        lambda c, p: validate_label_name(errs, c, p),
        path.child("bindingFailureConditions"),
    )
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        if condition in seen:
            errs.duplicate(path.child("bindingConditions").index(i), condition)
        seen.add(condition)
    seen_failures: set[str] = set()
    for i, condition in enumerate(failures):
        if condition in seen_failures:
            errs.duplicate(path.child("bindingFailureConditions").index(i), condition)
        seen_failures.add(condition)
        if condition in seen:
            errs.invalid(
                path.child("bindingFailureConditions").index(i),
                condition,
                "bindingFailureConditions must not overlap with bindingConditions",
            )
    if not conditions and failures:
        errs.invalid(
            path.child("bindingConditions"),
            given,
            "bindingConditions are required to use bindingFailureConditions",
        )
    if not failures and conditions:
        errs.invalid(
            path.child("bindingFailureConditions"),
            given_failures,
            "bindingFailureConditions are required to use bindingConditions",
        )


def _skip_node_operations(errs: Errors, operations: list[str] | None, path: Path) -> None:
    ops = set(operations or [])
    if "NodePrepareResources" in ops and "NodeUnprepareResources" not in ops and "*" not in ops:
        errs.invalid(
            path, operations, "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"
        )
