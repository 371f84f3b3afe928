"""Hand-computed cases for the upstream mode: each expectation follows from upstream's first-fit order."""

from __future__ import annotations

from typing import Any

import pytest

from dra.allocator import AllocationError, Allocator, FeatureSet, Unsatisfiable, allocate
from tests.dra.allocator._cases import (
    ANY_CLASS,
    DRIVER,
    GPU_CLASS,
    MIG_CLASS,
    allocated,
    claim,
    dclass,
    device,
    dynamic_mig_gpu,
    exact,
    first_available,
    node,
    picked,
    rslice,
)

EIGHT = rslice("node-a-gpus", [device(f"gpu-{i}", pcie=f"p{i // 4}", model="h100") for i in range(8)])


def run(claims: list[dict[str, Any]], slices: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    kw.setdefault("classes", [GPU_CLASS, MIG_CLASS, ANY_CLASS])
    kw.setdefault("node", node())
    return allocate(claims, slices=slices, **kw)


def test_first_fit_in_slice_order_with_node_selector() -> None:
    out = run([claim("c", exact("r", count=2))], [EIGHT])
    assert picked(out) == [[("r", "gpu-0"), ("r", "gpu-1")]]
    assert out[0]["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]
    }


def test_pools_sorted_by_driver_then_pool_and_slices_by_name() -> None:
    slices = [
        rslice("z", [device("b0")], pool="pool-b"),
        rslice("y", [device("a1")], pool="pool-a", count=2),
        rslice("x", [device("a0")], pool="pool-a", count=2),
    ]
    out = run([claim("c", exact("r", count=3))], slices)
    assert picked(out) == [[("r", "a0"), ("r", "a1"), ("r", "b0")]]


def test_already_allocated_devices_are_skipped() -> None:
    out = run([claim("c", exact("r", count=2))], [EIGHT], allocated=[allocated("old", ("node-a", "gpu-0"))])
    assert picked(out) == [[("r", "gpu-1"), ("r", "gpu-2")]]


def test_admin_access_ignores_existing_allocations() -> None:
    out = run(
        [claim("c", exact("r", count=1, adminAccess=True))], [EIGHT], allocated=[allocated("old", ("node-a", "gpu-0"))]
    )
    assert out[0]["devices"]["results"][0] == {
        "request": "r",
        "driver": DRIVER,
        "pool": "node-a",
        "device": "gpu-0",
        "adminAccess": True,
    }


def test_admin_access_needs_the_feature() -> None:
    with pytest.raises(AllocationError, match="admin access is requested, but the feature is disabled"):
        run([claim("c", exact("r", adminAccess=True))], [EIGHT], features=FeatureSet.parse("-DRAAdminAccess"))


def test_match_attribute_backtracks_to_the_next_group() -> None:
    out = run(
        [claim("c", exact("r", count=2), constraints=[{"matchAttribute": f"{DRIVER}/pcie"}])],
        [EIGHT],
        allocated=[allocated("old", *((("node-a", f"gpu-{i}")) for i in (0, 1, 2)))],
    )
    # gpu-3 is the only free device of p0, so the pair comes from p1.
    assert picked(out) == [[("r", "gpu-4"), ("r", "gpu-5")]]


def test_match_attribute_missing_attribute_rejects_device() -> None:
    slices = [rslice("s", [device("plain"), device("tagged-0", rack="r1"), device("tagged-1", rack="r1")])]
    out = run([claim("c", exact("r", count=2), constraints=[{"matchAttribute": f"{DRIVER}/rack"}])], slices)
    assert picked(out) == [[("r", "tagged-0"), ("r", "tagged-1")]]


def test_distinct_attribute_compares_with_every_device_taken() -> None:
    slices = [rslice("s", [device("d0", model="a"), device("d1", model="a"), device("d2", model="b")])]
    c = claim("c", exact("r", count=2), constraints=[{"distinctAttribute": f"{DRIVER}/model"}])
    assert picked(run([c], slices)) == [[("r", "d0"), ("r", "d2")]]
    three = claim("c", exact("r", count=3), constraints=[{"distinctAttribute": f"{DRIVER}/model"}])
    for mode in ("upstream", "scored"):
        with pytest.raises(Unsatisfiable):
            run([three], slices, mode=mode)


def test_first_available_picks_the_first_subrequest_that_fits() -> None:
    req = first_available(
        "r",
        {"name": "big", "deviceClassName": "gpu", "count": 9},
        {"name": "small", "deviceClassName": "gpu", "count": 2},
    )
    out = run(
        [claim("c", req, config=[{"requests": ["r/small"], "opaque": {"driver": DRIVER, "parameters": {}}}])], [EIGHT]
    )
    assert picked(out) == [[("r/small", "gpu-0"), ("r/small", "gpu-1")]]
    # The claim config names the chosen subrequest, which covers every request: requests are dropped.
    assert out[0]["devices"]["config"] == [{"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {}}}]


def test_all_mode_takes_every_matching_device_and_fails_if_one_is_in_use() -> None:
    out = run([claim("c", exact("r", mode="All"))], [EIGHT])
    assert [d for _, d in picked(out)[0]] == [f"gpu-{i}" for i in range(8)]
    with pytest.raises(Unsatisfiable):
        run([claim("c", exact("r", mode="All"))], [EIGHT], allocated=[allocated("old", ("node-a", "gpu-3"))])


def test_all_mode_rejects_incomplete_pools() -> None:
    slices = [rslice("s", [device("gpu-0")], count=2)]
    with pytest.raises(AllocationError, match="is currently being updated"):
        run([claim("c", exact("r", mode="All"))], slices)


def test_incomplete_pool_is_skipped_for_exact_count() -> None:
    slices = [rslice("s", [device("gpu-0")], count=2), rslice("t", [device("x")], pool="other")]
    assert picked(run([claim("c", exact("r"))], slices)) == [[("r", "x")]]


def test_newest_generation_wins_and_older_slices_are_ignored() -> None:
    slices = [rslice("old", [device("gpu-old")], generation=1), rslice("new", [device("gpu-new")], generation=2)]
    assert picked(run([claim("c", exact("r"))], slices)) == [[("r", "gpu-new")]]


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    slices = [rslice("a", [device("gpu-0")], count=2), rslice("b", [device("gpu-0")], count=2)]
    with pytest.raises(Unsatisfiable, match="invalid resource pools"):
        run([claim("c", exact("r"))], slices)


def test_node_selection_by_selector_and_all_nodes() -> None:
    by_label = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}
    slices = [
        rslice("sel", [device("zonal")], pool="zonal", nodeSelector=by_label),
        rslice("all", [device("global")], pool="x-global", allNodes=True),
    ]
    out = run([claim("c", exact("r", count=2))], slices, node=node("node-a", zone="z1"))
    assert picked(out) == [[("r", "global"), ("r", "zonal")]]
    assert out[0]["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchExpressions": by_label["nodeSelectorTerms"][0]["matchExpressions"]}]
    }
    out = run([claim("c", exact("r"))], slices, node=node("node-a", zone="z2"))
    assert picked(out) == [[("r", "global")]]
    assert "nodeSelector" not in out[0]


