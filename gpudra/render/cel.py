"""CEL runtime values written as CEL literals (`quantity("80Gi")`, `1u`, `[1, 2]`): `gpudra cel eval`'s text."""

from __future__ import annotations

import json
from typing import Any

from dra.cel import CelType, Duration, Optional, Timestamp, Uint, format_double

__all__ = ["cel_literal"]


def cel_literal(value: Any) -> str:
    """The CEL literal of a runtime value; library types (quantity, semver, ...) as `name("text")`."""
    t = type(value)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    if t is Uint:
        return f"{int(value)}u"
    if t is int:
        return str(value)
    if t is float:
        text = format_double(value)
        return text if any(c in text for c in ".eIN") else text + ".0"
    if t is str:
        return json.dumps(value, ensure_ascii=False)
    if t is bytes:
        return "b" + json.dumps(value.decode("latin-1"))
    if t is list:
        return "[" + ", ".join(cel_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cel_literal(k)}: {cel_literal(v)}" for k, v in value.items()) + "}"
    if t is Optional:
        return f"optional.of({cel_literal(value.value())})" if value.has_value() else "optional.none()"
    if t is CelType:
        return str(value.name)
    if t is Duration or t is Timestamp:
        return f"{'duration' if t is Duration else 'timestamp'}({json.dumps(str(value))})"
    name = str(getattr(t, "cel_type_name", t.__name__)).rsplit(".", 1)[-1].lower()
    return f"{name}({json.dumps(str(value))})"
