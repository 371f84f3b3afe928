"""Folding driver-shaped ResourceSlices into distinct node shapes: identity, memo, cap, pools, increments."""

from __future__ import annotations

from typing import Any

import pytest

from dra.allocator import allocate
from dra.gpus import device_classes
from dra.shapes import DeviceShapes, ShapeFolder, fold_shapes
from tests.dra.shapes._clusters import clone, node_slices

# 20 distinct node shapes: catalog models whole, GPU counts, static and dynamic MIG.
TWENTY = [
    "h100-dynamic",
    "a100-static",
    "H100-SXM5-80GB",
    "H100-SXM5-80GB:4",
    "H100-PCIE-80GB",
    "H100-NVL-94GB",
    "H200-SXM5-141GB",
    "B200-SXM6-180GB",
    "A100-SXM4-80GB",
    "A100-SXM4-40GB",
    "A100-PCIE-40GB",
    "A100-PCIE-80GB",
    "L40S",
    "L40S:2",
    "L4",
    "A10",
    "T4",
    "V100-SXM2-16GB",
    "V100-SXM2-32GB",
    "P100-PCIE-16GB",
]


def _by_example(shapes: DeviceShapes) -> dict[str, Any]:
    return {s.example: s for s in shapes.shapes}


def test_5000_nodes_of_20_shapes_fold_into_20() -> None:
    templates = [node_slices(kind, f"t{k}") for k, kind in enumerate(TWENTY)]
    slices = [s for n in range(5000) for s in clone(templates[n % 20], f"node-{n}")]
    shapes = fold_shapes(slices, device_classes())
    assert len(shapes.shapes) == 20
    assert sorted(s.nodes for s in shapes.shapes) == [250] * 20
    assert shapes.nodes == 5000 and shapes.complete and shapes.overflow == 0 and shapes.pending == 0
    assert len({s.key for s in shapes.shapes}) == 20
    # The empty copies are slices of their own node: one per shape, nothing of the 5,000 real node names.
    names = {s["spec"]["nodeName"] for shape in shapes.shapes for s in shape.slices}
    assert names == {shape.node_name for shape in shapes.shapes}


def test_uuids_are_renamed_consistently_within_a_slice() -> None:
    a = node_slices("a100-static", "a")
    shapes = fold_shapes(a + clone(a, "b"))
    (shape,) = shapes.shapes
    assert shape.nodes == 2
    devices = shape.slices[0]["spec"]["devices"]
    # Static MIG publishes MIG devices only: each names its GPU by parentUUID, and each has its own uuid.
    parents: dict[str, set[str]] = {}
    for d in devices:
        gpu = d["name"].split("-mig-")[0]
        parents.setdefault(gpu, set()).add(d["attributes"]["parentUUID"]["string"])
        assert d["attributes"]["uuid"]["string"].startswith("id-")
    assert len(parents) == 8 and all(len(tokens) == 1 for tokens in parents.values())
    assert len({t for tokens in parents.values() for t in tokens}) == 8  # one token per GPU, none shared
    text = repr(shape.slices)
    assert "GPU-" not in text and "MIG-" not in text


def test_a_different_attribute_value_is_a_different_shape() -> None:
    a = node_slices("L40S", "a")
    b = clone(a, "b")
    b[0]["spec"]["devices"] = [
        {**d, "attributes": {**d["attributes"], "driverVersion": {"version": "570.1.0"}}}
        for d in b[0]["spec"]["devices"]
    ]
    assert len(fold_shapes(a + b).shapes) == 2


def test_evidence_names_products_memory_and_mig_profiles() -> None:
    shapes = fold_shapes(node_slices("h100-dynamic", "h") + node_slices("a100-static", "a") + node_slices("L40S", "l"))
    by = _by_example(shapes)
    assert by["h"].evidence.products == ("NVIDIA H100 80GB HBM3",)
    assert "7g.80gb" in by["h"].evidence.mig_profiles and "1g.10gb" in by["h"].evidence.mig_profiles
    assert set(by["a"].evidence.mig_profiles) == {"1g.10gb", "2g.20gb", "3g.40gb"}
    assert by["l"].evidence.mig_profiles == () and by["l"].evidence.devices == 4
    assert by["h"].evidence.largest_memory == 81152 * 2**20
    memory, where = shapes.largest_memory()
    assert memory == 81152 * 2**20 and "on node h" in where
    assert "NVIDIA L40S" in by["l"].describe() and "node l" in by["l"].describe()


def test_the_cap_keeps_the_first_shapes_and_says_why() -> None:
    kinds = ["L40S", "L4", "A10", "T4", "H100-SXM5-80GB"]
    slices = [s for k, kind in enumerate(kinds) for s in node_slices(kind, f"n{k}")]
    shapes = fold_shapes(slices, max_shapes=3)
    assert len(shapes.shapes) == 3 and shapes.overflow == 2 and not shapes.complete
    assert shapes.limit is not None and "cap of 3" in shapes.limit and "2 node(s) not folded" in shapes.limit
    with pytest.raises(ValueError, match="max_shapes must be >= 1"):
        ShapeFolder(max_shapes=0)


def test_an_incomplete_pool_is_pending_until_its_last_slice_arrives() -> None:
    slices = node_slices("h100-dynamic", "h")
    assert len(slices) == 9
    folder = ShapeFolder()
    folder.replace_classes(device_classes())
    for s in slices[:-1]:
        folder.apply_slice(s)
    partial = folder.shapes()
    assert partial.shapes == () and partial.pending == 1
    folder.apply_slice(slices[-1])
    whole = folder.shapes()
    assert len(whole.shapes) == 1 and whole.pending == 0 and whole.generation == partial.generation + 1


