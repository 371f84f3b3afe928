"""Kubernetes CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`) over `dra.quantity.Quantity`.

Upstream declares `sign` as a global overload (`sign(q)`), not a member, so `q.sign()` does not compile there;
we register it the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from dra.cel._functions import FunctionRegistry
from dra.errors import CelRuntimeError, QuantityError
from dra.quantity import Quantity

__all__ = ["REGISTRY"]

REGISTRY = FunctionRegistry()


# resource.ParseQuantity's errors (ErrFormatWrong, ErrNumeric, ErrSuffix); CEL shows them bare.
_PARSE_ERRORS: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    "unable to parse numeric part of quantity",
    "unable to parse quantity's suffix",
)


@REGISTRY.function("quantity", str)
def quantity(text: str) -> Quantity:
    try:
        return Quantity.parse(text)
    except QuantityError as err:
        message = str(err)
        upstream = next((m for m in _PARSE_ERRORS if m in message), message)
        raise CelRuntimeError(upstream) from None


@REGISTRY.function("isQuantity", str)
def is_quantity(text: str) -> bool:
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


@REGISTRY.function("sign", Quantity)
def sign(q: Quantity) -> int:
    return q.sign()


@REGISTRY.member("isInteger", Quantity)
def is_integer(q: Quantity) -> bool:
    # Upstream: `AsInt64` succeeds, i.e. integral and within int64.
    try:
        q.as_int()
    except QuantityError:
        return False
    return True


@REGISTRY.member("asInteger", Quantity)
def as_integer(q: Quantity) -> int:
    try:
        return q.as_int()
    except QuantityError:
        raise CelRuntimeError("cannot convert value to integer") from None


@REGISTRY.member("asApproximateFloat", Quantity)
def as_approximate_float(q: Quantity) -> float:
    return q.as_float()


def _int_operand(n: int) -> Quantity:
    # Upstream converts the int with resource.NewQuantity(i, DecimalExponent).
    return Quantity.from_int(n, format="DecimalExponent")


@REGISTRY.member("add", Quantity, Quantity)
def add(q: Quantity, other: Quantity) -> Quantity:
    return _checked(lambda: q + other)


@REGISTRY.member("add", Quantity, int)
def add_int(q: Quantity, other: int) -> Quantity:
    return _checked(lambda: q + _int_operand(other))


@REGISTRY.member("sub", Quantity, Quantity)
def sub(q: Quantity, other: Quantity) -> Quantity:
    return _checked(lambda: q - other)


@REGISTRY.member("sub", Quantity, int)
def sub_int(q: Quantity, other: int) -> Quantity:
    return _checked(lambda: q - _int_operand(other))


def _checked(op: Callable[[], Quantity]) -> Quantity:
    try:
        return op()
    except QuantityError as err:
        raise CelRuntimeError(str(err)) from None


@REGISTRY.member("isGreaterThan", Quantity, Quantity)
def is_greater_than(q: Quantity, other: Quantity) -> bool:
    return q > other


@REGISTRY.member("isLessThan", Quantity, Quantity)
def is_less_than(q: Quantity, other: Quantity) -> bool:
    return q < other


@REGISTRY.member("compareTo", Quantity, Quantity)
def compare_to(q: Quantity, other: Quantity) -> int:
    return q.compare(other)  # one exact comparison (Quantity.Cmp), not `>` then `<`
