"""The scored mode: better placements than first fit, and answers where first fit backtracks exponentially."""

from __future__ import annotations

from typing import Any

import pytest

from dra.allocator import Allocator, Node, Unsatisfiable
from dra.allocator.scoring import footprint, score, unit_usage
from tests.dra.allocator._cases import (
    DRIVER,
    GPU_CLASS,
    MIG_CLASS,
    allocated,
    claim,
    device,
    dynamic_mig_gpu,
    exact,
    node,
    picked,
    rslice,
)


def both(claims: list[dict[str, Any]], slices: list[dict[str, Any]], **kw: Any) -> tuple[Any, Any, int, int]:
    alloc = Allocator(slices=slices, classes=[GPU_CLASS, MIG_CLASS], **kw)
    out = []
    steps = []
    for mode in ("upstream", "scored"):
        search, _ = alloc.search(claims, node(), mode)
        ok = search.run()
        steps.append(search.steps)
        try:
            out.append(picked(alloc.allocate(claims, node=node(), mode=mode)) if ok else None)
        except Unsatisfiable:
            out.append(None)
    return out[0], out[1], steps[0], steps[1]


def two_mig_gpus() -> list[dict[str, Any]]:
    cs0, d0 = dynamic_mig_gpu(0)
    cs1, d1 = dynamic_mig_gpu(1)
    return [
        rslice("a-counters", [], counters=[cs0, cs1], count=3),
        rslice("b-gpu0", d0, count=3),
        rslice("c-gpu1", d1, count=3),
    ]


ONE_G = f"device.attributes['{DRIVER}'].profile == '1g'"


def test_scored_keeps_a_whole_gpu_free_where_first_fit_breaks_it() -> None:
    slices = two_mig_gpus()
    taken = [allocated("old", ("node-a", "gpu-1-mig-1g-0"))]
    c = claim("c", exact("r", cls="mig", selectors=[ONE_G]))
    upstream, scored, _, _ = both([c], slices, allocated=taken)
    assert upstream == [[("r", "gpu-0-mig-1g-0")]]  # first fit breaks the untouched GPU 0
    assert scored == [[("r", "gpu-1-mig-1g-1")]]  # packs next to the existing partition


def test_scored_prefers_one_nvlink_group() -> None:
    devs = [device(f"gpu-{i}", nvlink=f"g{i % 2}") for i in range(8)]
    c = claim("c", exact("r", count=2))
    upstream, scored, _, _ = both([c], [rslice("s", devs)])
    assert upstream == [[("r", "gpu-0"), ("r", "gpu-1")]]
    assert scored == [[("r", "gpu-0"), ("r", "gpu-2")]]


def test_score_orders_broken_gpus_before_fragmentation_and_spread() -> None:
    alloc = Allocator(slices=two_mig_gpus(), classes=[MIG_CLASS])
    _, cands = alloc.node_view(Node("node-a"))
    by_name = {c.device.name: c for c in cands}
    before = unit_usage([by_name["gpu-1-mig-1g-0"]])
    packed = score(before, [[by_name["gpu-1-mig-1g-1"]]])
    hole = score(before, [[by_name["gpu-1-mig-1g-3"]]])
    fresh = score(before, [[by_name["gpu-0-mig-1g-0"]]])
    assert packed < hole < fresh
    assert footprint(by_name["gpu-0-mig-4g-4"]).slices == frozenset({4, 5, 6, 7})
    assert footprint(by_name["gpu-0"]).total == 8


