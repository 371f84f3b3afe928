"""Properties of both modes on generated problems: every answer respects devices, counters, capacity,
constraints and selectors; the scored mode finds an answer whenever upstream does (no distinctAttribute)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dra.allocator import AllocationError, Allocator, Unsatisfiable
from tests.dra.allocator._check import check
from tests.dra.allocator._generate import case


def _run(c: dict[str, Any], mode: str) -> list[dict[str, Any]] | str:
    alloc = Allocator(slices=c["resourceSlices"], classes=c["deviceClasses"], allocated=c["allocatedClaims"])
    try:
        return alloc.allocate(c["claims"], node=c["node"], mode=mode)  # type: ignore[arg-type]
    except Unsatisfiable:
        return "unsatisfiable"
    except AllocationError:
        return "error"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case())
def test_both_modes_respect_every_invariant(c: dict[str, Any]) -> None:
    upstream = _run(c, "upstream")
    scored = _run(c, "scored")
    if isinstance(upstream, list):
        check(c, upstream, strict_distinct=False)
    if isinstance(scored, list):
        check(c, scored, strict_distinct=True)
    has_distinct = any(
        "distinctAttribute" in k for cl in c["claims"] for k in cl["spec"]["devices"].get("constraints") or []
    )
    if isinstance(upstream, list) and not has_distinct:
        assert isinstance(scored, list), f"upstream found {upstream}, scored said {scored}"


@pytest.mark.parametrize("mode", ["upstream", "scored"])
def test_invariant_checker_catches_a_double_booking(mode: str) -> None:
    from tests.dra.allocator._cases import GPU_CLASS, claim, device, exact, node, rslice

    c = {
        "deviceClasses": [GPU_CLASS],
        "resourceSlices": [rslice("s", [device("gpu-0"), device("gpu-1")])],
        "allocatedClaims": [],
        "claims": [claim("a", exact("r")), claim("b", exact("r"))],
        "node": node(),
    }
    good = _run(c, mode)
    assert isinstance(good, list)
    check(c, good, strict_distinct=True)
    bad = [good[0], good[0]]
    with pytest.raises(AssertionError, match="allocated twice"):
        check(c, bad, strict_distinct=True)
