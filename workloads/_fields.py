"""Reading an object's fields the way the controllers do, and the stand-ins for what they draw at random.

Shared by the kinds' modules: a missing or mistyped field reads as None (a controller model never raises on odd
shapes; `workloads.templates` reports those), and UIDs and hashes get fixed stand-ins a policy cannot know either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["STAND_IN_UID", "env", "get", "name_of", "namespace_of", "stand_in_hash"]

STAND_IN_UID = "00000000-0000-0000-0000-000000000000"


def stand_in_hash(value: Any, length: int = 10) -> str:
    """A fixed hash of `value` standing for a controller's revision or template hash."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def name_of(obj: Mapping[str, Any]) -> str:
    """The object's name (its generateName less the dash when it has none), `workload` when it has neither."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return "workload"
    name = metadata.get("name") or str(metadata.get("generateName") or "").rstrip("-")
    return name if isinstance(name, str) and name else "workload"


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The object's namespace, `default` when it names none."""
    namespace = get(obj, "metadata", "namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def get(value: Any, *path: str | int) -> Any:
    """The value at `path` (keys and list indexes), None where a step is missing or of another type."""
    for part in path:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and part < len(value) else None
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    return value


def env(name: str, value: str) -> dict[str, Any]:
    """A container env entry with a literal value."""
    return {"name": name, "value": value}