def pathological(n_first: int, count: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    devs = [device(f"d{i:02d}", numa=0 if i < n_first else 1, model="a") for i in range(n_first + count + 2)]
    devs[-1]["attributes"]["model"] = {"string": "b"}
    c = claim(
        "c",
        exact("a", count=count),
        exact("b", selectors=[f"device.attributes['{DRIVER}'].model == 'b'"]),
        constraints=[{"matchAttribute": f"{DRIVER}/numa"}],
    )
    return [rslice("s", devs)], c


def test_match_attribute_that_fails_late_is_cheap_for_scored_and_expensive_for_first_fit() -> None:
    slices, c = pathological(14, 4)
    upstream, scored, up_steps, sc_steps = both([c], slices)
    assert upstream == scored
    assert upstream is not None and [d for _, d in upstream[0]][-1] == "d19"  # the one model-b device
    assert up_steps > 1000  # every 4-subset of the 14 numa-0 devices is tried
    assert sc_steps < 100  # one representative per class of identical devices


def test_scored_answers_a_large_pathological_case_in_few_steps() -> None:
    slices, c = pathological(40, 8)  # first fit would try C(40, 8) = 76,904,685 subsets
    alloc = Allocator(slices=slices, classes=[GPU_CLASS])
    search, _ = alloc.search([c], node(), "scored")
    assert search.run()
    assert search.steps < 100  # 31 today; the time it takes is benchmarks/allocator.py's business
    out = alloc.allocate([c], node=node(), mode="scored")
    assert [r["device"] for r in out[0]["devices"]["results"]][-1] == "d49"


def test_distinct_attribute_without_enough_values_is_refuted_quickly() -> None:
    devs = [device(f"d{i:02d}", slot=i % 3) for i in range(18)]
    c = claim("c", exact("a", count=2), exact("b", count=2), constraints=[{"distinctAttribute": f"{DRIVER}/slot"}])
    alloc = Allocator(slices=[rslice("s", devs)], classes=[GPU_CLASS])
    search, _ = alloc.search([c], node(), "scored")
    assert not search.run()
    assert search.steps < 200
    with pytest.raises(Unsatisfiable):
        alloc.allocate([c], node=node(), mode="scored")


def _shared(name: str) -> dict[str, Any]:
    d = device(name, memory="40Gi")
    d["allowMultipleAllocations"] = True
    return d


def _share(name: str, memory: str) -> dict[str, Any]:
    return claim(name, exact("r", capacity={"requests": {"memory": memory}}))


def _consumed(pool_device: str, memory: str, k: int) -> dict[str, Any]:
    return allocated(f"in-use-{k}", ("node-a", pool_device), shareID=f"s{k}", consumedCapacity={"memory": memory})


def test_scored_puts_a_share_on_the_shared_gpu_it_fits_tightest_and_keeps_free_gpus_whole() -> None:
    slices = [rslice("s", [_shared("gpu-0"), _shared("gpu-1"), _shared("gpu-2")])]
    # gpu-0 untouched, gpu-1 has 30Gi left, gpu-2 has 10Gi left
    in_use = [_consumed("gpu-1", "10Gi", 1), _consumed("gpu-2", "30Gi", 2)]
    alloc = Allocator(slices=slices, classes=[GPU_CLASS], allocated=in_use)
    small = [_share("c", "8Gi")]
    assert picked(alloc.allocate(small, node=node(), mode="upstream")) == [[("r", "gpu-0")]]  # first fit
    assert picked(alloc.allocate(small, node=node(), mode="scored")) == [[("r", "gpu-2")]]  # tightest fit
    # too big for gpu-2: the other shared GPU, still not the whole one
    assert picked(alloc.allocate([_share("c", "20Gi")], node=node(), mode="scored")) == [[("r", "gpu-1")]]
    # a share of all of a device's memory breaks nothing: first in order among untouched ones
    assert picked(alloc.allocate([_share("c", "40Gi")], node=node(), mode="scored")) == [[("r", "gpu-0")]]


def test_scored_shares_go_to_a_fresh_gpu_only_when_no_shared_one_fits() -> None:
    slices = [rslice("s", [_shared("gpu-0"), _shared("gpu-1")])]
    alloc = Allocator(slices=slices, classes=[GPU_CLASS], allocated=[_consumed("gpu-1", "36Gi", 1)])
    assert picked(alloc.allocate([_share("c", "4Gi")], node=node(), mode="scored")) == [[("r", "gpu-1")]]
    assert picked(alloc.allocate([_share("c", "5Gi")], node=node(), mode="scored")) == [[("r", "gpu-0")]]
