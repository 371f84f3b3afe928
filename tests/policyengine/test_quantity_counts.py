"""A resource count is read by one function (`pod_shape.quantity_value`) in the webhook's shape check and in the
facts, and a malformed quantity is the specific error: `QuantityError` from the parse, then an error naming the
field (facts: `InputError`; shape check: a 400 denial), never an `except Exception` guess."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from dra.errors import InputError, QuantityError
from policyengine import pod_facts
from policyengine.denial import AdmissionDenied
from policyengine.pod_shape import check_pod_shape, quantity_value

MALFORMED = ["1x", "", "1e1001", "1" * 5000, "1e" + "9" * 5000, "NaN", True, None, [1]]


def _pod(limits: dict[str, Any], kind: str = "containers") -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {kind: [{"name": "cuda", "resources": {"limits": limits}}]}}


@pytest.mark.parametrize("value", MALFORMED, ids=lambda v: repr(v)[:12])
def test_a_malformed_quantity_is_a_quantity_error_and_nothing_else(value: Any) -> None:
    with pytest.raises(QuantityError):
        quantity_value(value)


@pytest.mark.parametrize("value", ["1x", "1e1001", "1" * 5000, "NaN", True])
@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/gpumem"])
def test_the_facts_name_the_field_of_a_malformed_quantity(value: Any, resource: str) -> None:
    limits = {"nvidia.com/gpu": 1, resource: value}
    with pytest.raises(InputError) as caught:
        pod_facts(_pod(limits, "initContainers"))
    message = str(caught.value)
    assert message.startswith(f"spec.initContainers[0].resources.limits[{resource}]: expected a whole number of ")
    assert message.endswith(", not a quantity)") and len(message) < 250  # a 5,000-digit value is quoted short
    assert isinstance(caught.value.__cause__, QuantityError)


@pytest.mark.parametrize("value", ["1x", "1e1001", "1" * 5000])
def test_the_shape_check_names_the_field_of_a_malformed_quantity(value: Any) -> None:
    with pytest.raises(AdmissionDenied) as caught:
        check_pod_shape(_pod({"nvidia.com/gpu": value}))
    assert caught.value.code == 400
    assert caught.value.message.startswith("gpudra: spec.containers[0].resources.limits['nvidia.com/gpu'] is not a ")
    assert isinstance(caught.value.__cause__, QuantityError)


@pytest.mark.parametrize(
    ("value", "count"),
    [(1, 1), ("1", 1), ("1000m", 1), ("0.001k", 1), (1.0, 1), (" 2 ", 2), ("2e0", 2), (2**70, 2**70)],
)
def test_the_shape_check_and_the_facts_read_a_count_alike(value: Any, count: int) -> None:
    """Spelled as the API server decodes it (JSON numbers, trimmed strings): one reading, so one answer."""
    assert quantity_value(value) == Fraction(count)
    if count <= 32:
        check_pod_shape(_pod({"nvidia.com/gpu": value}))
        assert pod_facts(_pod({"nvidia.com/gpu": value})).containers[0].legacy == {"nvidia.com/gpu": count}
    else:
        with pytest.raises(AdmissionDenied, match="at most 32|from 0 to 32"):
            check_pod_shape(_pod({"nvidia.com/gpu": value}))
        with pytest.raises(InputError, match="allocates at most 32"):
            pod_facts(_pod({"nvidia.com/gpu": value}))


def test_a_vram_annotation_of_more_digits_than_python_reads_is_not_a_positive_quantity() -> None:
    pod = _pod({"nvidia.com/gpu": 1})
    pod["metadata"]["annotations"] = {"gpudra.io/vram": "1" + "0" * 5000}
    sizing = pod_facts(pod).containers[0].sizing
    assert sizing.vram_bytes is None and "not a positive quantity" in sizing.reason
