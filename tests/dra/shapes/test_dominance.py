"""Alternatives that can never be chosen are found and pruned, and pruning them changes no allocation."""

from __future__ import annotations

import copy
import functools
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dra.allocator import Allocator, Unsatisfiable
from dra.gpus import device_classes
from dra.shapes import DeviceShapes, SatisfiabilityChecker, fold_shapes, prune
from tests.dra.shapes._clusters import node_slices

MIG = "mig.nvidia.com"
GPU = "gpu.nvidia.com"


def _cluster(*kinds: str) -> DeviceShapes:
    slices = [s for k, kind in enumerate(kinds) for s in node_slices(kind, f"{kind.split(':')[0].lower()}-{k}")]
    return fold_shapes(slices, device_classes())


def _mig(profile: str) -> dict[str, Any]:
    expression = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    return {"name": f"mig-{profile.replace('.', '-')}", "deviceClassName": MIG, "count": 1,
            "selectors": [{"cel": {"expression": expression}}]}  # fmt: skip


def _whole(memory: str = "8Gi") -> dict[str, Any]:
    expression = f"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('{memory}')) >= 0"
    return {"name": "whole", "deviceClassName": GPU, "count": 1, "selectors": [{"cel": {"expression": expression}}]}


def _claim(*subs: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [{"name": "main", "firstAvailable": list(subs)}]}
    if constraints is not None:
        devices["constraints"] = constraints
    return {"metadata": {"name": "c"}, "spec": {"devices": devices}}


def test_on_dynamic_mig_a_larger_profile_or_the_whole_gpu_never_wins_over_a_smaller_profile() -> None:
    # Every 4g.40gb or 7g.80gb placement, and the whole GPU, draws on all the counters some 3g.40gb placement draws
    # on: whenever one of them is free, a 3g.40gb is free too, and the allocator takes the first alternative.
    verdict = SatisfiabilityChecker().check(
        _claim(_mig("3g.40gb"), _mig("4g.40gb"), _mig("7g.80gb"), _whole()), _cluster("h100-dynamic")
    )
    assert verdict.dropped() == ()
    assert verdict.redundant == ("main/mig-4g-40gb", "main/mig-7g-80gb", "main/whole")


def test_a_later_alternative_another_shape_needs_stays() -> None:
    # An L40S has no MIG: there the whole GPU is the only way, so it stays; 4g.40gb fits on no shape but the H100's.
    verdict = SatisfiabilityChecker().check(
        _claim(_mig("3g.40gb"), _mig("4g.40gb"), _whole()), _cluster("h100-dynamic", "a100-static", "L40S")
    )
    assert verdict.redundant == ("main/mig-4g-40gb",)
    pruned = prune(_claim()["spec"]["devices"] | {"requests": [{"name": "main", "firstAvailable": [
        _mig("3g.40gb"), _mig("4g.40gb"), _whole()]}]}, verdict)  # fmt: skip
    assert [s["name"] for s in pruned["requests"][0]["firstAvailable"]] == ["mig-3g-40gb", "whole"]


def test_static_mig_devices_are_separate_so_a_larger_one_can_win() -> None:
    # Static MIG publishes made instances with no shared counters: with every 1g.10gb taken, the 2g.20gb is free.
    verdict = SatisfiabilityChecker().check(_claim(_mig("1g.10gb"), _mig("2g.20gb")), _cluster("a100-static"))
    assert verdict.dropped() == () and verdict.redundant == ()


def test_claims_with_constraints_or_multi_device_alternatives_are_left_alone() -> None:
    shapes = _cluster("h100-dynamic")
    checker = SatisfiabilityChecker()
    pinned = _claim(_mig("3g.40gb"), _mig("7g.80gb"), constraints=[{"matchAttribute": "gpu.nvidia.com/uuid"}])
    assert checker.check(pinned, shapes).redundant == ()
    two = {**_mig("7g.80gb"), "count": 2}
    assert checker.check(_claim(_mig("3g.40gb"), two), shapes).redundant == ()


def _counter_slices(capacity: int) -> list[dict[str, Any]]:
    """One node, two devices on one counter set (published in its own slice, as v1 wants): `small` takes 1 of the
    counter, `big` 2."""

    def device(name: str, amount: int) -> dict[str, Any]:
        return {"name": name, "attributes": {"kind": {"string": name}},
                "consumesCounters": [{"counterSet": "slots", "counters": {"n": {"value": str(amount)}}}]}  # fmt: skip

    pool = {"name": "n0", "generation": 1, "resourceSliceCount": 2}
    counters = {"sharedCounters": [{"name": "slots", "counters": {"n": {"value": str(capacity)}}}]}
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"n0-{i}"},
         "spec": {"driver": "x.example.com", "nodeName": "n0", "pool": pool, **part}}
        for i, part in enumerate([counters, {"devices": [device("small", 1), device("big", 2)]}])
    ]  # fmt: skip


