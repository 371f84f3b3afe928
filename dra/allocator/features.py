"""The allocator's feature switches, named as upstream's `structured.Features` (internal/types.go).

`FeatureSet.latest()` turns on every DRA feature of the newest release; `FeatureSet.parse("a,b,-c")`
reads the `--features` lists of the CLI. Names are accepted as upstream field names (`AdminAccess`) or as
Kubernetes feature-gate names (`DRAAdminAccess`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from dra.errors import InputError

__all__ = ["FEATURE_GATES", "FeatureSet"]

# upstream field name -> feature gate name (internal/types.go, Features.Set)
FEATURE_GATES: dict[str, str] = {
    "AdminAccess": "DRAAdminAccess",
    "ConsumableCapacity": "DRAConsumableCapacity",
    "DeviceBindingAndStatus": "DRADeviceBindingConditions",
    "DeviceTaints": "DRADeviceTaints",
    "FractionalCapacityRange": "DRAFractionalCapacityRange",
    "ListTypeAttributes": "DRAListTypeAttributes",
    "PartitionableDevices": "DRAPartitionableDevices",
    "PrioritizedList": "DRAPrioritizedList",
}
_ALIASES: dict[str, str] = {name.lower(): name for name in FEATURE_GATES}
_ALIASES.update({gate.lower(): name for name, gate in FEATURE_GATES.items()})
_ALIASES["draresourceclaimdevicestatus"] = "DeviceBindingAndStatus"


@dataclass(frozen=True, slots=True)
class FeatureSet:
    """Which optional allocator behaviours are on (one flag per upstream `Features` field)."""

    AdminAccess: bool = False
    ConsumableCapacity: bool = False
    DeviceBindingAndStatus: bool = False
    DeviceTaints: bool = False
    FractionalCapacityRange: bool = False
    ListTypeAttributes: bool = False
    PartitionableDevices: bool = False
    PrioritizedList: bool = False

    @classmethod
    def latest(cls) -> FeatureSet:
        """Every DRA allocator feature of Kubernetes 1.37 that gpudra implements, on (the default everywhere).

        That is the 1.37 defaults plus the alpha list-type attributes; the alpha DRADerivedAttributes,
        DRADeviceCompatibilityGroups and DRAOptionalNodeOperations are not implemented and stay off.
        """
        return cls(**{name: True for name in FEATURE_GATES})

    @classmethod
    def none(cls) -> FeatureSet:
        """No optional feature: what upstream's "stable" implementation supports."""
        return cls()

    @classmethod
    def parse(cls, text: str, *, base: FeatureSet | None = None) -> FeatureSet:
        """Read a comma-separated list: `all`, `none`, `Name`, `-Name`, `Name=true|false`.

        A list of plain names means exactly those features; `-Name` and `Name=false` switch one off
        starting from `base` (default: `latest()`), so `-DRADeviceTaints` is "latest without taints".
        """
        items = [item.strip() for item in text.split(",") if item.strip()]
        plain = [i for i in items if not i.startswith("-") and "=" not in i and i.lower() not in ("all", "none")]
        current = cls.none() if plain and base is None else (base or cls.latest())
        for item in items:
            low = item.lower()
            if low == "all":
                current = cls.latest()
                continue
            if low == "none":
                current = cls.none()
                continue
            value = True
            name = item
            if item.startswith("-"):
                value, name = False, item[1:]
            elif "=" in item:
                name, _, raw = item.partition("=")
                if raw.strip().lower() not in ("true", "false"):
                    raise InputError(f"feature {name!r}: expected true or false (got {raw!r})", source="--features")
                value = raw.strip().lower() == "true"
            key = _ALIASES.get(name.strip().lower())
            if key is None:
                known = ", ".join(sorted(FEATURE_GATES.values()))
                raise InputError(f"unknown feature {name.strip()!r} (known: {known})", source="--features")
            current = replace(current, **{key: value})
        return current

    def enabled(self) -> frozenset[str]:
        """The enabled features as feature-gate names (upstream's `Features.Set()`)."""
        return frozenset(FEATURE_GATES[f.name] for f in fields(self) if getattr(self, f.name))

    def to_gates(self) -> dict[str, bool]:
        """Kubernetes feature gates for this set (binding conditions need ResourceClaimDeviceStatus too)."""
        gates = {FEATURE_GATES[f.name]: bool(getattr(self, f.name)) for f in fields(self)}
        if self.DeviceBindingAndStatus:
            gates["DRAResourceClaimDeviceStatus"] = True
        return gates

    def to_json(self) -> dict[str, Any]:
        """Upstream field names to booleans, as the Go oracle reads them."""
        return {f.name: bool(getattr(self, f.name)) for f in fields(self)}