def test_per_device_node_selection() -> None:
    devs = [dict(device("elsewhere"), nodeName="node-b"), dict(device("here"), nodeName="node-a")]
    slices = [rslice("s", devs, node=None, perDeviceNodeSelection=True)]
    out = run([claim("c", exact("r"))], slices)
    assert picked(out) == [[("r", "here")]]


def test_taints_block_unless_tolerated_and_none_effect_is_ignored() -> None:
    devs = [
        device("t0", taints=[{"key": "broken", "value": "yes", "effect": "NoSchedule"}]),
        device("t1", taints=[{"key": "note", "effect": "None"}]),
    ]
    slices = [rslice("s", devs)]
    assert picked(run([claim("c", exact("r"))], slices)) == [[("r", "t1")]]
    tolerated = exact("r", tolerations=[{"key": "broken", "operator": "Exists"}])
    out = run([claim("c", tolerated)], slices)
    assert picked(out) == [[("r", "t0")]]
    assert out[0]["devices"]["results"][0]["tolerations"] == [{"key": "broken", "operator": "Exists"}]


def test_dynamic_mig_counters_block_overlapping_partitions() -> None:
    cs, devs = dynamic_mig_gpu(0)
    slices = [rslice("c", [], counters=[cs], count=2), rslice("d", devs, count=2)]
    four_g = claim("c", exact("r", cls="mig", count=2, selectors=[f"device.attributes['{DRIVER}'].profile == '4g'"]))
    assert picked(run([four_g], slices)) == [[("r", "gpu-0-mig-4g-0"), ("r", "gpu-0-mig-4g-4")]]
    # A 1g partition at slice 0 is taken: the full GPU and the 4g at 0 no longer fit.
    taken = [allocated("old", ("node-a", "gpu-0-mig-1g-0"))]
    with pytest.raises(Unsatisfiable):
        run([claim("c", exact("r", cls="gpu"))], slices, allocated=taken)
    with pytest.raises(Unsatisfiable):
        run([four_g], slices, allocated=taken)
    one_4g = claim("c", exact("r", cls="mig", selectors=[f"device.attributes['{DRIVER}'].profile == '4g'"]))
    assert picked(run([one_4g], slices, allocated=taken)) == [[("r", "gpu-0-mig-4g-4")]]


def test_partitionable_devices_need_the_feature() -> None:
    cs, devs = dynamic_mig_gpu(0)
    slices = [rslice("c", [], counters=[cs], count=2), rslice("d", devs, count=2)]
    with pytest.raises(Unsatisfiable):
        run([claim("c", exact("r", cls="gpu"))], slices, features=FeatureSet.parse("-DRAPartitionableDevices"))