def _counter_claim() -> dict[str, Any]:
    def sub(kind: str) -> dict[str, Any]:
        expression = f"device.attributes['x.example.com'].kind == '{kind}'"
        return {"name": kind, "deviceClassName": "x", "count": 1, "selectors": [{"cel": {"expression": expression}}]}

    return _claim(sub("small"), sub("big"))


_X_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'x.example.com'"}}]}}  # fmt: skip


def test_fewer_counters_are_not_enough_the_two_devices_must_exclude_each_other() -> None:
    # capacity 2: small (1) and big (2) cannot both be allocated, so big free means small free: big is redundant.
    exclusive = fold_shapes(_counter_slices(2), [_X_CLASS])
    assert SatisfiabilityChecker().check(_counter_claim(), exclusive).redundant == ("main/big",)
    # capacity 3: small can be allocated while big is still free; then the claim takes big, so big must stay.
    both = fold_shapes(_counter_slices(3), [_X_CLASS])
    assert SatisfiabilityChecker().check(_counter_claim(), both).redundant == ()


# -- pruning changes no allocation, in any state a node can be in -------------------------------------------------

KINDS = ("h100-dynamic", "a100-static", "L40S")
PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
CLAIMS = [
    (_mig("1g.10gb"), _mig("1g.20gb"), _mig("2g.20gb"), _whole()),
    (_mig("3g.40gb"), _mig("4g.40gb"), _mig("7g.80gb"), _whole("38062Mi")),
    (_mig("2g.20gb"), _mig("3g.40gb"), _whole()),
    (_mig("7g.80gb"), _whole("40Gi")),
]


@functools.cache
def _shapes() -> DeviceShapes:
    return _cluster(*KINDS)


@functools.cache
def _allocator(kind: str) -> tuple[Allocator, str]:
    shapes = _shapes()
    shape = next(s for s in shapes.shapes if s.example.startswith(kind.split(":")[0].lower()))
    return Allocator(slices=shape.slices, classes=shapes.classes), shape.node_name


def _allocate(allocator: Allocator, node: str, devices: dict[str, Any], held: list[dict[str, Any]], uid: str) -> Any:
    meta = {"name": uid, "namespace": "ns", "uid": uid}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
             "spec": {"devices": copy.deepcopy(devices)}}  # fmt: skip
    try:
        (allocation,) = allocator.with_allocated(held).allocate([claim], node=node)
    except Unsatisfiable:
        return None
    return {**claim, "status": {"allocation": allocation}}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    which=st.integers(0, len(CLAIMS) - 1),
    before=st.lists(st.tuples(st.sampled_from((*PROFILES, "whole")), st.integers(1, 16)), max_size=5),
)
@example(kind="a100-static", which=0, before=[("1g.10gb", 16)])  # every 1g.10gb made instance taken: 2g.20gb next
@example(kind="h100-dynamic", which=1, before=[("4g.40gb", 8), ("1g.10gb", 8)])  # 3g.40gb gone, no 4g/7g either
def test_the_pruned_claim_takes_what_the_full_claim_takes_whatever_is_already_allocated(
    kind: str, which: int, before: list[tuple[str, int]]
) -> None:
    allocator, node = _allocator(kind)
    held: list[dict[str, Any]] = []
    for what, times in before:  # whatever other pods took first, in this order, until the node had no more
        sub = _whole() if what == "whole" else _mig(what)
        exactly = {k: v for k, v in sub.items() if k != "name"}
        for _ in range(times):
            taken = _allocate(allocator, node, {"requests": [{"name": "r", "exactly": exactly}]}, held, f"h{len(held)}")
            if taken is None:
                break
            held.append(taken)
    full = _claim(*CLAIMS[which])
    verdict = SatisfiabilityChecker().check(full, _shapes())
    pruned = prune(full["spec"]["devices"], verdict)
    results = []
    for devices in (full["spec"]["devices"], pruned):
        placed = _allocate(allocator, node, devices, held, "probe")
        results.append(None if placed is None else placed["status"]["allocation"]["devices"]["results"])
    assert results[1] == results[0], (verdict.removable(), held)
