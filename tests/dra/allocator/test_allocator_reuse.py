"""`Allocator.with_allocated`: reusing parsed slices and selector results gives exactly a fresh allocator's answers."""

from __future__ import annotations

from typing import Any

import pytest

from dra.allocator import Allocator, Unsatisfiable
from dra.gpus import catalog, device_classes, node_resource_slices, synthetic_node


def claim(name: str, profile: str) -> dict[str, Any]:
    selector = {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}
    request = {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [selector]}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {"requests": [request]}}}


def allocated(c: dict[str, Any], allocation: dict[str, Any]) -> dict[str, Any]:
    return {**c, "status": {"allocation": allocation}}


@pytest.mark.parametrize("mode", ["upstream", "scored"])
def test_with_allocated_equals_a_fresh_allocator_as_allocations_grow(mode: str) -> None:
    # MIG mode on: DynamicMIG announces an Ampere GPU's partitions only then (dra.gpus.slices, isDynamicMIGCapable)
    node = synthetic_node(catalog.get("A100-SXM4-80GB"), "n", 2, mig_layouts={0: [], 1: []})
    slices = node_resource_slices(node, mig_mode="dynamic")
    classes = device_classes()
    base = Allocator(slices=slices, classes=classes)
    done: list[dict[str, Any]] = []
    for i, profile in enumerate(["3g.40gb", "2g.20gb", "1g.10gb", "3g.40gb", "4g.40gb", "3g.40gb", "7g.80gb"]):
        c = claim(f"c{i}", profile)
        fresh = Allocator(slices=slices, classes=classes, allocated=done)
        reused = base.with_allocated(done)
        try:
            expected = fresh.allocate([c], node="n", mode=mode)  # type: ignore[arg-type]
        except Unsatisfiable:
            with pytest.raises(Unsatisfiable):
                reused.allocate([c], node="n", mode=mode)  # type: ignore[arg-type]
            continue
        assert reused.allocate([c], node="n", mode=mode) == expected  # type: ignore[arg-type]
        done.append(allocated(c, expected[0]))
    assert 3 <= len(done) < 7  # the node fills up: later claims are refused by both
