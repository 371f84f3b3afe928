"""The type identifiers a registry puts in scope are kept on it, and follow an overload added later."""

from __future__ import annotations

from dra.cel._functions import FunctionRegistry
from dra.cel.typecheck import TYPE_IDENTS, type_identifiers


class _Widget:
    cel_type_name = "example.Widget"


def test_kept_until_an_overload_names_a_new_type() -> None:
    registry = FunctionRegistry()
    first = type_identifiers(registry)
    assert set(first) == set(TYPE_IDENTS)
    assert type_identifiers(registry) is first  # asked by every compile: computed once

    @registry.function("widget", _Widget)
    def _widget(value: _Widget) -> _Widget:
        return value

    after = type_identifiers(registry)
    assert "example.Widget" in after and "example.Widget" not in first
    merged = registry.merged([])
    assert "example.Widget" in type_identifiers(merged)
