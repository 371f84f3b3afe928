"""The option checks several commands share: choices, strategy lists and `--var NAME=JSON`."""

from __future__ import annotations

import pytest

from dra.errors import InputError
from gpudra.options import (
    OptionError,
    activation_variable,
    allocator_mode,
    mig_mode,
    one_of,
    output_format,
    strategy_names,
)


def test_choices_return_the_value() -> None:
    assert output_format("json") == "json"
    assert mig_mode("dynamic") == "dynamic"
    assert allocator_mode("scored") == "scored"


@pytest.mark.parametrize(
    ("check", "value", "message", "expected"),
    [
        (output_format, "xml", "-o must be yaml or json (got 'xml')", "yaml or json"),
        (mig_mode, "x", "--mig-mode must be dynamic, static or none (got 'x')", "dynamic, static or none"),
        (allocator_mode, "fast", "--mode must be upstream or scored (got 'fast')", "upstream or scored"),
    ],
)
def test_a_value_outside_the_choices_names_the_option_and_what_came(
    check: object, value: str, message: str, expected: str
) -> None:
    assert callable(check)
    with pytest.raises(OptionError) as raised:
        check(value)
    assert str(raised.value) == message and raised.value.expected == expected


def test_one_of_takes_the_option_name_and_a_single_choice() -> None:
    assert allocator_mode("upstream", "--allocator-mode") == "upstream"
    with pytest.raises(OptionError, match=r"^--allocator-mode must be upstream or scored \(got ''\)$"):
        allocator_mode("", "--allocator-mode")
    with pytest.raises(OptionError, match=r"^--only must be a \(got 'b'\)$"):
        one_of("b", ("a",), "--only")


def test_strategy_names() -> None:
    known = ("fgd", "gpudra", "random")
    assert strategy_names(None, known, ("gpudra",)) == ("gpudra",)
    assert strategy_names(" fgd, ,random ", known, ("gpudra",)) == ("fgd", "random")
    with pytest.raises(OptionError) as raised:
        strategy_names("fgd,nope,bad", known, ())
    assert str(raised.value) == "unknown strategies ['nope', 'bad']; known: fgd, gpudra, random"


def test_activation_variable() -> None:
    name, value = activation_variable('object={"spec": {"replicas": 3}}')
    assert name == "object" and value["spec"]["replicas"] == 3
    with pytest.raises(InputError, match="--var expects NAME=JSON, got 'nope'"):
        activation_variable("nope")
    with pytest.raises(InputError, match="got .1x=1.$"):
        activation_variable("1x=1")
    with pytest.raises(InputError, match=r"--var x: invalid JSON: .* at column 2"):
        activation_variable("x={bad")
