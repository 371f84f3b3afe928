"""The fast paths for device counts (`pod_shape._plain_count`, `facts._count`) give what parsing the quantity gives."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.errors import InputError
from dra.quantity import Quantity
from policyengine.facts import _count, _whole
from policyengine.pod_shape import _plain_count

_SPELLINGS = (
    st.integers(min_value=-5, max_value=10**19)
    | st.integers(min_value=0, max_value=10**19).map(str)
    | st.from_regex(r"[0-9]{1,20}", fullmatch=True)
    | st.sampled_from(["", "1.0", "1000m", "0x1", " 1", "1 ", "+1", "-1", "1e3", "\u0661", "2Ki", "00"])
)


@given(_SPELLINGS)
def test_a_plain_count_is_the_quantity_value(item: int | str) -> None:
    plain = _plain_count(item)
    if plain is None:
        return
    value = Quantity.coerce(item).value if isinstance(item, int) else Quantity.parse(item).value
    assert value == Fraction(plain) and plain >= 0


@given(_SPELLINGS)
def test_count_with_and_without_the_fast_path(item: int | str) -> None:
    def slow() -> int | type[Exception]:
        try:
            number = _whole(item, "f", "devices")
        except InputError:
            return InputError
        if number > 16:
            return InputError
        return number

    expected = slow()
    if expected is InputError:
        with pytest.raises(InputError):
            _count(item, "f", 16)
    else:
        assert _count(item, "f", 16) == expected
