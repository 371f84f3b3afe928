"""The library modules' public faces: sorted `__all__`, every name present and documented, and a registry each."""

from __future__ import annotations

import importlib

import pytest

from dra.cel._functions import FunctionRegistry

MODULES = ["quantity", "semver", "lists", "regex", "strings", "sets", "ip", "cidr", "urls", "format"]


@pytest.mark.parametrize("name", MODULES)
def test_public_names(name: str) -> None:
    module = importlib.import_module(f"dra.cel.{name}")
    assert module.__doc__
    assert module.__all__ == sorted(module.__all__)
    assert isinstance(module.REGISTRY, FunctionRegistry)
    assert module.REGISTRY.globals or module.REGISTRY.members
    for public in module.__all__:
        value = getattr(module, public)
        if callable(value) and not isinstance(value, FunctionRegistry):
            assert value.__doc__, f"{name}.{public} has no docstring"


@pytest.mark.parametrize("name", MODULES)
def test_value_classes_name_their_cel_type(name: str) -> None:
    module = importlib.import_module(f"dra.cel.{name}")
    for public in module.__all__:
        value = getattr(module, public)
        if isinstance(value, type) and hasattr(value, "cel_type_name"):
            assert value.cel_type_name.count(".") == 1
