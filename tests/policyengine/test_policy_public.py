"""The public face of policyengine and policyengine.translate: sorted `__all__`, every name present, documented."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "policyengine",
    "policyengine.coverage",
    "policyengine.decision",
    "policyengine.engine",
    "policyengine.facts",
    "policyengine.files",
    "policyengine.inputs",
    "policyengine.loader",
    "policyengine.model",
    "policyengine.testing",
    "policyengine.translate",
]


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(set(exported)) == len(exported)
    for item in exported:
        value = getattr(module, item)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{item} has no docstring"
    assert module.__doc__ and len(module.__doc__.strip().splitlines()) <= 6


def test_the_package_face_reexports_the_engine() -> None:
    import policyengine as policy
    from policyengine import engine, files

    assert policy.PolicySet is engine.PolicySet and policy.load_policies is files.load_policies
