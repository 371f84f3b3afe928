"""The base of every resource.k8s.io/v1 model: camelCase aliases, Kubernetes dict in and out, kept unknown fields.

Unknown fields are kept (`extra="allow"`) so that objects written by a newer API server round-trip unchanged;
`unknown_fields()` lists them so that validation or a linter can warn. `from_k8s(data, extra="reject")` is the
strict parse mode for user input (the CLI): unknown fields raise `UnknownFieldsError`, as the API server's strict
field validation (`fieldValidation=Strict`, `kubectl --validate=strict`) does. Scalars are strict (no "5" for an
int), as Kubernetes' JSON decoding is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, Self

import pydantic
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from dra.errors import ModelValidationError

__all__ = ["K8sModel", "UnknownFieldsError", "format_path", "strict_path"]

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


class UnknownFieldsError(ModelValidationError):
    """Fields the API's schema does not have, found by the strict parse mode; `fields` in document order.

    Paths are written as the API server's strict decoder (sigs.k8s.io/json) writes them: `.` between fields and
    map keys, `[i]` for list items (`spec.devices.requests[0].exactly.cuont`).
    """

    def __init__(self, fields: list[str]) -> None:
        self.fields = list(fields)
        super().__init__([(f, f"unknown field {_quote(f)}") for f in self.fields])
        self.args = (self.message,)

    @property
    def message(self) -> str:
        """`strict decoding error: unknown field "a", unknown field "b"` (the API server's wording)."""
        return "strict decoding error: " + ", ".join(f"unknown field {_quote(f)}" for f in self.fields)

    def __str__(self) -> str:
        return self.message


def _quote(text: str) -> str:
    """Go's %q for the plain ASCII paths it is used on (backslashes and quotes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def strict_path(parent: str, key: str | int) -> str:
    """A child path as the strict decoder writes it: `a.b`, `a[0]`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _strict_unknown(model: K8sModel, raw: Mapping[str, Any], path: str, out: list[str]) -> None:
    """Unknown keys of `raw` (the input `model` was parsed from), in input order; snake_case names are unknown."""
    fields = type(model).model_fields
    aliases = _aliases(type(model))
    for key, value in raw.items():
        name = aliases.get(key) if isinstance(key, str) else None
        sub = strict_path(path, str(key))
        if name is None:
            out.append(sub)
            continue
        child = getattr(model, name)
        _strict_child(child, value, sub, out, fields[name].annotation)


def _strict_child(child: Any, value: Any, path: str, out: list[str], annotation: Any) -> None:
    if isinstance(child, K8sModel) and isinstance(value, Mapping):
        _strict_unknown(child, value, path, out)
    elif isinstance(child, list) and isinstance(value, list):
        for i, (item, raw) in enumerate(zip(child, value, strict=False)):
            _strict_child(item, raw, strict_path(path, i), out, None)
    elif isinstance(child, dict) and isinstance(value, Mapping):
        for key, raw in value.items():
            if key in child:
                _strict_child(child[key], raw, strict_path(path, str(key)), out, None)


_ALIASES: dict[type[BaseModel], dict[str, str]] = {}


def _aliases(cls: type[BaseModel]) -> dict[str, str]:
    found = _ALIASES.get(cls)
    if found is None:
        found = _ALIASES[cls] = {(f.alias or n): n for n, f in cls.model_fields.items()}
    return found


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
    def from_k8s(cls, data: Mapping[str, Any], *, path: str = "", extra: Literal["keep", "reject"] = "keep") -> Self:
        """Build from the Kubernetes JSON form; malformed data raises `ModelValidationError` with field paths.

        `extra="keep"` (the default: webhook, stored objects) keeps unknown fields; `extra="reject"` is the strict
        mode for user input and raises `UnknownFieldsError` naming every unknown field's full path.
        """
        if not isinstance(data, Mapping):
            raise ModelValidationError([(path or "<root>", f"expected an object, got {type(data).__name__}")])
        try:
            obj = cls.model_validate(dict(data))
        except pydantic.ValidationError as err:
            raise ModelValidationError(_errors_from(err, path)) from None
        if extra == "reject":
            unknown: list[str] = []
            _strict_unknown(obj, data, path, unknown)
            if unknown:
                raise UnknownFieldsError(unknown)
        return obj

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
