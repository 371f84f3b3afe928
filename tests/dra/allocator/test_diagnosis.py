"""`Unsatisfiable.details`: the closest non-matching device per failing request and the check it failed."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from dra.allocator import Allocator, Unsatisfiable
from tests.dra.allocator._cases import (
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
    rslice,
)


def unsatisfiable(
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    *,
    classes: list[dict[str, Any]] | None = None,
    done: list[dict[str, Any]] | None = None,
    node: str = "node-a",
    mode: Any = "upstream",
) -> Unsatisfiable:
    allocator = Allocator(slices=slices, classes=classes or [GPU_CLASS], allocated=done or [])
    with pytest.raises(Unsatisfiable) as info:
        allocator.allocate(claims, node=node, mode=mode)
    return info.value


def _memory_devices() -> list[dict[str, Any]]:
    return [device("gpu-0", memory="24Gi"), device("gpu-1", memory="40Gi"), device("gpu-2", memory="80Gi")]


@pytest.mark.parametrize("mode", ["upstream", "scored"])
def test_request_selector_false_names_the_expression_and_the_closest_device(mode: str) -> None:
    expr = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('48Gi')) >= 0"
    extra = f"device.attributes['{DRIVER}'].type == 'gpu'"
    err = unsatisfiable(
        [rslice("s", _memory_devices())], [claim("c", exact("r", count=2, selectors=[extra, expr]))], mode=mode
    )
    assert (
        err.summary == "claim default/c, request r: needs 2 device(s), 1 free device(s) match its class and selectors"
    )
    (line,) = err.details
    assert line.startswith("claim default/c, request r: needs 2 device(s), 1 fit; closest device ")
    # gpu-0 and gpu-1 both pass the class selector and the first request selector; the first in search order wins.
    assert f"{DRIVER}/node-a/gpu-0 (passed 2 check(s)): request selector #1 is false: {expr}" in line
    assert line in str(err) and line in err.reason


def test_class_selector_false_names_the_class_and_its_expression() -> None:
    big = dclass("big-gpu", f"device.capacity['{DRIVER}'].memory.compareTo(quantity('100Gi')) >= 0")
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("r", cls="big-gpu"))], classes=[big])
    (line,) = err.details
    assert "needs 1 device(s), 0 fit" in line
    assert (
        f"closest device {DRIVER}/node-a/gpu-0 (passed 0 check(s)): device class big-gpu selector #0 is false: "
        f"device.capacity['{DRIVER}'].memory.compareTo(quantity('100Gi')) >= 0"
    ) in line


def _shared(name: str, memory: str) -> dict[str, Any]:
    d = device(name, memory=memory)
    d["allowMultipleAllocations"] = True
    d["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    return d


def test_capacity_short_says_by_how_much_and_picks_the_smallest_shortfall() -> None:
    slices = [rslice("s", [_shared("gpu-0", "16Gi"), _shared("gpu-1", "40Gi")])]
    in_use = allocated("old", ("node-a", "gpu-1"), shareID="s1", consumedCapacity={"memory": "10Gi"})
    want = exact("r", capacity={"requests": {"memory": "36Gi"}})
    err = unsatisfiable(slices, [claim("c", want)], done=[in_use])
    (line,) = err.details
    # gpu-0 is short by 20Gi, gpu-1 (30Gi of 40Gi left) only by 6Gi: gpu-1 is the closest.
    assert f"closest device {DRIVER}/node-a/gpu-1" in line
    assert "capacity 'memory' is short: needs 36Gi, 30Gi of 40Gi left (short by 6Gi)" in line


def test_missing_capacity_is_named() -> None:
    slices = [rslice("s", [_shared("gpu-0", "16Gi")])]
    err = unsatisfiable(slices, [claim("c", exact("r", capacity={"requests": {"cores": "4"}}))])
    assert "the device has no capacity 'cores' (the request asks for 4)" in err.details[0]


def test_exhausted_counter_of_a_partitionable_gpu() -> None:
    counters, devices = dynamic_mig_gpu(0)
    slices = [
        rslice("counters", [], counters=[counters], count=2),
        rslice("devices", devices, count=2),
    ]
    # A 1-slice partition at 4 is taken: of the two 4-slice partitions only the one at 0 still fits.
    in_use = allocated("old", ("node-a", "gpu-0-mig-1g-4"))
    profile = f"device.attributes['{DRIVER}'].profile == '4g'"
    want = claim("c", exact("r", cls="mig", count=2, selectors=[profile]))
    err = unsatisfiable(slices, [want], classes=[MIG_CLASS], done=[in_use])
    (line,) = err.details
    assert line.startswith("claim default/c, request r: needs 2 device(s), 1 fit; ")
    assert (
        f"closest device {DRIVER}/node-a/gpu-0-mig-4g-4 (passed 5 check(s)): counter 'memory-slice-4' of counter set "
        "'gpu-0-counter-set' (pool gpu.example.com/node-a) is exhausted: the device consumes 1, 0 left (short by 1)"
    ) in line


def test_counter_short_when_the_whole_gpu_is_asked_for() -> None:
    counters, devices = dynamic_mig_gpu(0)
    slices = [rslice("counters", [], counters=[counters], count=2), rslice("devices", devices, count=2)]
    in_use = allocated("old", ("node-a", "gpu-0-mig-1g-3"))
    err = unsatisfiable(slices, [claim("c", exact("r"))], done=[in_use])
    (line,) = err.details
    assert f"closest device {DRIVER}/node-a/gpu-0 " in line
    assert (
        "counter 'memory-slice-3' of counter set 'gpu-0-counter-set' (pool gpu.example.com/node-a) is exhausted: "
        "the device consumes 1, 0 left (short by 1)"
    ) in line


def test_match_attribute_mismatch_names_the_closest_value() -> None:
    devices = [device(f"gpu-{i}", pcie=f"p{i // 2}") for i in range(4)] + [device("gpu-9")]
    err = unsatisfiable(
        [rslice("s", devices)], [claim("c", exact("r", count=3), constraints=[{"matchAttribute": f"{DRIVER}/pcie"}])]
    )
    assert err.summary.startswith("no combination of free devices")
    (line,) = err.details
    assert line.startswith(f"claim default/c, constraint matchAttribute {DRIVER}/pcie over r: ")
    assert 'no single value is shared by enough fitting devices; closest: "p0" (r 2 of 3 device(s))' in line
    assert f"1 fitting device(s) lack the attribute ({DRIVER}/node-a/gpu-9)" in line


def test_distinct_attribute_short_of_values() -> None:
    devices = [device(f"gpu-{i}", pcie="p0") for i in range(3)]
    err = unsatisfiable(
        [rslice("s", devices)], [claim("c", exact("r", count=2), constraints=[{"distinctAttribute": f"{DRIVER}/pcie"}])]
    )
    assert any(
        "distinctAttribute" in d and "needs 2 distinct value(s), the fitting devices have 1" in d for d in err.details
    )


def test_no_devices_at_all_names_the_nodes_that_have_slices() -> None:
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("r"))], node="node-b")
    assert err.summary == "no resource pool with devices is available on this node"
    assert err.details == [
        "no device on node node-b: no ResourceSlice with devices is usable from it (slices name node(s) node-a)"
    ]


def test_incomplete_pool_is_named() -> None:
    err = unsatisfiable([rslice("s", _memory_devices(), count=2)], [claim("c", exact("r"))])
    assert "resource pool gpu.example.com/node-a is incomplete" in err.details[0]


def test_taken_devices_are_named_as_allocated() -> None:
    done = [allocated("old", ("node-a", "gpu-0"), ("node-a", "gpu-1"), ("node-a", "gpu-2"))]
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("r"))], done=done)
    assert "the device is already allocated to another claim" in err.details[0]


def test_first_available_reports_every_failing_subrequest() -> None:
    big = f"device.capacity['{DRIVER}'].memory.compareTo(quantity('100Gi')) >= 0"
    req = first_available(
        "r",
        {"name": "a", "deviceClassName": "gpu", "count": 4},
        {"name": "b", "deviceClassName": "gpu", "selectors": [big]},
    )
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", req)])
    assert len(err.details) == 2
    assert err.details[0].startswith("claim default/c, request r/a: needs 4 device(s), 3 fit")
    assert err.details[1].startswith("claim default/c, request r/b: needs 1 device(s), 0 fit") and big in err.details[1]


def test_requests_that_only_fail_together() -> None:
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("a", count=2), exact("b", count=2))])
    (line,) = err.details
    assert "every request has enough fitting devices on its own" in line
    assert "default/c a: 3 fit, 2 needed" in line


def test_details_are_lazy_and_the_error_pickles() -> None:
    calls: list[int] = []

    def diagnose() -> list[str]:
        calls.append(1)
        return ["why"]

    err = Unsatisfiable("short", diagnose)
    assert not calls
    assert err.reason == "short\n  why" and calls == [1]
    assert err.details == ["why"] and calls == [1]
    again = pickle.loads(pickle.dumps(err))
    assert again.summary == "short"


def test_a_failing_diagnosis_never_hides_the_outcome() -> None:
    def broken() -> list[str]:
        raise RuntimeError("boom")

    err = Unsatisfiable("short", broken)
    assert err.details == ["(no further diagnosis: RuntimeError: boom)"]


def test_all_mode_with_no_matching_device() -> None:
    expr = f"device.attributes['{DRIVER}'].type == 'mig'"
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("r", mode="All", selectors=[expr]))])
    (line,) = err.details
    assert line.startswith("claim default/c, request r: asks for all devices, none matches; closest device ")
    assert f"request selector #0 is false: {expr}" in line


def test_all_mode_with_a_taken_device() -> None:
    done = [allocated("old", ("node-a", "gpu-1"))]
    err = unsatisfiable([rslice("s", _memory_devices())], [claim("c", exact("r", mode="All"))], done=done)
    assert err.details == [
        f"claim default/c, request r: asks for all 3 matching device(s), but {DRIVER}/node-a/gpu-1 is already "
        "allocated to another claim"
    ]
