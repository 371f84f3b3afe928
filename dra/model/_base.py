"""The base of every resource.k8s.io/v1 model: camelCase aliases, Kubernetes dict in and out, kept unknown fields.

Unknown fields are kept (`extra="allow"`) so that objects written by a newer API server round-trip unchanged;
`unknown_fields()` lists them so that validation or a linter can warn. Scalars are strict (no "5" for an int), as
Kubernetes' JSON decoding is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Self

import pydantic
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from dra.errors import ModelValidationError

__all__ = ["K8sModel", "format_path"]

# Fields whose value is a map: the segment after one of these is a key, printed as `[key]` (field.Path.Key).
_MAP_FIELDS = frozenset(
    {
        "attributes",
        "capacity",
        "counters",
        "consumedCapacity",
        "labels",
        "annotations",
        "limits",
        "requests",
        "nodeAllocatableResources",
        "parameters",
    }
)


def format_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """`("spec", "devices", 3, "name")` → `spec.devices[3].name`, map keys as `attributes[gpu.nvidia.com/x]`."""
    out = ""
    previous: int | str | None = None
    for segment in loc:
        if isinstance(segment, int) or (isinstance(previous, str) and previous in _MAP_FIELDS):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else str(segment)
        previous = segment
    return out


def _errors_from(err: pydantic.ValidationError, prefix: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for item in err.errors(include_url=False):
        loc = [seg for seg in item["loc"] if not (isinstance(seg, str) and seg.startswith("function-"))]
        path = format_path(loc)
        if prefix:
            path = f"{prefix}.{path}" if path and not path.startswith("[") else prefix + path
        message = item["msg"]
        if item["type"] not in ("missing", "value_error") and "input" in item:
            message = f"{message} (got {item['input']!r})"
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        found.append((path, message))
    return found


class K8sModel(BaseModel):
    """A Kubernetes API object or part of one; `from_k8s(dict)` / `to_k8s()` speak the API's JSON form."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        strict=True,
        serialize_by_alias=True,
    )

    @classmethod
    def from_k8s(cls, data: Mapping[str, Any], *, path: str = "") -> Self:
        """Build from the Kubernetes JSON form; malformed data raises `ModelValidationError` with field paths."""
        if not isinstance(data, Mapping):
            raise ModelValidationError([(path or "<root>", f"expected an object, got {type(data).__name__}")])
        try:
            return cls.model_validate(dict(data))
        except pydantic.ValidationError as err:
            raise ModelValidationError(_errors_from(err, path)) from None

    def to_k8s(self) -> dict[str, Any]:
        """The Kubernetes JSON form: camelCase keys, unset fields left out, quantities canonical."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def validation_errors(self) -> list[tuple[str, str]]:
        """What the API server's create validation would report, as (field path, message); empty when valid."""
        from dra.model.validation import validate

        return validate(self)

    def validate_k8s(self) -> Self:
        """Raise `ModelValidationError` with every problem the API server would report; returns self if none."""
        errors = self.validation_errors()
        if errors:
            raise ModelValidationError(errors)
        return self

    def unknown_fields(self, path: str = "") -> list[str]:
        """Paths of fields this model does not know (kept verbatim in `to_k8s()`)."""
        return list(_unknown(self, path))


def _unknown(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, K8sModel):
        for key in value.model_extra or {}:
            yield f"{path}.{key}" if path else key
        for name, field in type(value).model_fields.items():
            child = getattr(value, name)
            alias = field.alias or name
            if child is None:
                continue
            sub = f"{path}.{alias}" if path else alias
            if isinstance(child, K8sModel):
                yield from _unknown(child, sub)
            elif isinstance(child, list):
                for i, item in enumerate(child):
                    yield from _unknown(item, f"{sub}[{i}]")
            elif isinstance(child, dict):
                for key, item in child.items():
                    yield from _unknown(item, f"{sub}[{key}]")
