"""JSON-like data to CEL runtime values and back.

`from_json` keeps ints as int and floats as double (a JSON number with a fraction or exponent). `to_json` gives
JSON-able output: uint as int, Quantity/Semver/IP/CIDR/URL/duration/timestamp as their canonical strings,
bytes as base64, optionals as `{"@optional": [value]}` or `{"@optional": []}`, types as `{"@type": name}`.
"""

from __future__ import annotations

import base64
import math
from typing import Any

from dra.cel.values import INT64_MAX, CelType, Duration, Optional, Timestamp, Uint

__all__ = ["from_json", "to_json"]


def from_json(obj: Any) -> Any:
    """JSON/YAML-decoded data as CEL values (dict keys stay as they are; ints beyond int64 become uint)."""
    t = type(obj)
    if t is dict:
        return {k: from_json(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [from_json(v) for v in obj]
    if t is int and obj > INT64_MAX:
        return Uint(obj)
    return obj


def _key(k: Any) -> str:
    if type(k) is str:
        return str(k)
    if type(k) is bool:
        return "true" if k else "false"
    return str(int(k)) if isinstance(k, int) else str(k)


def to_json(value: Any) -> Any:
    """A JSON-able rendering of a CEL runtime value."""
    t = type(value)
    if value is None or t is bool or t is str or t is int:
        return value
    if t is float:
        if math.isnan(value) or math.isinf(value):
            return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        return value
    if t is Uint:
        return int(value)
    if isinstance(value, dict):
        return {_key(k): to_json(v) for k, v in value.items()}
    if t is list:
        return [to_json(v) for v in value]
    if t is bytes:
        return base64.b64encode(value).decode("ascii")
    if t is Optional:
        return {"@optional": [to_json(value.value())] if value.has_value() else []}
    if t is CelType:
        return {"@type": value.name}
    if t is Duration or t is Timestamp:
        return str(value)
    return str(value)
