"""Unit tests of the Kubernetes quantity CEL library, called through its registry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel._functions import NoMatchingOverload
from dra.cel.quantity import REGISTRY
from dra.errors import CelRuntimeError
from dra.quantity import Quantity


def q(text: str) -> Quantity:
    value = REGISTRY.call_global("quantity", (text,))
    assert isinstance(value, Quantity)
    return value


def member(name: str, receiver: object, *args: object) -> object:
    return REGISTRY.call_member(name, receiver, args)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10Mo", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("", "quantities must match the regular expression"),
        ("10Mm", "unable to parse quantity's suffix"),
        ("1Ki2", "unable to parse quantity's suffix"),
    ],
)
def test_parse_errors_carry_upstream_text(text: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        q(text)
    assert err.value.message.startswith(message)
    assert REGISTRY.call_global("isQuantity", (text,)) is False


@pytest.mark.parametrize("text", ["20", "20M", "20Mi", "1.5", "-3m", "1e3", "0.2G"])
def test_is_quantity_accepts_valid_forms(text: str) -> None:
    assert REGISTRY.call_global("isQuantity", (text,)) is True


def test_is_quantity_rejects_non_strings() -> None:
    with pytest.raises(NoMatchingOverload):
        REGISTRY.call_global("isQuantity", ([1, 2, 3],))


def test_comparisons_use_numeric_value() -> None:
    assert member("isLessThan", q("50M"), q("50Mi")) is True
    assert member("isGreaterThan", q("50Mi"), q("50M")) is True
    assert member("isGreaterThan", q("50M"), q("100M")) is False
    assert member("compareTo", q("200M"), q("0.2G")) == 0
    assert member("compareTo", q("50M"), q("50Mi")) == -1
    assert member("compareTo", q("50Mi"), q("50M")) == 1


def test_add_and_sub_with_quantities_and_ints() -> None:
    assert member("add", q("50k"), q("20")) == q("50.02k")
    assert member("sub", q("50k"), q("20")) == q("49.98k")
    assert member("sub", q("50k"), 20) == q("49980")
    total = member("sub", member("add", q("50k"), 20), q("100k"))
    assert member("asInteger", total) == -49980


def test_add_does_not_mutate_receiver() -> None:
    base = q("1k")
    member("add", base, 5)
    assert str(base) == "1k"


def test_sign_is_a_global_function_only() -> None:
    assert REGISTRY.call_global("sign", (q("-5"),)) == -1
    assert REGISTRY.call_global("sign", (q("0"),)) == 0
    assert REGISTRY.call_global("sign", (q("3m"),)) == 1
    with pytest.raises(NoMatchingOverload):
        member("sign", q("1"))


def test_integer_conversion() -> None:
    assert member("asInteger", q("50k")) == 50000
    assert member("isInteger", q("50")) is True
    assert member("isInteger", q("1500m")) is False
    huge = q("9999999999999999999999999999999999999G")
    assert member("isInteger", huge) is False
    with pytest.raises(CelRuntimeError, match="^cannot convert value to integer$"):
        member("asInteger", huge)


def test_approximate_float() -> None:
    assert member("asApproximateFloat", q("50.703k")) == 50703.0
    assert member("asApproximateFloat", q("1Ki")) == 1024.0


@given(st.integers(min_value=-(10**12), max_value=10**12), st.integers(min_value=-(10**12), max_value=10**12))
def test_int_arithmetic_matches_python(a: int, b: int) -> None:
    qa = q(str(a))
    assert member("asInteger", member("add", qa, b)) == a + b
    assert member("asInteger", member("sub", qa, b)) == a - b
    assert member("compareTo", qa, q(str(b))) == (a > b) - (a < b)