def test_devices_beside_shared_counters_in_one_slice_are_not_used_as_upstream() -> None:
    # Since 1.35 a slice holds devices or sharedCounters; upstream treats a mixed slice as counters only.
    cs, devs = dynamic_mig_gpu(0)
    with pytest.raises(Unsatisfiable):
        run([claim("c", exact("r", cls="gpu"))], [rslice("s", devs, counters=[cs])])


def test_thirty_two_device_limit() -> None:
    many = rslice("s", [device(f"d{i}") for i in range(40)])
    with pytest.raises(AllocationError, match="adding 33 devices exceeds the claim limit of 32, with 0 already"):
        run([claim("c", exact("r", count=33))], [many])
    req = first_available(
        "r",
        {"name": "huge", "deviceClassName": "gpu", "count": 20},
        {"name": "ok", "deviceClassName": "gpu", "count": 2},
    )
    out = run([claim("c", exact("a", count=20), req)], [many])
    assert [n for n, _ in picked(out)[0]].count("r/ok") == 2


def test_class_configs_come_first_once_per_class_then_claim_configs() -> None:
    cfg = {"opaque": {"driver": DRIVER, "parameters": {"sharing": "mps"}}}
    cls = dclass("gpu", f"device.attributes['{DRIVER}'].type == 'gpu'", config=[cfg])
    c = claim(
        "c",
        exact("a"),
        exact("b"),
        exact("m", cls="any"),
        config=[{"requests": ["b"], "opaque": {"driver": DRIVER, "parameters": {"x": 1}}}],
    )
    out = run([c], [EIGHT], classes=[cls, ANY_CLASS])
    assert out[0]["devices"]["config"] == [
        {"source": "FromClass", "requests": ["a", "b"], **cfg},
        {"source": "FromClaim", "requests": ["b"], "opaque": {"driver": DRIVER, "parameters": {"x": 1}}},
    ]


def test_unknown_class_is_an_error() -> None:
    with pytest.raises(AllocationError, match="could not retrieve device class nope"):
        run([claim("c", exact("r", cls="nope"))], [EIGHT])


def test_cel_runtime_error_is_fatal() -> None:
    bad = exact("r", selectors=[f"device.attributes['{DRIVER}'].missing == 'x'"])
    with pytest.raises(AllocationError, match="CEL runtime error"):
        run([claim("c", bad)], [EIGHT])


def test_two_claims_do_not_share_devices() -> None:
    out = run([claim("c1", exact("r", count=2)), claim("c2", exact("r", count=2))], [EIGHT])
    assert picked(out) == [[("r", "gpu-0"), ("r", "gpu-1")], [("r", "gpu-2"), ("r", "gpu-3")]]


def test_allocator_reuse_across_nodes() -> None:
    slices = [rslice(f"n{i}", [device("gpu-0")], pool=f"n{i}", node=f"n{i}") for i in range(3)]
    alloc = Allocator(slices=slices, classes=[GPU_CLASS])
    for i in range(3):
        out = alloc.allocate([claim("c", exact("r"))], node=node(f"n{i}"))
        assert out[0]["devices"]["results"][0]["pool"] == f"n{i}"
    with pytest.raises(Unsatisfiable):
        alloc.allocate([claim("c", exact("r"))], node="n9")


def shared_device(policy: dict[str, Any] | None) -> dict[str, Any]:
    cap: dict[str, Any] = {"value": "40Gi"}
    if policy:
        cap["requestPolicy"] = policy
    return {
        "name": "shared-0",
        "allowMultipleAllocations": True,
        "attributes": {"type": {"string": "gpu"}},
        "capacity": {"memory": cap},
    }


def test_consumable_capacity_rounds_up_and_tracks_share() -> None:
    policy = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}
    slices = [rslice("s", [shared_device(policy)])]
    c = claim("c", exact("r", capacity={"requests": {"memory": "2Gi"}}))
    out = run([c], slices)
    res = out[0]["devices"]["results"][0]
    assert res["consumedCapacity"] == {"memory": "3Gi"}
    assert isinstance(res["shareID"], str) and len(res["shareID"]) == 36
    # Two shares of 20Gi fit on 40Gi, a third does not.
    twenty = [claim(f"c{i}", exact("r", capacity={"requests": {"memory": "20Gi"}})) for i in range(3)]
    assert len(run(twenty[:2], [rslice("s", [shared_device(None)])])) == 2
    with pytest.raises(Unsatisfiable):
        run(twenty, [rslice("s", [shared_device(None)])])


def test_capacity_request_for_a_missing_capacity_skips_the_device() -> None:
    c = claim("c", exact("r", capacity={"requests": {"bandwidth": "1"}}))
    with pytest.raises(Unsatisfiable):
        run([c], [EIGHT])
