"""Field paths and error messages in the form of k8s.io/apimachinery/pkg/util/validation/field.

`Errors` collects (path, message) pairs whose messages read as `field.Error.ErrorBody()` does:
`Required value`, `Invalid value: "x": detail`, `Too many: 33: must have at most 32 items`, ...
"""

from __future__ import annotations

import json
from typing import Any

from dra.model._base import K8sModel

__all__ = ["Errors", "Path", "OMIT"]

OMIT = object()


class Path:
    """An immutable field path: `Path("spec").child("devices").index(3).key("gpu/mem")`."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, i: int) -> Path:
        return Path(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"


def render_value(value: Any) -> str:
    """A bad value as `ErrorBody` prints it: strings quoted, numbers and bools bare, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, K8sModel):
        value = value.to_k8s()
    elif isinstance(value, list):
        value = [v.to_k8s() if isinstance(v, K8sModel) else v for v in value]
    try:
        return json.dumps(value, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


class Errors:
    """An ordered list of field errors."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def _add(self, path: Path, kind: str, value: Any, detail: str) -> None:
        body = kind if value is OMIT else f"{kind}: {render_value(value)}"
        if detail:
            body += f": {detail}"
        self.items.append((str(path), body))

    def required(self, path: Path, detail: str = "") -> None:
        self._add(path, "Required value", OMIT, detail)

    def forbidden(self, path: Path, detail: str) -> None:
        self._add(path, "Forbidden", OMIT, detail)

    def invalid(self, path: Path, value: Any, detail: str) -> None:
        self._add(path, "Invalid value", value, detail)

    def duplicate(self, path: Path, value: Any) -> None:
        self._add(path, "Duplicate value", value, "")

    def not_found(self, path: Path, value: Any, detail: str = "") -> None:
        self._add(path, "Not found", value, detail)

    def not_supported(self, path: Path, value: Any, supported: list[str]) -> None:
        detail = "supported values: " + ", ".join(json.dumps(v) for v in supported) if supported else ""
        self._add(path, "Unsupported value", value, detail)

    def too_long(self, path: Path, max_length: int) -> None:
        unit = "byte" if max_length == 1 else "bytes"
        self._add(path, "Too long", OMIT, f"may not be more than {max_length} {unit}")

    def too_many(self, path: Path, actual: int, maximum: int) -> None:
        unit = "item" if maximum == 1 else "items"
        self._add(path, "Too many", actual, f"must have at most {maximum} {unit}")

    def extend(self, other: Errors) -> None:
        self.items.extend(other.items)
