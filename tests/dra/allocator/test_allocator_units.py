"""Unit checks of the small pieces: features, quantities, requestPolicy rounding, node selectors."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dra.allocator import FeatureSet
from dra.allocator._errors import AllocationError
from dra.allocator._objects import Node, _capacity, _request, format_quantity, parse_quantity
from dra.allocator.capacity import consumed_capacity, request_fits
from dra.allocator.pools import node_selector_matches
from dra.errors import InputError


def test_feature_lists() -> None:
    latest = FeatureSet.latest()
    assert latest.ConsumableCapacity and latest.ListTypeAttributes and latest.FractionalCapacityRange
    assert FeatureSet.parse("DRAAdminAccess,PrioritizedList") == FeatureSet(AdminAccess=True, PrioritizedList=True)
    off = FeatureSet.parse("-DRADeviceTaints,ConsumableCapacity=false")
    assert not off.DeviceTaints and not off.ConsumableCapacity and off.PartitionableDevices
    assert FeatureSet.parse("none") == FeatureSet.none()
    assert latest.to_gates()["DRAResourceClaimDeviceStatus"] is True
    with pytest.raises(InputError, match="unknown feature"):
        FeatureSet.parse("Bogus")


@pytest.mark.parametrize(
    ("text", "value"),
    [("80Gi", 80 * 2**30), ("1500m", Fraction(3, 2)), ("1e3", 1000), ("0.5", Fraction(1, 2)), ("-2k", -2000)],
)
def test_parse_quantity(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_format_quantity_follows_the_format_of_the_step() -> None:
    assert format_quantity(3 * 2**30, "1Gi") == "3Gi"
    assert format_quantity(1536, "1Ki") == "1536"
    assert format_quantity(2000, "1") == "2k"
    assert format_quantity(Fraction(3, 2), "100m") == "1500m"


def cap(value: str, **policy: object) -> dict[str, object]:
    return {"value": value, "requestPolicy": policy} if policy else {"value": value}


@pytest.mark.parametrize(
    ("policy", "requested", "consumed", "fits"),
    [
        ({}, None, "40Gi", True),
        ({}, "10Gi", "10Gi", True),
        ({"default": "4Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, None, "4Gi", True),
        ({"default": "4Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, "5Gi", "8Gi", True),
        ({"default": "4Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}, "1Gi", "4Gi", True),
        ({"default": "4Gi", "validRange": {"min": "4Gi", "max": "8Gi"}}, "9Gi", "9Gi", False),
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi"]}, "15Gi", "20Gi", True),
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi"]}, "30Gi", "30Gi", False),
        ({"default": "500m", "validRange": {"min": "100m", "step": "100m"}}, "250m", "300m", True),
    ],
)
def test_request_policy_rounding(policy: dict[str, object], requested: str | None, consumed: str, fits: bool) -> None:
    capacity = {"memory": _capacity(cap("40Gi", **policy) if "100m" not in str(policy) else cap("1", **policy))}
    raw: dict[str, object] = {"name": "r", "deviceClassName": "c"}
    if requested is not None:
        raw["capacity"] = {"requests": {"memory": requested}}
    request = _request(raw, None, True)
    assert consumed_capacity(request, capacity, True)["memory"][1] == consumed
    assert request_fits(request, capacity, None, None, True) is fits


def test_capacity_overdraw_and_missing_capacity() -> None:
    capacity = {"memory": _capacity(cap("40Gi"))}
    request = _request({"name": "r", "deviceClassName": "c", "capacity": {"requests": {"memory": "30Gi"}}}, None, True)
    assert request_fits(request, capacity, {"memory": 10 * 2**30}, None, False)
    assert not request_fits(request, capacity, {"memory": 10 * 2**30}, {"memory": 1}, False)
    other = _request({"name": "r", "deviceClassName": "c", "capacity": {"requests": {"cores": "1"}}}, None, True)
    assert not request_fits(other, capacity, None, None, False)


def test_node_selector_terms() -> None:
    n = Node("n1", (("zone", "z1"), ("gen", "5")))
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]}
    assert node_selector_matches(sel, n)
    assert not node_selector_matches({"nodeSelectorTerms": [{}]}, n)  # an empty term matches nothing
    by_name = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    assert node_selector_matches(by_name, n) and not node_selector_matches(by_name, Node("n2"))
    either = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
        ]
    }
    assert node_selector_matches(either, n)
    with pytest.raises(AllocationError, match="must be an integer"):
        node_selector_matches(
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "g", "operator": "Lt", "values": ["x"]}]}]}, n
        )


def test_public_face_is_sorted_and_prepared_claims_allocate_alike() -> None:
    import dra.allocator as public
    from tests.dra.allocator._cases import GPU_CLASS, claim, device, exact, node, rslice

    assert public.__all__ == sorted(public.__all__)
    alloc = public.Allocator(slices=[rslice("s", [device("gpu-0"), device("gpu-1")])], classes=[GPU_CLASS])
    raw = claim("c", exact("r", count=2))
    assert alloc.allocate([public.prepare_claim(raw)], node=node()) == alloc.allocate([raw], node=node())