def test_only_the_newest_pool_generation_counts() -> None:
    old = node_slices("L40S", "n")
    new = node_slices("L4", "n")
    new[0]["spec"]["pool"]["generation"] = 2
    new[0]["metadata"]["name"] = "n-new"
    shapes = fold_shapes(old + new)
    (shape,) = shapes.shapes
    assert shape.evidence.products == ("NVIDIA L4",)


def test_increments_move_the_generation_only_when_the_set_of_shapes_changes() -> None:
    folder = ShapeFolder()
    l40s = node_slices("L40S", "a")
    folder.replace_slices(l40s)
    first = folder.shapes()
    assert folder.shapes() is first  # memoised until a change
    for s in clone(l40s, "b"):
        folder.apply_slice(s)
    second = folder.shapes()
    assert second.generation == first.generation and second.shapes[0].nodes == 2
    for s in node_slices("T4", "c"):
        folder.apply_slice(s)
    third = folder.shapes()
    assert third.generation == first.generation + 1 and len(third.shapes) == 2
    folder.remove_slice("c-gpu.nvidia.com-0")
    fourth = folder.shapes()
    assert fourth.generation == third.generation + 1 and [s.nodes for s in fourth.shapes] == [2]
    folder.apply_class(device_classes()[0])
    assert folder.shapes().generation == fourth.generation + 1
    folder.replace_slices(l40s + clone(l40s, "b"))  # a relist of the same state
    assert folder.shapes().generation == fourth.generation + 1
    folder.remove_slice("no-such-slice")
    assert [s.nodes for s in folder.shapes().shapes] == [2]


def test_a_slice_moving_to_another_node_moves_its_node() -> None:
    folder = ShapeFolder()
    a = node_slices("L40S", "a")
    folder.replace_slices(a)
    moved = clone(a, "b")[0]
    moved["metadata"]["name"] = a[0]["metadata"]["name"]
    folder.apply_slice(moved)
    (shape,) = folder.shapes().shapes
    assert shape.nodes == 1 and shape.example == "b"


def test_slices_of_no_single_node_reach_every_copy() -> None:
    network = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "fabric"},
        "spec": {
            "driver": "net.example.com",
            "pool": {"name": "fabric", "generation": 3, "resourceSliceCount": 1},
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
            },
            "devices": [{"name": "nic-0", "attributes": {"type": {"string": "nic"}}}],
        },
    }
    shapes = fold_shapes([network, *node_slices("L4", "n")])
    (cluster,) = shapes.cluster_slices
    assert cluster["spec"]["allNodes"] is True and "nodeSelector" not in cluster["spec"]
    assert len(shapes.shapes) == 1
    claim = {
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]}},
    }
    nic_class = {
        "metadata": {"name": "nic"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'net.example.com'"}}]},
    }
    shape = shapes.shapes[0]
    result = allocate(
        [claim], node=shape.node_name, slices=[*shape.slices, *shapes.cluster_slices], classes=[nic_class]
    )
    assert result[0]["devices"]["results"][0]["device"] == "nic-0"


def test_an_empty_copy_allocates_like_the_node_it_stands_for() -> None:
    shapes = fold_shapes(node_slices("h100-dynamic", "h"), device_classes())
    (shape,) = shapes.shapes
    claim = {
        "metadata": {"name": "c"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "whole", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 7}},
                    {
                        "name": "mig",
                        "exactly": {
                            "deviceClassName": "mig.nvidia.com",
                            "count": 7,
                            "selectors": [
                                {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}
                            ],
                        },
                    },
                ]
            }
        },
    }
    result = allocate([claim], node=shape.node_name, slices=shape.slices, classes=shapes.classes)
    assert len(result[0]["devices"]["results"]) == 14


def test_the_public_face_is_sorted_and_documented() -> None:
    import dra.shapes

    assert dra.shapes.__all__ == sorted(dra.shapes.__all__)
    for name in dra.shapes.__all__:
        value = getattr(dra.shapes, name)
        assert not callable(value) or value.__doc__, name


def test_slices_past_the_tracking_bound_make_the_view_partial_until_a_relist_fits() -> None:
    folder = ShapeFolder(max_tracked=2)
    folder.replace_slices(node_slices("L4", "a") + node_slices("T4", "b") + node_slices("A10", "c"))
    partial = folder.shapes()
    assert len(partial.shapes) == 2 and not partial.complete
    assert partial.limit is not None and "bound of 2: 1 not folded" in partial.limit
    folder.replace_slices(node_slices("L4", "a") + node_slices("T4", "b"))
    assert folder.shapes().complete and len(folder.shapes().shapes) == 2


def test_the_bytes_of_the_copies_kept_are_bounded() -> None:
    small, big = node_slices("L4", "a"), node_slices("h100-dynamic", "b")
    folder = ShapeFolder(max_bytes=60_000)  # an L4 node's slice fits, a dynamic-MIG H100's nine do not
    folder.replace_slices(small + big)
    shapes = folder.shapes()
    assert [s.example for s in shapes.shapes] == ["a"] and shapes.overflow == 1
    assert shapes.limit is not None and "60000 bytes of them" in shapes.limit
    for s in big:
        folder.remove_slice(s["metadata"]["name"])
    folder.apply_slice(clone(small, "c")[0])
    assert folder.shapes().complete and [s.nodes for s in folder.shapes().shapes] == [2]
    assert folder._canon_bytes == sum(folder._canon_size.values()) > 0
