"""The public faces of dra.gpus and dra.inventory: sorted `__all__`, every name importable and documented."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "dra.gpus",
    "dra.gpus.catalog",
    "dra.gpus.devices",
    "dra.gpus.mig",
    "dra.gpus.slices",
    "dra.gpus.driver_gates",
    "dra.gpus.topology",
    "dra.inventory",
    "dra.inventory.sources",
    "dra.inventory.nvml",
    "dra.inventory.snapshot",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__ and module.__doc__.strip()
    assert module.__all__ == sorted(module.__all__)
    for public in module.__all__:
        obj = getattr(module, public)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"{name}.{public} has no docstring"


def test_gpus_face_needs_no_internal_import() -> None:
    import dra.gpus as gpus

    node = gpus.synthetic_node(gpus.get("L4"), "n", 1)
    (model,) = gpus.resource_slices(node)
    assert model.to_k8s() == gpus.node_resource_slices(node)[0]
    classes = gpus.to_models(gpus.device_classes())
    assert [c.to_k8s() for c in classes] == gpus.device_classes()
